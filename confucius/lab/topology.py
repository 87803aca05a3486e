# SPDX-License-Identifier: MIT
"""The lab's dumbbell, built inside the VM: server — router — client network namespaces.

    srv [srv-rtr] ──veth── [rtr-srv] rtr [rtr-cli] ──veth── [cli-rtr] cli
         netem RTT/2                        qdisc under test        netem RTT/2
         (server to client)                 = the bottleneck        (client to server)

Address plan (RFC 2544's benchmarking range, which no real network routes):

    198.18.0.0/16  server side: rtr 198.18.0.1, srv 198.18.0.2; DOMAIN_NETWORK
                   (198.18.128.0/17) holds the extra addresses, one per Web domain
    198.19.0.0/16  client side: rtr 198.19.0.1, cli 198.19.0.2

rtt_fair's servers (`add_rtt_servers`, for a Flent scenario's `server_rtts`) are extra
addresses in 198.18.1.0/24, each reached at its own RTT: the server's egress netem becomes
a prio qdisc with one netem per server, chosen by source address.

Propagation delay is netem on the server's and the client's egress, half the RTT each, so
that the router's egress towards the client (the bottleneck) carries the qdisc under test
and nothing else. The qdisc is given as a tc spec (`fq_codel`, `cake bandwidth 20mbit`,
`confucius bandwidth 20mbit`); with a `rate` it runs as the leaf of an HTB class at that
rate (for qdiscs that do not shape by themselves), without one it is the root and must
shape by itself. `bottleneck_commands` writes those tc lines, for `Topology` and for the
lab's runs; a run's guest builds the topology with `qdisc=None` (a bare bottleneck) and
installs the run's recorded lines (runner.bottleneck_commands) with `install_bottleneck`.
With `clients=2` a second client host joins the same bottleneck: the router's client-side
veth leads to a LAN namespace (`lan`) that forwards to both clients, each on its own veth
with its own netem, so the qdisc under test on `rtr-cli` sees every download packet of both:

    ... rtr [rtr-cli] ──veth── [lan-rtr] lan [lan-cli]  ──veth── [cli-rtr]  cli   198.19.0.2
                                             [lan-cli2] ──veth── [cli2-rtr] cli2  198.19.0.3

The LAN hop routes rather than bridges (the UML kernels have no CONFIG_BRIDGE): it answers
ARP for the hosts on either side (proxy ARP, at once rather than after proxy_delay), so the
router and the clients keep the one /16 as with one client; it holds 198.19.0.254, the
source of its own ARP requests. With one client (the default) none of this exists and the
commands are those of the dumbbell above. With `nat=True` the router masquerades what leaves
towards the server (nftables on `rtr-srv`), so the server sees the router's address as behind
a home router; it needs conntrack, NAT and nftables in the kernel (the UML kernels build them
in, Debian's loads them as modules) and the `nft` program.
With `shaping="ingress"` the bottleneck moves to an IFB in the router (`rtr-ifb`), fed by
a redirect of everything arriving on `rtr-srv`, as home routers shape their download; the
router's egress towards the client is then left without a qdisc of the lab's.
The reverse direction is unshaped unless `reverse_rate` is given (then HTB with fq_codel on
the router's egress towards the server), or a run's recorded lines put a qdisc there
(`bottleneck_commands(..., shaping=UPLOAD)`: the scheduler under test on the upload too).

Everything runs `ip`/`tc`/`ethtool` as root, so this is for guest scripts
(`confucius lab topology up ...` or `Topology(...).up()` with the venv's python).
"""

from __future__ import annotations

import ipaddress
import os
import shlex
import subprocess
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterable, Sequence

from confucius.experiment.shaping import (CLIENT_SIDE_DEVICE, IFB_DEVICE, MIN_RATE_BPS, WAN_DEVICE, TopologyError,
                                          bottleneck_commands, htb_burst_s, htb_class, htb_lines, rate_bps,
                                          read_trace, shaping_device)
