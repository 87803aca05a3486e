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

from confucius.units import UnitError, parse_rate, parse_time

SERVER, ROUTER, CLIENT = "srv", "rtr", "cli"
SERVER_NETWORK = ipaddress.ip_network("198.18.0.0/16")
CLIENT_NETWORK = ipaddress.ip_network("198.19.0.0/16")
DOMAIN_NETWORK = ipaddress.ip_network("198.18.128.0/17")
ROUTER_SERVER_SIDE, SERVER_ADDRESS = "198.18.0.1", "198.18.0.2"
ROUTER_CLIENT_SIDE, CLIENT_ADDRESS = "198.19.0.1", "198.19.0.2"
BOTTLENECK = (ROUTER, "rtr-cli")
# Where the bottleneck's shaper sits: "egress", the router's egress towards the client, or
# "ingress", as a home router shapes its download: what arrives on the router's interface
# towards the server (its WAN side) is redirected to an IFB whose root is the shaper.
SHAPINGS = ("egress", "ingress")
WAN_DEVICE, IFB_DEVICE = "rtr-srv", "rtr-ifb"
# The other direction, client to server, shaped on the router's egress towards the server
# when a scenario asks (`[link] upload_rate`; Flent's tests load both directions).
UPLOAD = "upload"
# The qdisc under test's handle: the root when it shapes, else HTB's leaf.
ROOT_HANDLE, LEAF_HANDLE = "1:", "10:"
# HTB cannot run at 0; trace outages (0 Mbit/s) become this rate.
MIN_RATE_BPS = 8000.0
# HTB's bucket, in seconds of traffic at the rate, by lab engine ($LAB_ENGINE, set by the
# engine that runs the guest). Under qemu's emulation the shaper's timer fires late by
# milliseconds, and 20 ms of tokens cover that (see _htb_class). In UML's virtual time the
# timer fires on time, and a 20 ms bucket only lets bursts out: on-off traffic left a
# 100 Mbit/s HTB at the offered 150 Mbit/s over 5 ms windows, 83 % of the gaps under
# 50 us (confucius.lab.fidelity). There the bucket is the floor, two full packets.
HTB_BURST_S = {"qemu": 0.02, "uml": 0.0}
# netem holds a whole RTT of traffic at line rate; its default of 1000 packets would drop.
NETEM_LIMIT = 1_000_000
# qdiscs that shape by themselves, and the option that sets their rate.
SELF_SHAPING_RATE_OPTION = {"cake": "bandwidth", "confucius": "bandwidth"}


class TopologyError(ValueError):
    """A topology that cannot be built as asked, with the reason."""


def _rate(text, what: str) -> float:
    try:
        bps = parse_rate(text)
    except UnitError as err:
        raise TopologyError(f"{what}: {err}") from None
    if bps <= 0:
        raise TopologyError(f"{what} must be positive, got {text!r}")
    return bps


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


def htb_burst_s(engine: str | None = None) -> float:
    """HTB's bucket under `engine` (by default the one running this guest, $LAB_ENGINE)."""
    return HTB_BURST_S[engine or os.environ.get("LAB_ENGINE", "qemu")]


def _htb_class(rate_bps: float, burst_s: float | None) -> str:
    """HTB's class at `rate_bps`, its bucket `burst_s` of traffic; None: tc's default
    bucket (how the lab's cell keys name the setup, see runner.cell_key)."""
    if burst_s is None:
        return f"htb rate {rate_bps:.0f}bit"
    # Bursts of HTB_BURST_S of traffic: under emulation the shaper's timer fires late by
    # milliseconds, and with tc's default burst (one tick, 4 ms) the tokens lost meanwhile
    # cut a Cubic flow to 60 % of the rate (measured: 12.6 of 20 Mbit/s; 18 with 12 ms).
    # One class only, so quantum shares nothing; set to stop HTB's warning that the
    # default (rate / r2q) is too big.
    burst = max(rate_bps / 8 * burst_s, 2 * 1514)
    return f"htb rate {rate_bps:.0f}bit burst {burst:.0f}b cburst {burst:.0f}b quantum 1514"


def _htb(dev: str, rate_bps: float, burst_s: float | None) -> list[str]:
    return [f"qdisc add dev {dev} root handle 1: htb default 1",
            f"class add dev {dev} parent 1: classid 1:1 {_htb_class(rate_bps, burst_s)}"]


