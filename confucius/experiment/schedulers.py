# SPDX-License-Identifier: MIT
"""The queue disciplines the lab compares, each as the tc commands that install it.

One table, `SCHEDULERS`, maps a name to what stands for it in Debian's kernel 6.1. Every
scheduler runs at the bottleneck (see shaping.py): the router's egress towards the client,
or with `shaping="ingress"` the IFB fed from the router's WAN-side ingress, the same way
there (HTB and its leaf, classes and filters all on the IFB):

- qdiscs that do not shape by themselves are the leaf (handle 10:) of an HTB class at the
  link rate;
- cake and confucius shape by themselves (their `bandwidth` option) and are the root
  (handle 1:), as they are deployed; `shaper="htb"` puts them under HTB like the others;
- the label-based schedulers of the seeds (strict priority, class-based 1:1 and 1:5) get
  two classes, class 1 for the real-time flow and class 2 for everything else, and a u32
  filter that sends packets to the RT flow's destination port (UDP or TCP) to class 1 —
  the "label" that a DiffServ-style deployment would get from the end host;
- `pias`, the seeds' shortest-job-first baseline as PIAS approximates it without knowing
  the jobs (a multi-level feedback queue), is a prio qdisc whose bands are the levels: the
  router's conntrack counts each flow's bytes (both directions; its accounting switched on)
  and an nftables rule marks each packet leaving through the bottleneck with the level its
  flow has reached (PIAS_THRESHOLDS), which fw filters map to the band. PIAS's hosts tag
  their own packets; at a home router conntrack is the counter it has. The marks are set
  after routing, so an IFB on the router's ingress never sees them: egress only.

The buffer (scenario `link.buffer`, in packets) becomes each qdisc's limit: `limit N` for
packet-limited qdiscs, `limit N*1514` bytes for RED, `memlimit N*1514` for CAKE (which
counts the socket buffers' truesize, larger than the packets), and each class's pfifo for
the label-based ones.

    setup = tc_setup("drr-1:5", rate_bps=20e6, buffer_packets=1000, rt_ports=[5000])
    setup.qdisc        # 'drr' (the spec for lab/topology.py's Topology)
    setup.rate         # '20000000bit' (HTB) or None (the qdisc is the root)
    setup.lines        # classes, leaves and filters: tc batch lines for the router
    setup.commands(shaping.htb_burst_s("uml"))   # all of it, as the router's tc batch
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass
from typing import Sequence

from .shaping import LEAF_HANDLE, ROOT_HANDLE, TopologyError, bottleneck_commands, shaping_device

MTU_BYTES = 1514
# PIAS's levels: a flow moves down one each time the bytes it has sent pass the next of these
# (four levels: the first 100 kB, to 1 MB, to 10 MB, beyond), a decade apart as PIAS's
# thresholds follow its flow sizes' spread; ns-3's PiasQueueDisc takes the same.
PIAS_THRESHOLDS = (100_000, 1_000_000, 10_000_000)
# The nftables table that marks packets with their flow's level, in the router.
PIAS_TABLE = "lab_pias"


class SchedulerError(ValueError):
    """An unknown scheduler or options that do not fit it."""


@dataclass(frozen=True)
class Scheduler:
    name: str
    kind: str                       # the tc qdisc kind
    summary: str                    # what it stands for, for tables and --help
    options: str = ""               # fixed options after the kind
    limit: str = "packets"          # how the buffer is given: packets, bytes, memlimit
    shapes_itself: bool = False     # has a `bandwidth` option (cake, confucius)
    rt_weight: int | None = None    # label-based: None no labels, 0 strict priority, else RT weight
    web_weight: int | None = None   # label-based weighted classes: the other class's weight
    levels: tuple[int, ...] = ()    # PIAS: the bytes sent that demote a flow, one band more


SCHEDULERS: dict[str, Scheduler] = {s.name: s for s in (
    Scheduler("pfifo", "pfifo", "FIFO, drop tail"),
    Scheduler("fq_codel", "fq_codel", "fair queueing + CoDel (the Linux default)"),
    # FQ without AQM: fq_codel's scheduler (1024 flow queues, DRR with a quantum of one MTU,
    # new-flow priority) with CoDel's target and interval at 100 s, so CoDel never drops
    # and packets are dropped only when the buffer is full (from the longest queue). Only
    # the AQM differs from fq_codel, which is the comparison paper 000 draws (FQ+CoDel vs
    # FQ+FIFO). Linux's `fq` is a pacing qdisc for hosts and `sfq` caps a flow at 127 packets.
    Scheduler("fq", "fq_codel", "fair queueing without AQM (fq_codel, CoDel off)",
              options="target 100s interval 100s"),
    Scheduler("codel", "codel", "CoDel AQM, one FIFO"),
    Scheduler("red", "red", "RED AQM (tc defaults: min limit/12, max limit/4, p 0.02)",
              options=f"avpkt {MTU_BYTES}", limit="bytes"),
    Scheduler("pie", "pie", "PIE AQM, one FIFO"),
    Scheduler("fq_pie", "fq_pie", "fair queueing + PIE"),
    Scheduler("hhf", "hhf", "heavy-hitter filter"),
    Scheduler("pias", "prio", "shortest job first without labels (PIAS's multi-level feedback queue, "
              "conntrack's bytes per flow)", levels=PIAS_THRESHOLDS),
    Scheduler("cake", "cake", "CAKE, default (triple-isolate) mode", limit="memlimit",
              shapes_itself=True),
    Scheduler("cake-flows", "cake", "CAKE, per-flow fairness (flows)", options="flows",
              limit="memlimit", shapes_itself=True),
    Scheduler("prio", "prio", "strict priority for the labelled RT flow", rt_weight=0),
    Scheduler("drr-1:1", "drr", "weighted classes RT:rest = 1:1 (DRR), RT labelled",
              rt_weight=1, web_weight=1),
    Scheduler("drr-1:5", "drr", "weighted classes RT:rest = 1:5 (DRR), RT labelled",
              rt_weight=1, web_weight=5),
    Scheduler("confucius", "confucius", "Confucius, mode flow (paper 002), adaptive pace (default)",
              options="mode flow", shapes_itself=True),
    Scheduler("confucius-fixed", "confucius",
              "Confucius, mode flow, the papers' fixed schedule and no delay bound",
              options="mode flow pace fixed maxdelay 0", shapes_itself=True),
    Scheduler("confucius-class", "confucius", "Confucius, mode class (paper 000)",
              options="mode class", shapes_itself=True),
)}


@dataclass(frozen=True)
class TcSetup:
    """What the lab's Topology needs (`qdisc`, `rate`) and the batch lines that follow it."""
    qdisc: str
    rate: str | None
    lines: tuple[str, ...] = ()
    shaping: str = "egress"
    netfilter: tuple[str, ...] = ()   # ROUTER_PROGRAMS lines after the tc lines (pias)

    def commands(self, htb_burst_s: float | None = None) -> list[str]:
        """The scheduler's installation at the bottleneck, whole, for the router: tc batch
        lines (shaping.bottleneck_commands, then the classes and filters), then any lines
        for the ROUTER_PROGRAMS; HTB's bucket `htb_burst_s` (shaping.htb_burst_s; None:
        tc's default)."""
        return bottleneck_commands(self.qdisc, self.rate, htb_burst_s, self.shaping) + list(self.lines) + \
            list(self.netfilter)

    def own_lines(self) -> list[str]:
        """The scheduler's own part of `commands`, for reading: its qdisc's line, its classes
        and filters and its router programs' lines, without the shaper and redirect before."""
        return self.commands()[-1 - len(self.lines) - len(self.netfilter):]