from confucius.experiment.records import MAX_CLIENTS
from confucius.experiment.schedulers import ROUTER_PROGRAMS
from confucius.units import UnitError, parse_time

SERVER, ROUTER, CLIENT = "srv", "rtr", "cli"
# The second client host and the LAN hop that joins both clients to the router.
CLIENT2, LAN = "cli2", "lan"
SERVER_NETWORK = ipaddress.ip_network("198.18.0.0/16")
CLIENT_NETWORK = ipaddress.ip_network("198.19.0.0/16")
DOMAIN_NETWORK = ipaddress.ip_network("198.18.128.0/17")
ROUTER_SERVER_SIDE, SERVER_ADDRESS = "198.18.0.1", "198.18.0.2"
# rtt_fair's servers: extra addresses of the server, each reached at its own RTT
# (add_rtt_servers), at most one per prio band but the first, which keeps the link's RTT.
RTT_SERVER_NETWORK = ipaddress.ip_network("198.18.1.0/24")
PRIO_MAX_BANDS = 16
MAX_RTT_SERVERS = PRIO_MAX_BANDS - 1
ROUTER_CLIENT_SIDE, CLIENT_ADDRESS = "198.19.0.1", "198.19.0.2"
CLIENT2_ADDRESS, LAN_ADDRESS = "198.19.0.3", "198.19.0.254"
# Client hosts by number (a scenario's `host`, from 1): namespace, address, device.
CLIENT_HOSTS = ((CLIENT, CLIENT_ADDRESS, "cli-rtr"), (CLIENT2, CLIENT2_ADDRESS, "cli2-rtr"))
assert len(CLIENT_HOSTS) == MAX_CLIENTS
# The NAT's nftables table in the router.
NAT_TABLE = "lab_nat"
BOTTLENECK = (ROUTER, CLIENT_SIDE_DEVICE)
# netem holds a whole RTT of traffic at line rate; its default of 1000 packets would drop.
NETEM_LIMIT = 1_000_000
# qdiscs that shape by themselves, and the option that sets their rate.
SELF_SHAPING_RATE_OPTION = {"cake": "bandwidth", "confucius": "bandwidth"}


def _qdisc_words(spec: str) -> list[str]:
    try:
        words = shlex.split(spec) if "\n" not in spec else []
    except ValueError:  # unbalanced quotes
        words = []
    if not words or not words[0].replace("_", "").isalnum():
        raise TopologyError(f"qdisc must be a tc qdisc spec such as 'fq_codel' or "
                            f"'cake bandwidth 20mbit', got {spec!r}")
    return words


@dataclass(frozen=True)
class Step:
    """One program run: its argv, and the lines it reads on stdin (a batch), if any."""
    argv: tuple[str, ...]
    lines: tuple[str, ...] = ()

    def shell(self) -> str:
        if not self.lines:
            return shlex.join(self.argv)
        return f"{shlex.join(self.argv)} <<'EOF'\n" + "\n".join(self.lines) + "\nEOF"


def _ip_batch(lines: Iterable[str], ns: str | None = None) -> Step:
    return Step(("ip", *(("-n", ns) if ns else ()), "-batch", "-"), tuple(lines))


def _tc_batch(ns: str, lines: Iterable[str]) -> Step:
    return Step(("tc", "-n", ns, "-batch", "-"), tuple(lines))


def client_host(host: int) -> tuple[str, str]:
    """Client host number `host` (from 1): its namespace and address."""
    if not 1 <= host <= MAX_CLIENTS:
        raise TopologyError(f"client host must be between 1 and {MAX_CLIENTS}, got {host}")
    namespace, address, _ = CLIENT_HOSTS[host - 1]
    return namespace, address


def _check_clients(clients: int) -> None:
    if isinstance(clients, bool) or not isinstance(clients, int) or not 1 <= clients <= MAX_CLIENTS:
        raise TopologyError(f"clients must be a whole number from 1 to {MAX_CLIENTS}, got {clients!r}")


