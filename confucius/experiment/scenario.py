# SPDX-License-Identifier: MIT
"""Scenario files (TOML): what one lab experiment runs, checked before anything starts.

    scenario = load("scenarios/demo.toml")          # ScenarioError names file, key and fix

The format is described in confucius/experiment/README.md ("Scenarios"); in short:

    name = "demo"                 # names the results; letters, digits, - and _
    engine = "qemu"               # or "uml": User-Mode Linux in virtual time
    kernel = "6.1"                # or "6.12": the guest kernel's generation
    seed = 0                      # seed of the generated page corpus
    repetitions = 1
    duration = "60s"              # measured time after warm-up, for scenarios without pages

    [link]                        # rate = "20mbit", or trace = "path" (time_s Mbps per line), or
                                  # traces = "dir/*.log" (or a list): each load draws one and an offset
    rate = "20mbit"
    rtt = "40ms"
    buffer = 1000                 # packets (or a size, "1.5mb", counted in 1514-byte packets)
    shaping = "egress"            # or "ingress": the router's WAN-side ingress, through an IFB
    clients = 1                   # client hosts behind the bottleneck (2: [[bulk]] host picks one)
    nat = false                   # the router masquerades towards the server (nftables)
    bottleneck = "router"         # or "before"/"after" the router (ns-3 only), router_rate = "100mbit"

    [schedulers]
    names = ["pfifo", "fq_codel", "cake", "confucius"]
    [schedulers.variants]         # more names: a scheduler of the table with more options
    confucius-500ms = { base = "confucius", options = "interval 500ms" }

    [rt]                          # one run per entry of controllers; a list inside = flows together
    controllers = ["gcc"]         # gcc, pion-gcc, copa, tcp-<cca>, fixed-<rate>
    fps = 60

    [web]                         # page loads (optional)
    pages = ["amazon"]            # and/or sample = 100, files = [...], [web.sweep]
    interval = "20s"

    [[bulk]]                      # iperf3 flows through the bottleneck (optional)
    cca = "cubic"
    host = 1                      # the client host that downloads it; the RT flow, the pages
                                  # and the probes are always on host 1

    [probes]                      # irtt latency probes (optional)
    interval = "20ms"

    [flent]                       # instead of [rt] and [web]: Flent's tests (guest/flent.py)
    tests = ["rrul", "rrul_be", "tcp_nup", "voip"]
    length = "30s"
    server_rtts = ["20ms", "40ms", "80ms", "160ms"]   # rtt_fair's servers, one RTT each
    [uml]                         # only the uml engine reads it
    seed = 1                      # the guest's random numbers in repetition 0 (r: seed + r);
                                  # unset: a fresh seed per run, recorded (vm/README.md)
    [sim]                         # only `confucius sim` reads it (sim/README.md); the lab ignores it
    seed = 1                      # ns-3's run number of repetition 0 (repetition r runs seed + r)
    warmup = "10s"                # the video alone before each page (the lab warms up until converged);
                                  # then [warmup] phase, drawn per page as the lab draws it
    samples = "flows"             # the scheduler's statistics and Confucius's flows (as the lab), or
                                  # "queues": the statistics only (no per-flow timeline; 0.2-0.3 MB less
                                  # per confucius page), for sweeps of many pages
    tcp = "linux"                 # every TCP connection as Linux's (200 ms least RTO, 40 ms delayed
                                  # ACKs, buffers that never limit), or "ns3": ns-3's own defaults
                                  # there (1 s, 200 ms, 128 KiB)

Unknown keys are errors (a typo must not silently fall back to a default).
"""

from __future__ import annotations

import hashlib
import math
import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Sequence

from confucius.units import UnitError, parse_rate, parse_size, parse_time

from confucius.web import protocols

from . import engines
from . import schedulers as sched
from .engines import DEFAULT_GENERATION, GENERATIONS, SEED_LIMIT, VM_ENGINES
from .records import FLENT_RTT_FAIR_SERVERS, FLENT_TESTS, MAX_CLIENTS, Bulk, Flent, Probes, Warmup  # the parts an engine's spec carries as they are
from .shaping import SHAPINGS, TopologyError, TraceSet, read_trace

if TYPE_CHECKING:
    from .grid import GridPoint

MTU_BYTES = sched.MTU_BYTES
# What the simulator samples of the scheduler ([sim] samples).
SIM_SAMPLES = ("flows", "queues")
# Whose TCP defaults the simulator's connections take ([sim] tcp).
SIM_TCP = ("linux", "ns3")
# Where the link may be narrowest (seed 000 Fig. 28's links B, A and C): [link] bottleneck.
BOTTLENECKS = ("router", "before", "after")
# How the RT flow's two ends get the guest's CPU (guest/rt.py says why "realtime" is the default).
RT_CPU_CHOICES = ("realtime", "shared")
# [uml] seed: repetition r's guest gets seed + r. The engine takes seeds below
# engines.SEED_LIMIT, and a scenario has up to MAX_REPETITIONS; the seeds runs draw come from
# the same range, so a scenario can name any run's seed and repeat it.
MAX_REPETITIONS = 1000
UML_SEED_MAX = SEED_LIMIT - MAX_REPETITIONS
NAMED_PAGE = re.compile(r"^(amazon|p\d{4}|flows-(\d+)-size-(\d+))$")