# A router line that starts with one of these words is for that program, not a tc batch line:
# nft's (its script's syntax after the word) and sysctl's (a setting).
ROUTER_PROGRAMS = ("nft", "sysctl")


def scheduler(name: str) -> Scheduler:
    try:
        return SCHEDULERS[name]
    except KeyError:
        raise SchedulerError(f"unknown scheduler {name!r}: expected one of "
                             f"{', '.join(SCHEDULERS)}") from None


def _check_options(name: str, options: str) -> list[str]:
    try:
        words = shlex.split(options)
    except ValueError as err:
        raise SchedulerError(f"options for {name}: {err}") from None
    # '-' inside a word for cake's and confucius's isolate modes (dual-dsthost), never first.
    if any(w.startswith("-") or not w.replace(".", "").replace(":", "").replace("_", "").replace("%", "")
           .replace("-", "").isalnum() for w in words):
        raise SchedulerError(f"options for {name} must be plain tc words (letters, digits, "
                             f"'.', ':', '_', '%', '-' after the first), got {options!r}")
    return words


def _limit_words(s: Scheduler, buffer_packets: int) -> list[str]:
    if s.rt_weight is not None or s.levels:
        return []  # the classes' or bands' pfifos hold the buffer
    if s.limit == "bytes":
        return ["limit", str(buffer_packets * MTU_BYTES)]
    if s.limit == "memlimit":
        return ["memlimit", str(buffer_packets * MTU_BYTES)]
    return ["limit", str(buffer_packets)]