def namespaces(clients: int = 1) -> tuple[str, ...]:
    _check_clients(clients)
    if clients == 1:
        return SERVER, ROUTER, CLIENT
    return SERVER, ROUTER, LAN, *(ns for ns, _, _ in CLIENT_HOSTS[:clients])


def _veth_pairs(clients: int) -> list[tuple[str, str]]:
    if clients == 1:
        return [("srv-rtr", "rtr-srv"), ("cli-rtr", "rtr-cli")]
    return [("srv-rtr", "rtr-srv"), ("lan-rtr", "rtr-cli"),
            *((dev, f"lan-{ns}") for ns, _, dev in CLIENT_HOSTS[:clients])]


def _interfaces(clients: int = 1) -> list[tuple[str, str]]:
    """(namespace, device); names are unique across namespaces: the links are made in the
    root namespace, where ethtool reaches them, and moved afterwards."""
    if clients == 1:
        return [(SERVER, "srv-rtr"), (ROUTER, "rtr-srv"), (ROUTER, "rtr-cli"), (CLIENT, "cli-rtr")]
    lan = [(LAN, "lan-rtr"), *((LAN, f"lan-{ns}") for ns, _, _ in CLIENT_HOSTS[:clients])]
    return [(SERVER, "srv-rtr"), (ROUTER, "rtr-srv"), (ROUTER, "rtr-cli"), *lan,
            *((ns, dev) for ns, _, dev in CLIENT_HOSTS[:clients])]


def nat_lines() -> list[str]:
    """nft commands that masquerade what the router sends towards the server."""
    return [f"add table ip {NAT_TABLE}",
            f"add chain ip {NAT_TABLE} postrouting {{ type nat hook postrouting priority srcnat ; }}",
            f'add rule ip {NAT_TABLE} postrouting oifname "{WAN_DEVICE}" masquerade']


def router_steps(commands: Sequence[str]) -> list[Step]:
    """The programs that run a bottleneck's `commands` in the router's namespace: the tc
    batch lines as one batch, then the nft lines as one script (their first word dropped)
    and the sysctl settings (schedulers.ROUTER_PROGRAMS), which need what the tc lines and
    the nft rules set up (nft's conntrack rules load conntrack, whose settings follow)."""
    lines: dict[str, list[str]] = {program: [] for program in ("tc", *ROUTER_PROGRAMS)}
    for line in commands:
        program, rest = line.split(" ", 1)
        if program in ROUTER_PROGRAMS:
            lines[program].append(rest)
        else:
            lines["tc"].append(line)
    steps = [_tc_batch(ROUTER, lines["tc"])] if lines["tc"] else []
    if lines["nft"]:
        steps.append(Step(("ip", "netns", "exec", ROUTER, "nft", "-f", "-"), tuple(lines["nft"])))
    if lines["sysctl"]:
        steps.append(Step(("ip", "netns", "exec", ROUTER, "sysctl", "-qw", *lines["sysctl"])))
    return steps


def install_bottleneck(commands: Sequence[str]) -> list[str]:
    """Run `commands` (router_steps) in the router's namespace; returns the lines run, for
    the run's record of what ran."""
    for step in router_steps(commands):
        _run(step)
    return list(commands)