class ScenarioError(ValueError):
    """A scenario that cannot be run, with the file, the key and what is expected."""


# --------------------------------------------------------------------------- the model

@dataclass(frozen=True)
class Link:
    rate_bps: float | None          # constant rate; None when a trace sets it
    trace: Path | None
    trace_scale: float
    trace_offset_s: float
    rtt_s: float
    buffer_packets: int
    shaper: str                     # "own" or "htb", see schedulers.tc_setup
    shaping: str                    # where the bottleneck shapes: shaping.SHAPINGS
    upload_rate_bps: float | None = None   # the scheduler also shapes client -> server; None: unshaped
    traces: TraceSet | None = None  # a set each load draws its trace and offset from (keys.load_trace)
    clients: int = 1                # client hosts behind the bottleneck (lab/topology.py)
    nat: bool = False               # the router masquerades what it sends towards the server
    # Where the link is narrowest (seed 000 Fig. 28): the router's own link (the scheduler's),
    # or an unmanaged FIFO before or after it, the router's link then at router_rate_bps.
    bottleneck: str = "router"
    router_rate_bps: float | None = None


@dataclass(frozen=True)
class SchedulerChoice:
    name: str                       # as results name it
    base: str                       # the entry of schedulers.SCHEDULERS
    options: str = ""


@dataclass(frozen=True)
class RtFlow:
    mode: str                       # gcc, pion-gcc, copa, tcp, fixed
    cca: str | None = None          # tcp
    rate_bps: float | None = None   # fixed

    @property
    def parameter(self) -> str | None:
        """What the controller's name carries after its mode: tcp's CCA, fixed's rate."""
        if self.mode == "fixed":
            return f"{self.rate_bps / 1e6:g}mbit"
        return self.cca

    @property
    def label(self) -> str:
        """The controller as a scenario names it (gcc, tcp-bbr, fixed-8mbit), read by _rt_flow."""
        return f"{self.mode}-{self.parameter}" if self.parameter else self.mode


def controller_label(flows: Sequence[RtFlow]) -> str:
    """A set of RT flows as scenarios and results name it: their labels joined by "+" (gcc+copa)."""
    return "+".join(f.label for f in flows)


@dataclass(frozen=True)
class RtSettings:
    fps: int
    max_rate_bps: float
    start_rate_bps: float
    min_rate_bps: float
    port: int
    retransmit_s: float             # UDP modes: resend a lost packet of a frame younger than this
    cpu: str                        # "realtime": the RT ends run SCHED_FIFO in the guest; "shared"


@dataclass(frozen=True)
class PageRef:
    """A page: a named page of the corpus (amazon, pNNNN, flows-N-size-B) or a file."""
    name: str | None = None
    file: Path | None = None

    @property
    def key(self) -> str:
        return self.name if self.name is not None else str(self.file)


@dataclass(frozen=True)
class Web:
    pages: tuple[PageRef, ...]
    mode: str                       # episodes (fresh RT flow per load) or continuous (guest/schedule.py)
    corpus: Path | None             # a corpus directory; None: generated from the seed
    interval_s: float               # at least this long from one load's start to the next
    settle_s: float                 # at most this long waiting for the RT flow to converge again
    pages_per_run: int
    cca: str
    max_per_domain: int
    timeout_s: float
    http: str = "h1"                # each domain's HTTP version (web/protocols.py)


@dataclass(frozen=True)
class UmlSettings:
    """What only the uml engine reads ([uml]): the seed of the guest's random numbers in
    repetition 0 (repetition r: seed + r), so that a run repeats exactly; None: a fresh
    seed for every run."""
    seed: int | None = None


@dataclass(frozen=True)
class SimSettings:
    """What only the simulator reads ([sim]): the lab's VMs have no run number to seed and
    warm the RT flow up until it converges."""
    seed: int
    warmup_s: float
    samples: str = "flows"
    tcp: str = "linux"


@dataclass(frozen=True)
class Scenario:
    name: str
    description: str
    path: Path
    text: str
    seed: int
    repetitions: int
    duration_s: float | None
    link: Link
    schedulers: tuple[SchedulerChoice, ...]
    rt_sets: tuple[tuple[RtFlow, ...], ...]
    rt: RtSettings
    warmup: Warmup
    web: Web | None
    bulk: tuple[Bulk, ...]
    probes: Probes | None
    stats_interval_s: float
    engine: str
    sim: SimSettings
    flent: Flent | None = None      # Flent's tests instead of an RT flow and pages
    uml: UmlSettings = UmlSettings()
    kernel: str = DEFAULT_GENERATION  # the guest kernel's generation (engines.GENERATIONS)
    digest: str = field(default="", compare=False)

    def scheduler(self, name: str) -> SchedulerChoice:
        for choice in self.schedulers:
            if choice.name == name:
                return choice
        raise ScenarioError(f"{self.path}: no scheduler {name!r} in this scenario "
                            f"(it has {', '.join(c.name for c in self.schedulers)})")


