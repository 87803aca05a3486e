# SPDX-License-Identifier: MIT
"""The lab's dumbbell, built inside the VM: server — router — client network namespaces.

    srv [srv-rtr] ──veth── [rtr-srv] rtr [rtr-cli] ──veth── [cli-rtr] cli
         netem RTT/2                        qdisc under test        netem RTT/2
         (server to client)                 = the bottleneck        (client to server)

Address plan (RFC 2544's benchmarking range, which no real network routes):

    198.18.0.0/16  server side: rtr 198.18.0.1, srv 198.18.0.2; DOMAIN_NETWORK
                   (198.18.128.0/17) holds the extra addresses, one per Web domain
    198.19.0.0/16  client side: rtr 198.19.0.1, cli 198.19.0.2

Propagation delay is netem on the server's and the client's egress, half the RTT each, so
that the router's egress towards the client (the bottleneck) carries the qdisc under test
and nothing else. The qdisc is given as a tc spec (`fq_codel`, `cake bandwidth 20mbit`,
`confucius bandwidth 20mbit`); with a `rate` it runs as the leaf of an HTB class at that
rate (for qdiscs that do not shape by themselves), without one it is the root and must
shape by itself. `bottleneck_commands` writes those tc lines, for `Topology` and for the
lab's runs; a run's guest builds the topology with `qdisc=None` (a bare bottleneck) and
installs the run's recorded lines (runner.bottleneck_commands) with `install_bottleneck`.
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

from confucius.experiment.shaping import (CLIENT_SIDE_DEVICE, IFB_DEVICE, MIN_RATE_BPS, TopologyError,
                                          bottleneck_commands, htb_burst_s, htb_class, htb_lines, rate_bps,
                                          read_trace, shaping_device)
from confucius.units import UnitError, parse_time

SERVER, ROUTER, CLIENT = "srv", "rtr", "cli"
SERVER_NETWORK = ipaddress.ip_network("198.18.0.0/16")
CLIENT_NETWORK = ipaddress.ip_network("198.19.0.0/16")
DOMAIN_NETWORK = ipaddress.ip_network("198.18.128.0/17")
ROUTER_SERVER_SIDE, SERVER_ADDRESS = "198.18.0.1", "198.18.0.2"
ROUTER_CLIENT_SIDE, CLIENT_ADDRESS = "198.19.0.1", "198.19.0.2"
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


def _interfaces() -> list[tuple[str, str]]:
    """(namespace, device); names are unique across namespaces: the links are made in the
    root namespace, where ethtool reaches them, and moved afterwards."""
    return [(SERVER, "srv-rtr"), (ROUTER, "rtr-srv"), (ROUTER, "rtr-cli"), (CLIENT, "cli-rtr")]


def install_bottleneck(commands: Sequence[str]) -> list[str]:
    """Run `commands` (tc batch lines) in the router's namespace, as one batch; returns
    the lines run, for the run's record of what ran."""
    _run(_tc_batch(ROUTER, commands))
    return list(commands)