@dataclass
class Topology:
    """The dumbbell to build: qdisc under test (tc spec; None: a bare bottleneck, for
    `install_bottleneck`), bottleneck rate (an HTB class; None when the qdisc shapes by
    itself), round-trip propagation delay, client-to-server rate (None: unshaped), where the
    bottleneck shapes (SHAPINGS; "ingress" makes the router's IFB), client hosts behind the
    bottleneck (1 or 2), and whether the router masquerades towards the server. Checked on
    creation; `up()` builds it."""
    qdisc: str | None = "fq_codel"
    rate: str | None = "20mbit"
    rtt: str = "40ms"
    reverse_rate: str | None = None
    shaping: str = "egress"
    clients: int = 1
    nat: bool = False

    def __post_init__(self):
        if self.qdisc is None and self.rate is not None:
            raise TopologyError("a bare bottleneck (no qdisc) takes no rate: the recorded commands shape")
        self._qdisc = None if self.qdisc is None else shlex.join(_qdisc_words(self.qdisc))
        self._rate = None if self.rate is None else rate_bps(self.rate, "rate")
        self._reverse = None if self.reverse_rate is None else rate_bps(self.reverse_rate, "reverse rate")
        shaping_device(self.shaping)
        _check_clients(self.clients)
        if not isinstance(self.nat, bool):
            raise TopologyError(f"nat must be true or false, got {self.nat!r}")
        try:
            self._one_way = parse_time(self.rtt) / 2
        except UnitError as err:
            raise TopologyError(f"rtt: {err}") from None

    def steps(self) -> list[Step]:
        """The programs that build the topology, in order: batches wherever possible, as
        each program start costs a tenth of a second or more under emulation."""
        return [*self._links(), *self._sysctls(), *self._addresses(), *self._lan_proxy(), *self._nat(),
                *self._steering(), *self._qdiscs()]

    def script(self) -> str:
        """The same as a shell script, for reading or running by hand."""
        return "set -e\n" + "\n".join(step.shell() for step in self.steps()) + "\n"

    def up(self) -> None:
        """Build the topology (removing any earlier one first)."""
        down()
        for step in self.steps():
            _run(step)

    def _links(self) -> list[Step]:
        made = [_ip_batch([*(f"netns add {ns}" for ns in namespaces(self.clients)),
                           *(f"link add {a} type veth peer name {b}" for a, b in _veth_pairs(self.clients))])]
        # Per-packet behaviour needs MTU-sized packets: with TSO/GSO a veth carries 64 KB
        # super-packets that a qdisc schedules as one, and GRO on the router would merge
        # packets back into them, distorting queueing, pacing and delays.
        made += [Step(("ethtool", "-K", dev, "tso", "off", "gso", "off", "gro", "off"))
                 for _, dev in _interfaces(self.clients)]
        if self.shaping == "ingress":
            made.append(_ip_batch([f"link add {IFB_DEVICE} type ifb", f"link set {IFB_DEVICE} up"], ROUTER))
        return made

    def _sysctls(self) -> list[Step]:
        steps = []
        for ns in namespaces(self.clients):
            # No IPv6: its neighbour discovery would add stray packets to the bottleneck.
            settings = ["net.ipv6.conf.all.disable_ipv6=1", "net.ipv6.conf.default.disable_ipv6=1"]
            if ns in (ROUTER, LAN):
                settings.append("net.ipv4.ip_forward=1")
            else:
                # Each flow starts afresh: no ssthresh or RTT remembered from an earlier run.
                settings.append("net.ipv4.tcp_no_metrics_save=1")
            steps.append(Step(("ip", "netns", "exec", ns, "sysctl", "-qw", *settings)))
        return steps

    def _addresses(self) -> list[Step]:
        steps = [_ip_batch([f"link set {dev} netns {ns}" for ns, dev in _interfaces(self.clients)])]
        plan = {SERVER: [("srv-rtr", SERVER_ADDRESS, SERVER_NETWORK)],
                ROUTER: [("rtr-srv", ROUTER_SERVER_SIDE, SERVER_NETWORK),
                         ("rtr-cli", ROUTER_CLIENT_SIDE, CLIENT_NETWORK)]}
        gateway = {SERVER: ROUTER_SERVER_SIDE}
        for ns, address, dev in CLIENT_HOSTS[:self.clients]:
            plan[ns] = [(dev, address, CLIENT_NETWORK)]
            gateway[ns] = ROUTER_CLIENT_SIDE
        if self.clients > 1:
            steps.append(self._lan_addresses())
        for ns, links in plan.items():
            lines = ["link set lo up"]
            for dev, address, net in links:
                lines += [f"addr add {address}/{net.prefixlen} dev {dev}", f"link set {dev} up"]
            if ns in gateway:
                lines.append(f"route add default via {gateway[ns]}")
            steps.append(_ip_batch(lines, ns))
        return steps

    def _lan_addresses(self) -> Step:
        """The LAN hop: its own address (/32, the source of its ARP requests) and a host
        route to each side; everything else goes to the router."""
        lines = ["link set lo up", f"addr add {LAN_ADDRESS}/32 dev lan-rtr"]
        lines += [f"link set {dev} up" for ns, dev in _interfaces(self.clients) if ns == LAN]
        lines.append(f"route add {ROUTER_CLIENT_SIDE}/32 dev lan-rtr")
        lines += [f"route add {address}/32 dev lan-{ns}" for ns, address, _ in CLIENT_HOSTS[:self.clients]]
        lines.append(f"route add default via {ROUTER_CLIENT_SIDE} dev lan-rtr")
        return _ip_batch(lines, LAN)

    def _lan_proxy(self) -> list[Step]:
        """Proxy ARP on the LAN hop's devices, answered at once: by default a proxied
        reply waits up to 0.8 s (proxy_delay), which would delay each host's first packets."""
        if self.clients == 1:
            return []
        devices = [dev for ns, dev in _interfaces(self.clients) if ns == LAN]
        settings = ["net.ipv4.conf.all.proxy_arp=1", *(f"net.ipv4.neigh.{dev}.proxy_delay=0" for dev in devices)]
        return [Step(("ip", "netns", "exec", LAN, "sysctl", "-qw", *settings))]

    def _nat(self) -> list[Step]:
        if not self.nat:
            return []
        return [Step(("ip", "netns", "exec", ROUTER, "nft", "-f", "-"), tuple(nat_lines()))]

    def _steering(self) -> list[Step]:
        """Each veth's receive processing on one fixed CPU (RPS with a one-CPU mask).

        A veth hands packets to the backlog of the CPU that sends them; with two CPUs the
        packets of one flow land in two backlogs now and then and leave them out of order
        (measured: 21 of 9400 datagrams of a 6 Mbit/s UDP flow beside a TCP flow, none with
        steering). Reordering reads as loss to GCC and TCP. The two directions of the
        heavy path get different CPUs: server -> router on the first, router -> client on
        the last. With one CPU there is one backlog and nothing to steer (UML's kernel is
        uniprocessor, and has no RPS)."""
        cpus = os.cpu_count() or 1
        if cpus == 1:
            return []
        first, last = 1, 1 << (cpus - 1)
        # Every device past the router's client side is on the router -> client path.
        masks = {dev: first if dev in ("srv-rtr", "rtr-srv") else last for _, dev in _interfaces(self.clients)}
        steps = []
        for ns in namespaces(self.clients):
            writes = [f"echo {masks[dev]:x} >/sys/class/net/{dev}/queues/rx-0/rps_cpus"
                      for owner, dev in _interfaces(self.clients) if owner == ns]
            steps.append(Step(("ip", "netns", "exec", ns, "sh", "-ec", "; ".join(writes))))
        return steps

    def _qdiscs(self) -> list[Step]:
        netem = _netem(self._one_way)
        steps = [_tc_batch(SERVER, [f"qdisc add dev srv-rtr root {netem}"])]
        steps += [_tc_batch(ns, [f"qdisc add dev {dev} root {netem}"]) for ns, _, dev in CLIENT_HOSTS[:self.clients]]
        router = [] if self._qdisc is None else bottleneck_commands(self._qdisc, self.rate, htb_burst_s(),
                                                                    self.shaping)
        if self._reverse is not None:
            router += [*htb_lines("rtr-srv", self._reverse, htb_burst_s()),
                       "qdisc add dev rtr-srv parent 1:1 handle 10: fq_codel"]
        if router:
            steps.append(_tc_batch(ROUTER, router))
        return steps