# --------------------------------------------------------------------------- reading

class Table:
    """One TOML table being read: every key taken is ticked off, so leftovers are errors."""

    def __init__(self, data: dict, where: str, path: Path):
        self.data, self.where, self.path = data, where, path
        self.taken: set[str] = set()

    def error(self, key: str | None, message: str) -> ScenarioError:
        at = f"{self.where}.{key}" if self.where and key else (key or self.where or "top level")
        return ScenarioError(f"{self.path}: {at}: {message}")

    def get(self, key: str, default: Any = None) -> Any:
        self.taken.add(key)
        return self.data.get(key, default)

    def has(self, key: str) -> bool:
        return key in self.data

    def table(self, key: str) -> Table | None:
        value = self.get(key)
        if value is None:
            return None
        if not isinstance(value, dict):
            raise self.error(key, f"must be a table ([{self._sub(key)}]), got {type(value).__name__}")
        return Table(value, self._sub(key), self.path)

    def _sub(self, key: str) -> str:
        return f"{self.where}.{key}" if self.where else key

    def done(self) -> None:
        unknown = sorted(set(self.data) - self.taken)
        if unknown:
            raise self.error(None, f"unknown key{'s' if len(unknown) > 1 else ''} "
                                   f"{', '.join(unknown)} (allowed: {', '.join(sorted(self.taken))})")

    # typed getters ------------------------------------------------------------------

    def string(self, key: str, default: str | None = None) -> str | None:
        value = self.get(key, default)
        if value is not None and not isinstance(value, str):
            raise self.error(key, f"must be a string, got {value!r}")
        return value

    def integer(self, key: str, default: int | None, low: int, high: int | None = None) -> int | None:
        value = self.get(key, default)
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, int):
            raise self.error(key, f"must be a whole number, got {value!r}")
        if value < low or (high is not None and value > high):
            raise self.error(key, f"must be between {low} and {high}, got {value}" if high is not None
                             else f"must be at least {low}, got {value}")
        return value

    def number(self, key: str, default: float | None, low: float, high: float | None = None) -> float | None:
        value = self.get(key, default)
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
            raise self.error(key, f"must be a number, got {value!r}")
        if value < low or (high is not None and value > high):
            raise self.error(key, f"must be between {low:g} and {high:g}, got {value:g}" if high is not None
                             else f"must be at least {low:g}, got {value:g}")
        return float(value)

    def quantity(self, key: str, default, parse, example: str, positive: bool = True) -> float | None:
        value = self.get(key, default)
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, (str, int, float)):
            raise self.error(key, f"must be a quantity such as {example!r}, got {value!r}")
        try:
            parsed = parse(value)
        except UnitError as err:
            raise self.error(key, str(err)) from None
        if positive and parsed <= 0:
            raise self.error(key, f"must be more than zero, got {value!r}")
        return parsed

    def time(self, key: str, default=None, positive: bool = True) -> float | None:
        return self.quantity(key, default, parse_time, "20s", positive)

    def rate(self, key: str, default=None) -> float | None:
        return self.quantity(key, default, parse_rate, "20mbit")

    def strings(self, key: str, default: list | None = None) -> list[str]:
        value = self.get(key, default)
        if value is None:
            return []
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise self.error(key, f"must be a list of strings, got {value!r}")
        return value

    def boolean(self, key: str, default: bool) -> bool:
        value = self.get(key, default)
        if not isinstance(value, bool):
            raise self.error(key, f"must be true or false, got {value!r}")
        return value

    def choice(self, key: str, default: str, allowed) -> str:
        value = self.string(key, default)
        if value not in allowed:
            raise self.error(key, f"must be one of {', '.join(allowed)}, got {value!r}")
        return value


def lab_kernel_ccas() -> tuple[str, ...]:
    """TCP congestion controls the lab's kernel offers (Debian's, qemu's: the UML kernel
    builds the same in), which the lab's scenarios are checked against."""
    return engines.engine("qemu").ccas()


def _cca(t: Table, key: str, value: str, ccas) -> str:
    if value not in ccas:
        raise t.error(key, f"unknown TCP congestion control {value!r} (there are "
                           f"{', '.join(ccas)})")
    return value


def _read_link(t: Table | None, base: Path) -> Link:
    if t is None:
        raise ScenarioError(f"{base}: [link] is missing (it needs rate, trace or traces, and rtt)")
    path = t.path
    rate = t.rate("rate")
    trace_text = t.string("trace")
    traces = _read_traces(t) if t.has("traces") else None
    given = [key for key, value in (("rate", rate), ("trace", trace_text), ("traces", traces)) if value is not None]
    if len(given) != 1:
        raise t.error(given[0] if given else "rate",
                      "give one of rate (e.g. '20mbit'), trace (a 'time_s Mbps' file) or traces (a set of them)"
                      + (f", not {' and '.join(given)}" if given else ""))
    trace = None
    if trace_text is not None:
        trace = (path.parent / trace_text).resolve()
        _check_trace(t, trace)
    elif traces is not None and t.has("trace_offset"):
        raise t.error("trace_offset", "each load draws its offset into its trace from the scenario's seed: remove it")
    elif traces is None and (t.has("trace_scale") or t.has("trace_offset")):
        raise t.error("trace_scale", "only meaningful with a trace")
    buffer = t.get("buffer", 1000)
    bottleneck, router_rate = _read_bottleneck(t, rate)
    link = Link(rate_bps=rate, trace=trace,
                trace_scale=t.number("trace_scale", 1.0, 1e-6), trace_offset_s=t.time("trace_offset", 0, positive=False),
                rtt_s=t.time("rtt", "40ms"), buffer_packets=buffer_packets(t, buffer),
                shaper=t.choice("shaper", "own", ("own", "htb")),
                shaping=t.choice("shaping", "egress", SHAPINGS), upload_rate_bps=t.rate("upload_rate"),
                traces=traces, clients=t.integer("clients", 1, 1, MAX_CLIENTS), nat=t.boolean("nat", False),
                bottleneck=bottleneck, router_rate_bps=router_rate)
    t.done()
    return link