def shaping_device(shaping: str = "egress") -> str:
    """The router's device whose root qdisc is the bottleneck under `shaping` (SHAPINGS), or
    with UPLOAD the one that shapes the client's upload (the router's egress towards the server)."""
    devices = {"egress": BOTTLENECK[1], "ingress": IFB_DEVICE, UPLOAD: WAN_DEVICE}
    if shaping not in devices:
        raise TopologyError(f"shaping must be one of {', '.join(SHAPINGS)}, got {shaping!r}")
    return devices[shaping]


def _redirect_to_ifb() -> list[str]:
    """Everything arriving on the WAN side to the IFB; it comes back out of the IFB into the
    WAN side's receive path, and is forwarded to the client through an unshaped egress."""
    return [f"qdisc add dev {WAN_DEVICE} handle ffff: ingress",
            f"filter add dev {WAN_DEVICE} parent ffff: protocol all prio 1 matchall "
            f"action mirred egress redirect dev {IFB_DEVICE}"]


def bottleneck_commands(qdisc: str, rate: str | None, burst_s: float | None,
                        shaping: str = "egress") -> list[str]:
    """The tc batch lines (in the router's namespace) that put the qdisc `qdisc` (a tc spec)
    at the bottleneck: the root (handle 1:) without a `rate`, else the leaf (handle 10:) of
    an HTB class at `rate` with a bucket of `burst_s` (`htb_burst_s`; None: tc's default).
    The bottleneck is the router's egress towards the client, or with `shaping="ingress"`
    the IFB fed from the WAN side's ingress (the IFB itself is made by `Topology(shaping="ingress")`)."""
    dev = shaping_device(shaping)
    redirect = _redirect_to_ifb() if shaping == "ingress" else []
    if rate is None:
        return [*redirect, f"qdisc add dev {dev} root handle {ROOT_HANDLE} {qdisc}"]
    return [*redirect, *_htb(dev, _rate(rate, "rate"), burst_s),
            f"qdisc add dev {dev} parent 1:1 handle {LEAF_HANDLE} {qdisc}"]


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
        self._rate = None if self.rate is None else _rate(self.rate, "rate")
        self._reverse = None if self.reverse_rate is None else _rate(self.reverse_rate, "reverse rate")
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
            router += [*_htb("rtr-srv", self._reverse, htb_burst_s()),
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
        return lambda bps: f"class change dev {dev} parent 1: classid 1:1 {_htb_class(max(bps, MIN_RATE_BPS), burst_s)}"
    kind = next((words[1] for words in _tc_show("qdisc", dev) if "root" in words), "")
    if kind not in SELF_SHAPING_RATE_OPTION:
        raise TopologyError(f"cannot change the rate of a {kind or 'missing'} root qdisc: build the "
                            f"topology with a rate (HTB) or use one of {', '.join(SELF_SHAPING_RATE_OPTION)}")
    option = SELF_SHAPING_RATE_OPTION[kind]
    return lambda bps: f"qdisc change dev {dev} root {kind} {option} {max(bps, MIN_RATE_BPS):.0f}bit"


def set_rate(rate, shaping: str = "egress") -> None:
    """Change the bottleneck's rate now (e.g. `set_rate("10mbit")`), where `shaping` puts it."""
    _run(_tc_batch(ROUTER, [_rate_line(shaping_device(shaping))(_rate(rate, "rate"))]))


def read_trace(path: Path) -> list[tuple[float, float]]:
    """A bandwidth trace (`time_s Mbps` per line) as (seconds from its start, bit/s)."""
    points = []
    for number, line in enumerate(Path(path).read_text().splitlines(), 1):
        fields = line.split()
        if not fields or line.lstrip().startswith("#"):
            continue
        try:
            t, mbps = float(fields[0]), float(fields[1])
        except (ValueError, IndexError):
            raise TopologyError(f"{path}:{number}: expected 'time_s Mbps', got {line!r}") from None
        if mbps < 0 or (points and t < points[-1][0]):
            raise TopologyError(f"{path}:{number}: negative rate or time going back: {line!r}")
        points.append((t, mbps * 1e6))
    if not points:
        raise TopologyError(f"{path}: no 'time_s Mbps' lines")
    start = points[0][0]
    return [(t - start, bps) for t, bps in points]


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