def _run(step: Step) -> None:
    done = subprocess.run(step.argv, input="".join(f"{line}\n" for line in step.lines),
                          capture_output=True, text=True)
    if done.returncode != 0:
        raise TopologyError(f"{step.shell()}\nfailed: {(done.stderr or done.stdout).strip()}")


def down() -> None:
    """Remove the namespaces (and with them the links and qdiscs), if they exist, and links
    a failed `up` may have left in the root namespace."""
    lines = [f"netns del {ns}" for ns in namespaces(MAX_CLIENTS)]
    lines += [f"link del {dev}" for _, dev in [*_interfaces(1), *_interfaces(MAX_CLIENTS)]]
    subprocess.run(["ip", "-force", "-batch", "-"], input="\n".join(lines) + "\n",
                   capture_output=True, text=True)


def domain_addresses(count: int) -> list[str]:
    """The first `count` addresses of DOMAIN_NETWORK: one per Web domain."""
    if not 0 <= count <= DOMAIN_NETWORK.num_addresses - 2:
        raise TopologyError(f"{DOMAIN_NETWORK} has room for {DOMAIN_NETWORK.num_addresses - 2} "
                            f"domain addresses, {count} asked")
    return _first_hosts(DOMAIN_NETWORK, count)


def _first_hosts(network: ipaddress.IPv4Network, count: int) -> list[str]:
    hosts = network.hosts()
    return [str(next(hosts)) for _ in range(count)]