def _read_bottleneck(t: Table, rate: float | None) -> tuple[str, float | None]:
    """Where the link is narrowest, and the router's own rate when that is elsewhere (the
    seed's 100 Mbit/s by default, above the narrow rate)."""
    where = t.choice("bottleneck", "router", BOTTLENECKS)
    if where == "router":
        if t.has("router_rate"):
            raise t.error("router_rate", "only with bottleneck = \"before\" or \"after\"")
        return where, None
    if rate is None:
        raise t.error("bottleneck", "a bottleneck elsewhere than the router needs a constant rate, not a trace")
    router_rate = t.rate("router_rate", "100mbit")
    if router_rate <= rate:
        raise t.error("router_rate", f"must be above the narrow link's rate ({rate / 1e6:g} Mbit/s), or the router "
                                     f"is the bottleneck")
    return where, router_rate


def _check_trace(t: Table, trace: Path) -> None:
    if not trace.is_file():
        raise t.error("trace", f"no such file: {trace} (a path relative to the scenario file, "
                               f"or give one with --trace)")
    try:
        read_trace(trace)
    except TopologyError as err:
        raise t.error("trace", str(err)) from None


def _read_traces(t: Table) -> TraceSet:
    """[link] traces: a directory, a glob or a list of them, relative to the scenario file;
    every file they name must be a trace."""
    value = t.get("traces")
    patterns = [value] if isinstance(value, str) else value
    if not isinstance(patterns, list) or not patterns or not all(isinstance(p, str) and p for p in patterns):
        raise t.error("traces", f"must be a directory, a glob or a list of them, got {value!r}")
    try:
        return TraceSet.find(t.path.parent, patterns)
    except TopologyError as err:
        raise t.error("traces", str(err)) from None


def buffer_packets(t: Table, value) -> int:
    if isinstance(value, int) and not isinstance(value, bool):
        if value < 1:
            raise t.error("buffer", f"must be at least 1 packet, got {value}")
        return value
    if isinstance(value, str):
        try:
            size = parse_size(value)
        except UnitError as err:
            raise t.error("buffer", f"{err}; or give a number of packets") from None
        if size < MTU_BYTES:
            raise t.error("buffer", f"must hold at least one {MTU_BYTES}-byte packet, got {value!r}")
        return int(size // MTU_BYTES)
    raise t.error("buffer", f"must be a number of packets (1000) or a size ('1.5mb'), got {value!r}")


def _read_schedulers(t: Table | None, path: Path) -> tuple[SchedulerChoice, ...]:
    if t is None:
        raise ScenarioError(f"{path}: [schedulers] is missing (names = [...], from "
                            f"{', '.join(sched.SCHEDULERS)})")
    variants = {}
    vt = t.table("variants")
    for name, spec in (vt.data.items() if vt else []):
        vt.taken.add(name)
        if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_:.+-]*", name) or name in sched.SCHEDULERS:
            raise vt.error(name, "a variant needs a new name of letters, digits, '_', ':', '.', '+', '-'")
        if not isinstance(spec, dict):
            raise vt.error(name, "must be a table: { base = \"confucius\", options = \"interval 500ms\" }")
        v = Table(spec, f"{vt.where}.{name}", path)
        base = v.choice("base", None, tuple(sched.SCHEDULERS))
        options = v.string("options", "")
        v.done()
        try:
            sched.tc_setup(name, base=base, rate_bps=20e6, buffer_packets=100, rt_ports=[5000],
                           extra_options=options)
        except sched.SchedulerError as err:
            raise v.error("options", str(err)) from None
        variants[name] = SchedulerChoice(name, base, options)
    names = t.strings("names")
    if not names:
        raise t.error("names", f"list the schedulers to compare, from {', '.join(sched.SCHEDULERS)}"
                               f"{' or the variants' if variants else ''}")
    choices = []
    for name in names:
        if name in variants:
            choices.append(variants[name])
        elif name in sched.SCHEDULERS:
            choices.append(SchedulerChoice(name, name))
        else:
            raise t.error("names", f"unknown scheduler {name!r}: expected one of "
                                   f"{', '.join([*sched.SCHEDULERS, *variants])}")
    if len(set(names)) != len(names):
        raise t.error("names", "a scheduler is listed twice")
    t.done()
    return tuple(choices)