@dataclass
class Topology:
    """The dumbbell to build: qdisc under test (tc spec; None: a bare bottleneck, for
    `install_bottleneck`), bottleneck rate (an HTB class; None when the qdisc shapes by
    itself), round-trip propagation delay, client-to-server rate (None: unshaped), where the
    bottleneck shapes (SHAPINGS; "ingress" makes the router's IFB). Checked on creation;
    `up()` builds it."""
    qdisc: str | None = "fq_codel"
    rate: str | None = "20mbit"
    rtt: str = "40ms"
    reverse_rate: str | None = None
    shaping: str = "egress"

    def __post_init__(self):
        if self.qdisc is None and self.rate is not None:
            raise TopologyError("a bare bottleneck (no qdisc) takes no rate: the recorded commands shape")
        self._qdisc = None if self.qdisc is None else shlex.join(_qdisc_words(self.qdisc))
        self._rate = None if self.rate is None else rate_bps(self.rate, "rate")
        self._reverse = None if self.reverse_rate is None else rate_bps(self.reverse_rate, "reverse rate")
        shaping_device(self.shaping)
        try:
            self._one_way = parse_time(self.rtt) / 2
        except UnitError as err:
            raise TopologyError(f"rtt: {err}") from None

    def steps(self) -> list[Step]:
        """The programs that build the topology, in order: batches wherever possible, as
        each program start costs a tenth of a second or more under emulation."""
        return [*self._links(), *self._sysctls(), *self._addresses(), *self._steering(), *self._qdiscs()]

    def script(self) -> str:
        """The same as a shell script, for reading or running by hand."""
        return "set -e\n" + "\n".join(step.shell() for step in self.steps()) + "\n"

    def up(self) -> None:
        """Build the topology (removing any earlier one first)."""
        down()
        for step in self.steps():
            _run(step)

    def _links(self) -> list[Step]:
        made = [_ip_batch([*(f"netns add {ns}" for ns in (SERVER, ROUTER, CLIENT)),
                           "link add srv-rtr type veth peer name rtr-srv",
                           "link add cli-rtr type veth peer name rtr-cli"])]
        # Per-packet behaviour needs MTU-sized packets: with TSO/GSO a veth carries 64 KB
        # super-packets that a qdisc schedules as one, and GRO on the router would merge
        # packets back into them, distorting queueing, pacing and delays.
        made += [Step(("ethtool", "-K", dev, "tso", "off", "gso", "off", "gro", "off"))
                 for _, dev in _interfaces()]
        if self.shaping == "ingress":
            made.append(_ip_batch([f"link add {IFB_DEVICE} type ifb", f"link set {IFB_DEVICE} up"], ROUTER))
        return made

    def _sysctls(self) -> list[Step]:
        steps = []
        for ns in (SERVER, ROUTER, CLIENT):
            # No IPv6: its neighbour discovery would add stray packets to the bottleneck.
            settings = ["net.ipv6.conf.all.disable_ipv6=1", "net.ipv6.conf.default.disable_ipv6=1"]
            if ns == ROUTER:
                settings.append("net.ipv4.ip_forward=1")
            else:
                # Each flow starts afresh: no ssthresh or RTT remembered from an earlier run.
                settings.append("net.ipv4.tcp_no_metrics_save=1")
            steps.append(Step(("ip", "netns", "exec", ns, "sysctl", "-qw", *settings)))
        return steps

    def _addresses(self) -> list[Step]:
        steps = [_ip_batch([f"link set {dev} netns {ns}" for ns, dev in _interfaces()])]
        plan = {SERVER: [("srv-rtr", SERVER_ADDRESS, SERVER_NETWORK)],
                ROUTER: [("rtr-srv", ROUTER_SERVER_SIDE, SERVER_NETWORK),
                         ("rtr-cli", ROUTER_CLIENT_SIDE, CLIENT_NETWORK)],
                CLIENT: [("cli-rtr", CLIENT_ADDRESS, CLIENT_NETWORK)]}
        gateway = {SERVER: ROUTER_SERVER_SIDE, CLIENT: ROUTER_CLIENT_SIDE}
        for ns, links in plan.items():
            lines = ["link set lo up"]
            for dev, address, net in links:
                lines += [f"addr add {address}/{net.prefixlen} dev {dev}", f"link set {dev} up"]
            if ns in gateway:
                lines.append(f"route add default via {gateway[ns]}")
            steps.append(_ip_batch(lines, ns))
        return steps

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
        masks = {"srv-rtr": first, "rtr-srv": first, "rtr-cli": last, "cli-rtr": last}
        steps = []
        for ns in (SERVER, ROUTER, CLIENT):
            writes = [f"echo {masks[dev]:x} >/sys/class/net/{dev}/queues/rx-0/rps_cpus"
                      for owner, dev in _interfaces() if owner == ns]
            steps.append(Step(("ip", "netns", "exec", ns, "sh", "-ec", "; ".join(writes))))
        return steps

    def _qdiscs(self) -> list[Step]:
        netem = f"netem delay {self._one_way * 1e6:.0f}us limit {NETEM_LIMIT}"
        steps = [_tc_batch(SERVER, [f"qdisc add dev srv-rtr root {netem}"]),
                 _tc_batch(CLIENT, [f"qdisc add dev cli-rtr root {netem}"])]
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
    lines = [f"netns del {ns}" for ns in (SERVER, ROUTER, CLIENT)]
    lines += [f"link del {dev}" for _, dev in _interfaces()]
    subprocess.run(["ip", "-force", "-batch", "-"], input="\n".join(lines) + "\n",
                   capture_output=True, text=True)


def domain_addresses(count: int) -> list[str]:
    """The first `count` addresses of DOMAIN_NETWORK: one per Web domain."""
    hosts = DOMAIN_NETWORK.hosts()
    if not 0 <= count <= DOMAIN_NETWORK.num_addresses - 2:
        raise TopologyError(f"{DOMAIN_NETWORK} has room for {DOMAIN_NETWORK.num_addresses - 2} "
                            f"domain addresses, {count} asked")
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