def add_server_addresses(addresses: Iterable[str]) -> None:
    """Give the server namespace these extra addresses (from the server side's /16)."""
    lines = []
    for text in addresses:
        try:
            address = ipaddress.ip_address(text)
        except ValueError:
            raise TopologyError(f"not an IP address: {text!r}") from None
        if address not in SERVER_NETWORK or str(address) in (ROUTER_SERVER_SIDE, SERVER_ADDRESS):
            raise TopologyError(f"server addresses must be free addresses of {SERVER_NETWORK}, got {text}")
        lines.append(f"addr add {address}/{SERVER_NETWORK.prefixlen} dev srv-rtr")
    _run(_ip_batch(lines, SERVER))


def rtt_server_addresses(count: int) -> list[str]:
    """The first `count` addresses of RTT_SERVER_NETWORK: one per rtt_fair server."""
    if not 0 <= count <= MAX_RTT_SERVERS:
        raise TopologyError(f"at most {MAX_RTT_SERVERS} servers at their own RTTs, {count} asked")
    return _first_hosts(RTT_SERVER_NETWORK, count)


def _netem(delay_s: float) -> str:
    return f"netem delay {delay_s * 1e6:.0f}us limit {NETEM_LIMIT}"


def rtt_server_steps(link_rtt_s: float, server_rtts_s: Sequence[float]) -> list[Step]:
    """The commands that give the server one address per RTT in `server_rtts_s`, each reached
    at that RTT; none for none.

    The client's egress keeps its netem (half the link's RTT) for every destination, so the
    client's side and the router's are the same as in every other scenario; the server's
    egress takes the rest of each RTT. Its netem becomes a prio qdisc's bands: the first
    (ARP and the server's own address, the priomap's band) keeps half the link's RTT, each
    further band holds a netem of the rest of one server's RTT, chosen by the packet's
    source address (u32). The veth takes a packet as soon as its netem lets it go, so the
    bands' strict priority orders only packets released at the same instant."""
    if not server_rtts_s:
        return []
    one_way = link_rtt_s / 2
    if any(rtt < one_way for rtt in server_rtts_s):
        raise TopologyError(f"each server's RTT must be at least half the link's ({one_way * 1e3:g} ms), "
                            f"got {', '.join(f'{rtt * 1e3:g} ms' for rtt in server_rtts_s)}")
    addresses = rtt_server_addresses(len(server_rtts_s))
    dev = "srv-rtr"
    tc = [f"qdisc replace dev {dev} root handle 1: prio bands {len(addresses) + 1} priomap {' '.join(['0'] * 16)}",
          f"qdisc add dev {dev} parent 1:1 handle 10: {_netem(one_way)}"]
    for band, (address, rtt) in enumerate(zip(addresses, server_rtts_s), start=2):
        tc += [f"qdisc add dev {dev} parent 1:{band:x} handle {0x10 + band - 1:x}: {_netem(rtt - one_way)}",
               f"filter add dev {dev} parent 1: protocol ip prio 1 u32 match ip src {address}/32 flowid 1:{band:x}"]
    ip = [f"addr add {address}/{SERVER_NETWORK.prefixlen} dev {dev}" for address in addresses]
    return [_ip_batch(ip, SERVER), _tc_batch(SERVER, tc)]