def _rt_flow(t: Table, text, ccas) -> RtFlow:
    if not isinstance(text, str):
        raise t.error("controllers", f"entries must be names or lists of names, got {text!r}")
    if text in ("gcc", "pion-gcc", "copa"):
        return RtFlow(text)
    if text.startswith("tcp-"):
        return RtFlow("tcp", cca=_cca(t, "controllers", text.removeprefix("tcp-"), ccas))
    if text.startswith("fixed-"):
        try:
            rate = parse_rate(text.removeprefix("fixed-"))
        except UnitError as err:
            raise t.error("controllers", f"{text!r}: {err}") from None
        if rate <= 0:
            raise t.error("controllers", f"{text!r}: the rate must be more than zero")
        return RtFlow("fixed", rate_bps=rate)
    raise t.error("controllers", f"unknown controller {text!r}: expected gcc, pion-gcc, copa, tcp-<cca> "
                                 f"(e.g. tcp-bbr) or fixed-<rate> (e.g. fixed-8mbit)")


def _read_rt(t: Table | None, path: Path, ccas, link: Link) -> tuple[tuple[tuple[RtFlow, ...], ...], RtSettings]:
    if t is None:
        raise ScenarioError(f"{path}: [rt] is missing (controllers = [\"gcc\"], ...)")
    entries = t.get("controllers")
    if not isinstance(entries, list) or not entries:
        raise t.error("controllers", "list the RT flows' controllers, e.g. [\"gcc\", \"copa\", \"tcp-bbr\"]")
    sets = []
    for entry in entries:
        flows = entry if isinstance(entry, list) else [entry]
        if not flows:
            raise t.error("controllers", "an inner list needs at least one controller")
        sets.append(tuple(_rt_flow(t, f, ccas) for f in flows))
    labels = [controller_label(s) for s in sets]
    if len(set(labels)) != len(labels):
        raise t.error("controllers", "a controller (or set of them) is listed twice")
    settings = _rt_settings(t, link)
    t.done()
    return tuple(sets), settings


def _rt_settings(t: Table, link: Link) -> RtSettings:
    settings = RtSettings(fps=t.integer("fps", 60, 1, 240), max_rate_bps=_max_rate(t, link),
                          start_rate_bps=t.rate("start_rate", "1mbit"), min_rate_bps=t.rate("min_rate", "100kbit"),
                          port=t.integer("port", 5000, 1024, 65000),
                          retransmit_s=t.time("retransmit", 0, positive=False),
                          cpu=t.choice("cpu", "realtime", RT_CPU_CHOICES))
    if not settings.min_rate_bps <= settings.start_rate_bps <= settings.max_rate_bps:
        raise t.error("start_rate", "needs min_rate <= start_rate <= max_rate")
    return settings


def _max_rate(t: Table, link: Link) -> float:
    """The RT flow's largest bitrate: `max_rate`, or `max_share` of the constant link's rate
    (seed 002 Fig. 4's utilisation: the video's bitrate over the link's before the page)."""
    if not t.has("max_share"):
        return t.rate("max_rate", "100mbit")
    share = t.number("max_share", None, 0.01, 1)
    if t.has("max_rate"):
        raise t.error("max_share", "give max_rate or max_share, not both")
    if link.rate_bps is None:
        raise t.error("max_share", "is a share of a constant link's rate: give [link] rate, or max_rate")
    return share * link.rate_bps


def _read_warmup(t: Table | None) -> Warmup:
    data = t or Table({}, "warmup", Path())
    warmup = Warmup(min_s=data.time("min", "5s"), max_s=data.time("max", "90s"),
                    hold_s=data.time("hold", "3s"), tolerance=data.number("tolerance", 0.1, 0.001, 1),
                    min_share=data.number("min_share", 0.5, 0, 1), retries=data.integer("retries", 2, 0, 5),
                    phase_s=data.time("phase", 0, positive=False))
    if warmup.min_s > warmup.max_s or warmup.hold_s > warmup.max_s:
        raise data.error("max", "must be at least min and hold")
    data.done()
    return warmup


def _read_pages(t: Table, base: Path, corpus: Path | None) -> list[PageRef]:
    refs = []
    for name in t.strings("pages"):
        match = NAMED_PAGE.match(name)
        if not match:
            raise t.error("pages", f"unknown page {name!r}: expected amazon, pNNNN (a sampled page, "
                                   f"e.g. p0007) or flows-N-size-B (N 1-100 flows of B bytes)")
        if match.group(2) and not 1 <= int(match.group(2)) <= 100:
            raise t.error("pages", f"{name!r}: a sweep page has 1 to 100 flows")
        refs.append(PageRef(name=name))
    count = t.integer("sample", None, 1, 10000)
    refs += [PageRef(name=f"p{i:04d}") for i in range(count or 0)]
    sweep = t.table("sweep")
    if sweep is not None:
        refs += _sweep_pages(sweep)
    for text in t.strings("files"):
        file = (base / text).resolve()
        if not file.is_file():
            raise t.error("files", f"no such page file: {file}")
        refs.append(PageRef(file=file))
    if corpus is not None:
        _check_corpus_names(t, corpus, refs)
    return refs