def _label_lines(s: Scheduler, dev: str, handle: str, buffer_packets: int, rt_ports: Sequence[int]) -> list[str]:
    """Classes 1 (RT) and 2 (the rest) under `handle` on `dev`, a pfifo in each, and the filters."""
    major = handle.rstrip(":")
    lines = []
    if s.rt_weight:  # weighted classes (DRR quantum in bytes, proportional to the weight)
        for minor, weight in ((1, s.rt_weight), (2, s.web_weight)):
            lines.append(f"class add dev {dev} parent {handle} classid {major}:{minor} "
                         f"drr quantum {weight * MTU_BYTES}")
    for minor in (1, 2):
        lines.append(f"qdisc add dev {dev} parent {major}:{minor} handle {major}{minor}: "
                     f"pfifo limit {buffer_packets}")
    for port in rt_ports:
        lines.append(f"filter add dev {dev} parent {handle} protocol ip prio 1 u32 "
                     f"match ip dport {port} 0xffff flowid {major}:1")
    # DRR drops what no filter classifies; prio would use its priomap, sent to band 2 too.
    lines.append(f"filter add dev {dev} parent {handle} protocol all prio 2 u32 "
                 f"match u32 0 0 flowid {major}:2")
    return lines


def _pias_lines(s: Scheduler, dev: str, handle: str, buffer_packets: int) -> list[str]:
    """A pfifo of the whole buffer in each band of the prio qdisc at `handle`, and the fw
    filters that send mark N to band N."""
    major = handle.rstrip(":")
    bands = range(1, len(s.levels) + 2)
    return ([f"qdisc add dev {dev} parent {major}:{band} handle {major}{band}: pfifo limit {buffer_packets}"
             for band in bands] +
            [f"filter add dev {dev} parent {handle} protocol all prio 1 handle {band} fw flowid {major}:{band}"
             for band in bands])


def _pias_netfilter(s: Scheduler, dev: str) -> list[str]:
    """conntrack's byte counts switched on, and the rule that marks each packet leaving
    through `dev` with its flow's level + 1 (the band), by the bytes both directions of the
    flow have carried so far."""
    edges = [0, *s.levels, 2**64]
    levels = ", ".join(f"{low}-{high - 1} : {band}" for band, (low, high) in enumerate(zip(edges, edges[1:]), 1))
    return [f"nft add table ip {PIAS_TABLE}",
            f"nft add chain ip {PIAS_TABLE} forward {{ type filter hook forward priority 0 ; }}",
            f'nft add rule ip {PIAS_TABLE} forward oifname "{dev}" meta mark set ct bytes map {{ {levels} }}',
            "sysctl net.netfilter.nf_conntrack_acct=1"]


def tc_setup(name: str, *, rate_bps: float, buffer_packets: int, rt_ports: Sequence[int] = (),
             extra_options: str = "", shaper: str = "own", base: str | None = None,
             shaping: str = "egress") -> TcSetup:
    """The tc setup of scheduler `base or name` for a link of `rate_bps` (the initial rate
    for a trace), `buffer_packets` of buffer and RT flows on `rt_ports`.

    `extra_options` are appended to the qdisc's options (a scenario's variant, e.g.
    'interval 500ms' for confucius); `shaper` is "own" (cake and confucius shape by
    themselves as the root) or "htb" (every qdisc is a leaf of HTB); `shaping` where the
    bottleneck is (shaping.SHAPINGS)."""
    s = scheduler(base or name)
    if shaper not in ("own", "htb"):
        raise SchedulerError(f"shaper must be 'own' or 'htb', got {shaper!r}")
    try:
        dev = shaping_device(shaping)
    except TopologyError as err:
        raise SchedulerError(str(err)) from None
    if buffer_packets < 1:
        raise SchedulerError(f"the buffer must be at least 1 packet, got {buffer_packets}")
    if s.rt_weight is not None and not rt_ports:
        raise SchedulerError(f"{name} labels the RT flow by its port: it needs an RT flow")
    extra = _check_options(name, extra_options)
    own_shaper = s.shapes_itself and shaper == "own"
    words = [s.kind, *shlex.split(s.options)]
    if own_shaper:
        words += ["bandwidth", f"{rate_bps:.0f}bit"]
    words += _limit_words(s, buffer_packets)
    if s.kind == "red":
        words += ["bandwidth", f"{rate_bps:.0f}bit"]  # RED's idle-time estimate needs the rate
    if s.levels:
        if shaping != "egress":
            raise SchedulerError(f"{name} marks the packets the router forwards to the client: only with the "
                                 f"download shaped at the router's egress, not {shaping!r}")
        bands = len(s.levels) + 1
        words += ["bands", str(bands), "priomap", *[str(bands - 1)] * 16]  # unmarked: the last band
    elif s.kind == "prio":
        words += ["bands", "2", "priomap", *["1"] * 16]  # unlabelled traffic to band 2
    words += extra
    handle = ROOT_HANDLE if own_shaper else LEAF_HANDLE
    if s.rt_weight is not None:
        lines = _label_lines(s, dev, handle, buffer_packets, rt_ports)
    else:
        lines = _pias_lines(s, dev, handle, buffer_packets) if s.levels else []
    return TcSetup(qdisc=shlex.join(words), rate=None if own_shaper else f"{rate_bps:.0f}bit",
                   lines=tuple(lines), shaping=shaping,
                   netfilter=tuple(_pias_netfilter(s, dev)) if s.levels else ())