def add_rtt_servers(link_rtt_s: float, server_rtts_s: Sequence[float]) -> list[str]:
    """Run `rtt_server_steps` on a topology that is up; returns the servers' addresses, in
    the order of their RTTs."""
    for step in rtt_server_steps(link_rtt_s, server_rtts_s):
        _run(step)
    return rtt_server_addresses(len(server_rtts_s))


def _tc_show(what: str, dev: str) -> list[list[str]]:
    """`tc <what> show` on the router's `dev`, one list of words per line."""
    done = subprocess.run(["tc", "-n", ROUTER, what, "show", "dev", dev], capture_output=True, text=True)
    if done.returncode != 0:
        raise TopologyError(f"no bottleneck to change (is the topology up?): {done.stderr.strip()}")
    return [line.split() for line in done.stdout.splitlines()]


def _rate_line(dev: str) -> Callable[[float], str]:
    """For the shaper that is installed on `dev`, a function from a rate (bit/s) to the tc
    batch line that sets it: the HTB class if there is one, else the root qdisc's rate option."""
    if any(words[:3] == ["class", "htb", "1:1"] for words in _tc_show("class", dev)):
        burst_s = htb_burst_s()
        return lambda bps: f"class change dev {dev} parent 1: classid 1:1 {htb_class(max(bps, MIN_RATE_BPS), burst_s)}"
    kind = next((words[1] for words in _tc_show("qdisc", dev) if "root" in words), "")
    if kind not in SELF_SHAPING_RATE_OPTION:
        raise TopologyError(f"cannot change the rate of a {kind or 'missing'} root qdisc: build the "
                            f"topology with a rate (HTB) or use one of {', '.join(SELF_SHAPING_RATE_OPTION)}")
    option = SELF_SHAPING_RATE_OPTION[kind]
    return lambda bps: f"qdisc change dev {dev} root {kind} {option} {max(bps, MIN_RATE_BPS):.0f}bit"


def set_rate(rate, shaping: str = "egress") -> None:
    """Change the bottleneck's rate now (e.g. `set_rate("10mbit")`), where `shaping` puts it."""
    _run(_tc_batch(ROUTER, [_rate_line(shaping_device(shaping))(rate_bps(rate, "rate"))]))


def _stopped_while_waiting(stop: threading.Event | None, seconds: float) -> bool:
    if stop is None:
        time.sleep(max(0.0, seconds))
        return False
    return stop.wait(max(0.0, seconds))


def follow_trace(path: Path, *, duration: float | None = None, scale: float = 1.0,
                 stop: threading.Event | None = None, shaping: str = "egress") -> int:
    """Set the bottleneck's rate (where `shaping` puts it) from a trace as time goes by, for
    `duration` seconds (the whole trace by default) or until `stop` is set; rates are
    multiplied by `scale`. Returns the changes made.
    """
    points = read_trace(path)
    line_for = _rate_line(shaping_device(shaping))
    # One tc reading commands as they come: a change costs a netlink message, not a program
    # start (a tenth of a second or more under emulation).
    tc = subprocess.Popen(["tc", "-n", ROUTER, "-batch", "-"], stdin=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True)
    start = time.monotonic()
    changes = 0
    try:
        for t, bps in points:
            if duration is not None and t > duration:
                break
            if _stopped_while_waiting(stop, start + t - time.monotonic()):
                break
            tc.stdin.write(line_for(bps * scale) + "\n")
            tc.stdin.flush()
            changes += 1
    except BrokenPipeError:
        pass  # tc stopped at an error: reported below
    finally:
        _, errors = tc.communicate()
    if tc.returncode != 0:
        raise TopologyError(f"changing the rate failed: {errors.strip()}")
    return changes