def _sweep_pages(t: Table) -> list[PageRef]:
    """Every combination of `flows` (counts) and `sizes` (e.g. "15kb"): paper 000 Fig. 14/15."""
    flows = t.get("flows")
    sizes = t.get("sizes")
    flows = flows if isinstance(flows, list) else [flows]
    sizes = sizes if isinstance(sizes, list) else [sizes]
    if not all(isinstance(n, int) and not isinstance(n, bool) and 1 <= n <= 100 for n in flows):
        raise t.error("flows", f"must be flow counts from 1 to 100 (or a list of them), got {t.data.get('flows')!r}")
    size_bytes = []
    for size in sizes:
        try:
            size_bytes.append(int(parse_size(size)))
        except (UnitError, TypeError):
            raise t.error("sizes", f"must be sizes such as \"15kb\" (or a list of them), got {size!r}") from None
    t.done()
    return [PageRef(name=f"flows-{n}-size-{b}") for b in size_bytes for n in flows]


def _check_corpus_names(t: Table, corpus: Path, refs: list[PageRef]) -> None:
    import json
    try:
        manifest = json.loads((corpus / "manifest.json").read_text())
        known = set(manifest["sampled"]) | set(manifest["named"])
    except (OSError, ValueError, KeyError, TypeError) as err:
        raise t.error("corpus", f"{corpus} is not a corpus directory (confucius web generate): {err}") from None
    missing = [r.name for r in refs if r.name is not None and r.name not in known]
    if missing:
        raise t.error("pages", f"not in the corpus {corpus}: {', '.join(missing[:5])}"
                               f"{' ...' if len(missing) > 5 else ''}")


def _read_web(t: Table | None, base: Path, ccas) -> Web | None:
    if t is None:
        return None
    corpus_text = t.string("corpus")
    corpus = (base / corpus_text).resolve() if corpus_text else None
    refs = _read_pages(t, base, corpus)
    if not refs:
        raise t.error("pages", "no pages: give pages = [...], sample = N, files = [...] or [web.sweep]")
    if len({r.key for r in refs}) != len(refs):
        raise t.error("pages", "a page is listed twice")
    web = Web(pages=tuple(refs), mode=t.choice("mode", "episodes", ("episodes", "continuous")),
              corpus=corpus, interval_s=t.time("interval", 0, positive=False),
              settle_s=t.time("settle", "20s", positive=False),
              pages_per_run=t.integer("pages_per_run", 10, 1, 1000),
              cca=_cca(t, "cca", t.string("cca", "cubic"), ccas),
              max_per_domain=t.integer("max_per_domain", 6, 1, 64),
              timeout_s=t.time("timeout", "60s"),
              http=t.choice("http", "h1", protocols.CHOICES))
    t.done()
    return web


def _read_bulk(items, path: Path, ccas, clients: int) -> tuple[Bulk, ...]:
    if items is None:
        return ()
    if not isinstance(items, list) or not all(isinstance(i, dict) for i in items):
        raise ScenarioError(f"{path}: bulk: must be an array of tables ([[bulk]] cca = \"cubic\")")
    flows = []
    for index, item in enumerate(items):
        t = Table(item, f"bulk[{index}]", path)
        flows.append(Bulk(cca=_cca(t, "cca", t.string("cca", "cubic"), ccas),
                          start_s=t.time("start", 0, positive=False), duration_s=t.time("duration"),
                          host=_bulk_host(t, clients)))
        t.done()
    return tuple(flows)


def _bulk_host(t: Table, clients: int) -> int:
    host = t.integer("host", 1, 1, MAX_CLIENTS)
    if host > clients:
        raise t.error("host", f"the link has {clients} client host{'s' if clients > 1 else ''}: "
                              f"set [link] clients = {host} to download on host {host}")
    return host


def _read_probes(t: Table | None) -> Probes | None:
    if t is None:
        return None
    probes = Probes(interval_s=t.time("interval", "20ms"))
    if probes.interval_s < 0.001:
        raise t.error("interval", "must be at least 1ms")
    t.done()
    return probes


def _read_flent(t: Table) -> Flent:
    tests = t.strings("tests")
    if not tests:
        raise t.error("tests", f"list Flent's tests to run, from {', '.join(FLENT_TESTS)}")
    unknown = [name for name in tests if name not in FLENT_TESTS]
    if unknown:
        raise t.error("tests", f"unknown Flent test {unknown[0]!r}: expected one of {', '.join(FLENT_TESTS)}")
    if len(set(tests)) != len(tests):
        raise t.error("tests", "a test is listed twice")
    length = t.time("length", "30s")
    if length != int(length) or not 5 <= length <= 600:
        raise t.error("length", f"must be whole seconds from 5s to 600s (Flent's -l), got {t.data['length']!r}")
    step = t.time("step", "200ms")
    if not 0.01 <= step <= 1:
        raise t.error("step", f"must be from 10ms to 1s (Flent's -s), got {t.data['step']!r}")
    flent = Flent(tests=tests, length_s=int(length), step_s=step,
                  upload_streams=t.integer("upload_streams", 4, 1, 64), server_rtts_s=_read_server_rtts(t, tests))
    t.done()
    return flent


