# SPDX-License-Identifier: MIT
"""How the bottleneck shapes, as tc batch lines for the router of the lab's dumbbell
(lab/topology.py builds it): the qdisc under test at the root, or as the leaf of an HTB
class at the link's rate; on the router's egress towards the client, or on an IFB fed from
its WAN side's ingress; the upload's shaper; and the bandwidth traces a link follows.

These lines are text, the same wherever they are written: the lab's guest installs them,
each run's record stores them (runs.tc_commands) and the keys name a cell's conditions by
them (keys.py), which is why they live in the experiment layer and not in the guest's.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from confucius.units import UnitError, parse_rate

# Where the bottleneck's shaper sits: "egress", the router's egress towards the client, or
# "ingress", as a home router shapes its download: what arrives on the router's interface
# towards the server (its WAN side) is redirected to an IFB whose root is the shaper.
SHAPINGS = ("egress", "ingress")
# The router's devices: towards the client (the bottleneck under "egress"), towards the
# server (its WAN side), and the IFB of "ingress".
CLIENT_SIDE_DEVICE, WAN_DEVICE, IFB_DEVICE = "rtr-cli", "rtr-srv", "rtr-ifb"
# The other direction, client to server, shaped on the router's egress towards the server
# when a scenario asks (`[link] upload_rate`; Flent's tests load both directions).
UPLOAD = "upload"
# The qdisc under test's handle: the root when it shapes, else HTB's leaf.
ROOT_HANDLE, LEAF_HANDLE = "1:", "10:"
# HTB cannot run at 0; trace outages (0 Mbit/s) become this rate.
MIN_RATE_BPS = 8000.0
# HTB's bucket, in seconds of traffic at the rate, by lab engine ($LAB_ENGINE, set by the
# engine that runs the guest). Under qemu's emulation the shaper's timer fires late by
# milliseconds, and 20 ms of tokens cover that (see htb_class). In UML's virtual time the
# timer fires on time, and a 20 ms bucket only lets bursts out: on-off traffic left a
# 100 Mbit/s HTB at the offered 150 Mbit/s over 5 ms windows, 83 % of the gaps under
# 50 us (confucius.lab.guest.fidelity). There the bucket is the floor, two full packets.
HTB_BURST_S = {"qemu": 0.02, "uml": 0.0}


class TopologyError(ValueError):
    """A topology (a bottleneck, a trace) that cannot be built as asked, with the reason."""


def rate_bps(text, what: str) -> float:
    try:
        bps = parse_rate(text)
    except UnitError as err:
        raise TopologyError(f"{what}: {err}") from None
    if bps <= 0:
        raise TopologyError(f"{what} must be positive, got {text!r}")
    return bps


def htb_burst_s(engine: str | None = None) -> float:
    """HTB's bucket under `engine` (by default the one running this guest, $LAB_ENGINE)."""
    return HTB_BURST_S[engine or os.environ.get("LAB_ENGINE", "qemu")]


def htb_class(rate_bps: float, burst_s: float | None) -> str:
    """HTB's class at `rate_bps`, its bucket `burst_s` of traffic; None: tc's default
    bucket (how the keys name the setup, see keys.tc_commands)."""
    if burst_s is None:
        return f"htb rate {rate_bps:.0f}bit"
    # Bursts of HTB_BURST_S of traffic: under emulation the shaper's timer fires late by
    # milliseconds, and with tc's default burst (one tick, 4 ms) the tokens lost meanwhile
    # cut a Cubic flow to 60 % of the rate (measured: 12.6 of 20 Mbit/s; 18 with 12 ms).
    # One class only, so quantum shares nothing; set to stop HTB's warning that the
    # default (rate / r2q) is too big.
    burst = max(rate_bps / 8 * burst_s, 2 * 1514)
    return f"htb rate {rate_bps:.0f}bit burst {burst:.0f}b cburst {burst:.0f}b quantum 1514"


def htb_lines(dev: str, rate_bps: float, burst_s: float | None) -> list[str]:
    return [f"qdisc add dev {dev} root handle 1: htb default 1",
            f"class add dev {dev} parent 1: classid 1:1 {htb_class(rate_bps, burst_s)}"]


def shaping_device(shaping: str = "egress") -> str:
    """The router's device whose root qdisc is the bottleneck under `shaping` (SHAPINGS), or
    with UPLOAD the one that shapes the client's upload (the router's egress towards the server)."""
    devices = {"egress": CLIENT_SIDE_DEVICE, "ingress": IFB_DEVICE, UPLOAD: WAN_DEVICE}
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
    return [*redirect, *htb_lines(dev, rate_bps(rate, "rate"), burst_s),
            f"qdisc add dev {dev} parent 1:1 handle {LEAF_HANDLE} {qdisc}"]


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


@lru_cache(maxsize=256)
def trace_points(path: Path) -> tuple[tuple[float, float], ...]:
    """read_trace's points of a file read once (a sweep draws from a set's files for every
    load; traces are data that stay as they are while a process runs), their times to the
    microsecond, so that an offset drawn and recorded is one of them exactly."""
    return tuple((round(t, 6), bps) for t, bps in read_trace(path))


@dataclass(frozen=True)
class TraceSet:
    """A set of bandwidth traces (a scenario's `[link] traces`), each load drawing one of
    them and an offset into it (keys.load_trace). Its traces are named by their paths
    relative to `root`, the directory they share, so that the names are the data set's own
    (`trace3.log`, or `4g/trace3.log` in a set of several directories) wherever it lies."""
    root: Path
    files: tuple[Path, ...]          # sorted, each once

    @classmethod
    def find(cls, base: Path, patterns: list[str]) -> TraceSet:
        """The traces `patterns` name (a directory: every file in it; else a glob), relative
        to `base`; TopologyError when one names none, or a file is not a trace."""
        files = set()
        for pattern in patterns:
            found = _trace_files(base, pattern)
            if not found:
                raise TopologyError(f"{pattern!r} names no file (relative to {base})")
            files.update(found)
        for path in files:
            trace_points(path)
        ordered = tuple(sorted(files))
        return cls(Path(os.path.commonpath([p.parent for p in ordered])), ordered)

    def name(self, path: Path) -> str:
        return path.relative_to(self.root).as_posix()


def _trace_files(base: Path, pattern: str) -> list[Path]:
    where = (base / pattern).resolve()
    if where.is_dir():
        return [p for p in where.iterdir() if p.is_file() and not p.name.startswith(".")]
    anchor = Path(pattern).anchor
    root = Path(anchor) if anchor else base
    return [p.resolve() for p in root.glob(pattern.removeprefix(anchor)) if p.is_file()]