def _read_server_rtts(t: Table, tests: list[str]) -> list[float]:
    """rtt_fair's servers (`server_rtts`, one round trip each): as many as each rtt_fair test
    listed takes, and only with one; `_check_server_rtts` checks them against the link."""
    if not t.has("server_rtts"):
        needing = [name for name in tests if name in FLENT_RTT_FAIR_SERVERS]
        if needing:
            raise t.error("server_rtts", f"{needing[0]} needs servers at different RTTs: "
                                         f"give server_rtts, e.g. [\"20ms\", \"40ms\", \"80ms\", \"160ms\"]")
        return []
    texts = t.get("server_rtts")
    if not isinstance(texts, list) or not all(isinstance(text, str) for text in texts):
        raise t.error("server_rtts", f"must be a list of round trips such as \"40ms\", got {texts!r}")
    rtts = []
    for text in texts:
        try:
            rtts.append(parse_time(text))
        except UnitError as err:
            raise t.error("server_rtts", str(err)) from None
    users = [name for name in tests if name in FLENT_RTT_FAIR_SERVERS]
    if not users:
        raise t.error("server_rtts", f"only {' and '.join(FLENT_RTT_FAIR_SERVERS)} use servers at different "
                                     f"RTTs: add one to tests, or remove server_rtts")
    for name in users:
        least, most = FLENT_RTT_FAIR_SERVERS[name]
        if not least <= len(rtts) <= most:
            wanted = f"{least}" if least == most else f"{least} to {most}"
            raise t.error("server_rtts", f"{name} takes {wanted} servers, got {len(rtts)}")
    return rtts


def _check_server_rtts(flent: Flent, link: Link, path: Path) -> None:
    """Each server's RTT includes the client's half of the link's (netem on the client's
    egress, as for every scenario), so none can be shorter than that half."""
    least = link.rtt_s / 2
    short = [rtt for rtt in flent.server_rtts_s if rtt < least]
    if short:
        raise ScenarioError(f"{path}: flent.server_rtts: each must be at least half the link's rtt "
                            f"({least * 1e3:g} ms, the client's side of it), got {short[0] * 1e3:g} ms")


def _flent_parts(top: Table, link_table: Table | None, path: Path) -> Flent:
    """A Flent scenario: its tests bring their own flows, so it has no RT flow, pages, bulk
    flows, probes or duration, and a constant rate; both directions carry load, so the
    scheduler under test shapes the upload too (`upload_rate`, by default the rate)."""
    flent = _read_flent(top.table("flent"))
    for key in ("rt", "web", "bulk", "probes", "duration", "warmup"):
        if top.has(key):
            raise top.error(key, "a scenario with [flent] runs Flent's own flows: remove it")
    if link_table is not None:
        for key in ("trace", "traces"):
            if link_table.has(key):
                raise link_table.error(key, "Flent's tests run at a constant rate: give rate instead")
        link_table.data.setdefault("upload_rate", link_table.data.get("rate"))
    return flent


def _read_sim(t: Table | None) -> SimSettings:
    data = t or Table({}, "sim", Path())
    settings = SimSettings(seed=data.integer("seed", 1, 1, 2**31 - 1), warmup_s=data.time("warmup", "10s"),
                           samples=data.choice("samples", "flows", SIM_SAMPLES),
                           tcp=data.choice("tcp", "linux", SIM_TCP))
    data.done()
    return settings


def _read_uml(t: Table | None) -> UmlSettings:
    data = t or Table({}, "uml", Path())
    settings = UmlSettings(seed=data.integer("seed", None, 0, UML_SEED_MAX))
    data.done()
    return settings


def read_toml(text: str, path: Path) -> dict:
    """A scenario file's text as TOML, or an error naming the file."""
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as err:
        raise ScenarioError(f"{path}: not valid TOML: {err}") from None


def read_top(text: str, path: Path, engine: str | None,
             kernel: str | None = None, point: GridPoint | None = None) -> tuple[Table, str]:
    """The top table of a scenario file's `text` (`engine` and `kernel`, when given,
    replacing its own; a grid's `point` setting its values) and its name, checked: every
    kind of scenario starts here."""
    data = read_toml(text, path)
    if point is not None:
        point.apply(data, path)
    if engine is not None:
        data["engine"] = engine
    if kernel is not None:
        data["kernel"] = kernel
    top = Table(data, "", path)
    name = top.string("name")
    if not name or not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_-]*", name):
        raise top.error("name", f"a name of letters, digits, '-' and '_' is required, got {name!r}")
    return top, name if point is None else f"{name}-{point.suffix}"


def parse(text: str, path: Path, *, trace: Path | None = None, engine: str | None = None,
          kernel: str | None = None, ccas: tuple[str, ...] | None = None,
          point: GridPoint | None = None) -> Scenario:
    """The scenario in `text` (read from `path`, which relative paths start from).
    `trace` replaces the link's rate or trace with this trace file; `engine` and `kernel`
    the scenario's engine and kernel generation; `ccas` the TCP congestion controls there
    are (default: the lab kernel's; the simulator gives ns-3's); `point` one point of the
    file's grid (grid.py, which reads a file with a grid)."""
    path = Path(path)
    top, name = read_top(text, path, engine, kernel, point)
    if top.has("grid"):
        raise top.error("grid", "the file stands for several scenarios, one per point of its grid: "
                                "`confucius sim run`, `sim sweep`, `lab run`, `lab matrix` and `lab plan` run each")
    link_table = top.table("link")
    if trace is not None and link_table is not None:
        link_table.data = {k: v for k, v in link_table.data.items() if k not in ("rate", "traces")}
        link_table.data["trace"] = str(Path(trace).resolve())
    flent = _flent_parts(top, link_table, path) if top.has("flent") else None
    ccas = lab_kernel_ccas() if ccas is None else ccas
    link = _read_link(link_table, path)
    if flent is not None:
        _check_server_rtts(flent, link, path)
    if flent is None:
        rt_sets, rt = _read_rt(top.table("rt"), path, ccas, link)
    else:  # one cell per scheduler, with no RT flow
        rt_sets, rt = ((),), _rt_settings(Table({}, "rt", path), link)
    web = _read_web(top.table("web"), path.parent, ccas)
    duration = top.time("duration")
    if flent is None and web is not None and duration is not None:
        raise top.error("duration", "with page loads a run lasts until its pages are loaded; "
                                    "remove duration (or [web])")
    if flent is None and web is None and duration is None:
        raise top.error("duration", "a scenario without [web] page loads needs duration, e.g. \"60s\"")
    scenario = Scenario(
        name=name, description=top.string("description", ""), path=path, text=text,
        seed=top.integer("seed", 0, 0), repetitions=top.integer("repetitions", 1, 1, MAX_REPETITIONS),
        duration_s=duration, link=link, schedulers=_read_schedulers(top.table("schedulers"), path),
        rt_sets=rt_sets, rt=rt, warmup=_read_warmup(top.table("warmup")), web=web,
        bulk=_read_bulk(top.get("bulk"), path, ccas, link.clients), probes=_read_probes(top.table("probes")),
        stats_interval_s=top.time("stats_interval", "200ms"),
        engine=top.choice("engine", "qemu", VM_ENGINES), sim=_read_sim(top.table("sim")), flent=flent,
        uml=_read_uml(top.table("uml")), kernel=top.choice("kernel", DEFAULT_GENERATION, GENERATIONS),
    )
    top.done()
    _check_labels(scenario)
    _check_marks(scenario)
    return _with_digest(scenario, trace, engine, kernel, point)


def _check_labels(scenario: Scenario) -> None:
    labelled = [c.name for c in scenario.schedulers if sched.SCHEDULERS[c.base].rt_weight is not None]
    if labelled and not any(scenario.rt_sets):
        raise ScenarioError(f"{scenario.path}: schedulers: {', '.join(labelled)} need an RT flow to label")


def _check_marks(scenario: Scenario) -> None:
    """PIAS's levels are marked on the packets the router forwards to the client: an IFB on
    its ingress sees them before, and the upload is not marked at all."""
    marked = [c.name for c in scenario.schedulers if sched.SCHEDULERS[c.base].levels]
    link = scenario.link
    if marked and (link.shaping != "egress" or link.upload_rate_bps is not None):
        raise ScenarioError(f"{scenario.path}: schedulers: {', '.join(marked)} mark the packets the router "
                            f"forwards to the client: only with link.shaping = \"egress\" and no upload_rate")


def _with_digest(scenario: Scenario, trace: Path | None, engine: str | None,
                 kernel: str | None = None, point: GridPoint | None = None) -> Scenario:
    """The scenario's identity for resuming: its text (and grid point), the traces' content
    and the page files'."""
    digest = hashlib.sha256(scenario.text.encode())
    traces = scenario.link.traces.files if scenario.link.traces else ()
    for extra in [scenario.link.trace, *traces, *(r.file for r in (scenario.web.pages if scenario.web else ()))]:
        if extra is not None:
            digest.update(extra.read_bytes())
    if trace is not None:
        digest.update(b"trace-override")
    if engine is not None:
        digest.update(f"engine-override:{engine}".encode())
    if kernel is not None:
        digest.update(f"kernel-override:{kernel}".encode())
    if point is not None:
        digest.update(f"grid-point:{point.describe()}".encode())
    object.__setattr__(scenario, "digest", digest.hexdigest()[:16])
    return scenario


def read_text(path: Path, what: str = "scenario") -> str:
    """The file's text, or an error naming `what` it should have been."""
    try:
        return path.read_text()
    except OSError as err:
        raise ScenarioError(f"cannot read {what} {path}: {err.strerror or err}") from None


def load(path, *, trace: Path | None = None, engine: str | None = None, kernel: str | None = None,
         ccas: tuple[str, ...] | None = None) -> Scenario:
    """Read and check the scenario file at `path` (`parse` says what the options do)."""
    path = Path(path)
    return parse(read_text(path), path, trace=trace, engine=engine, kernel=kernel, ccas=ccas)
