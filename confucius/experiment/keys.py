# SPDX-License-Identifier: MIT
"""The stored identity of a measurement: a cell's conditions as an explicit record, and the
keys that digest them.

    key = cell_key(scenario, cell)                       # 20 hex digits, runs.cell_key
    unit_key(key, ref.key, workload.page_digest(page))   # a page under the cell, pages.unit_key

A cell (scheduler × RT flows × repetition) is named by everything that shapes what it
measures (`CellConditions`: link, tc setup, RT settings, warm-up, Web settings, bulk flows,
probes, duration, repetition, engine and its clock; the guest's seed, the kernel generation,
the upload's rate and Flent's tests only when a scenario sets them), not by the scenario
file as a whole: adding a scheduler or pages to a scenario adds units and keeps the
measured ones. A resumed matrix finds what it measured by these keys, so the record's form
is versioned (KEY_FORMAT) and tests/lab/test_lab_keys.py pins digests of the kept
databases in data/: a change that moves a digest orphans every stored measurement.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import random
from dataclasses import dataclass
from pathlib import Path

from . import engines, schedulers as sched, shaping
from .records import Bulk, Flent, Probes, Warmup
from .scenario import PageRef, RtFlow, RtSettings, Scenario, ScenarioError, SchedulerChoice, controller_label

# The form of CellConditions.key_input that stored keys digest. Format 1 is every key stored
# so far; a change to what is digested must come with a new format and a way to find the
# measurements of the old one.
KEY_FORMAT = 1
# The fields of [web] that shape a load (the pages are named by the units' keys), and those
# digested only when they differ from these (each option's absence).
WEB_CONDITIONS = ("mode", "interval_s", "settle_s", "cca", "max_per_domain", "timeout_s")
_OPTIONAL_WEB = {"http": "h1"}


@dataclass(frozen=True)
class Cell:
    """A scheduler, a set of RT flows and a repetition: what a scenario's runs vary."""
    scheduler: SchedulerChoice
    rt: tuple[RtFlow, ...]
    repetition: int

    @property
    def controller(self) -> str:
        return controller_label(self.rt)


@dataclass(frozen=True)
class LinkConditions:
    rate_bps: float | None
    trace: str | None                 # the trace file's sha256 (its content, not its path)
    scale: float
    offset_s: float
    rtt_s: float
    buffer: int
    shaper: str
    upload_rate_bps: float | None = None   # digested only when set
    # A set each load draws from: the scenario's seed, which the draws follow, and each trace's
    # name and sha256. Digested only when set, so that the keys of one trace or a rate stay.
    traces: tuple | None = None
    # A second client host and the router's NAT: digested only when asked for, so that the
    # keys of one client without NAT stay.
    clients: int = 1
    nat: bool = False
    # The bottleneck elsewhere than the router (seed 000 Fig. 28): digested only when so.
    bottleneck: str = "router"
    router_rate_bps: float | None = None


@dataclass(frozen=True)
class CellConditions:
    """Everything that shapes a cell's measurements, as the keys name it (format KEY_FORMAT)."""
    link: LinkConditions
    tc: tuple[str, ...]               # the bottleneck's tc lines without HTB's bucket (tc_commands(..., None))
    rt: tuple[str, ...]               # the RT flows' labels
    rt_settings: RtSettings
    warmup: Warmup
    web: tuple[tuple[str, object], ...] | None   # WEB_CONDITIONS and their values
    bulk: tuple[Bulk, ...]
    probes: Probes | None
    duration_s: float | None
    stats_interval_s: float
    repetition: int
    engine: str
    time_mode: str
    seed: int | None = None           # the optional conditions are digested only when set,
    kernel: str | None = None         # so that the keys of scenarios without them stay as
    flent: Flent | None = None        # they were before the option existed

    def key_input(self) -> dict:
        """The JSON value that cell_key digests."""
        link = {name: value for name, value in dataclasses.asdict(self.link).items()
                if name not in _OPTIONAL_LINK or value != _OPTIONAL_LINK[name]}
        warmup = dataclasses.asdict(self.warmup)
        if not warmup["phase_s"]:
            del warmup["phase_s"]
        value = {
            "link": link, "tc": list(self.tc), "rt": list(self.rt),
            "rt_settings": dataclasses.asdict(self.rt_settings), "warmup": warmup,
            "web": None if self.web is None else dict(self.web),
            "bulk": [_bulk_key_input(b) for b in self.bulk],
            "probes": None if self.probes is None else dataclasses.asdict(self.probes),
            "duration_s": self.duration_s, "stats_interval_s": self.stats_interval_s,
            "repetition": self.repetition, "engine": self.engine, "time_mode": self.time_mode,
        }
        optional = {"seed": self.seed, "kernel": self.kernel,
                    "flent": None if self.flent is None else self.flent.to_dict()}
        value.update({name: v for name, v in optional.items() if v is not None})
        return value


# The link's conditions digested only when they differ from these (each option's absence).
_OPTIONAL_LINK = {"upload_rate_bps": None, "traces": None, "clients": 1, "nat": False, "bottleneck": "router",
                  "router_rate_bps": None}


def _bulk_key_input(bulk: Bulk) -> dict:
    """A bulk flow as the keys name it: its host only when not the first, as before hosts."""
    value = dataclasses.asdict(bulk)
    if value["host"] == 1:
        del value["host"]
    return value


def digest(value) -> str:
    return hashlib.sha256(json.dumps(value, sort_keys=True, default=str).encode()).hexdigest()[:20]


# --------------------------------------------------------------------------- the bottleneck

def rt_ports(scenario: Scenario, cell: Cell) -> list[int]:
    return [scenario.rt.port + number for number in range(len(cell.rt))]


def initial_rate_bps(scenario: Scenario) -> float:
    """The link's rate at the start: the constant rate, or the trace's first point used. A
    set of traces has no one start (each load draws its own): its cell is set up at its
    first trace's first rate, which the simulator, the one engine that plays a set, replaces
    by the drawn trace before any packet is sent."""
    link = scenario.link
    if link.traces is not None:
        return max(shaping.trace_points(link.traces.files[0])[0][1] * link.trace_scale, shaping.MIN_RATE_BPS)
    if link.trace is None:
        return link.rate_bps
    points = [bps for t, bps in shaping.read_trace(link.trace) if t >= link.trace_offset_s]
    if not points:
        raise ScenarioError(f"{scenario.path}: link.trace_offset is beyond the end of {link.trace}")
    return max(points[0] * link.trace_scale, shaping.MIN_RATE_BPS)


def tc_setup(scenario: Scenario, cell: Cell) -> sched.TcSetup:
    choice = cell.scheduler
    return sched.tc_setup(choice.name, base=choice.base, rate_bps=initial_rate_bps(scenario),
                          buffer_packets=scenario.link.buffer_packets, rt_ports=rt_ports(scenario, cell),
                          extra_options=choice.options, shaper=scenario.link.shaper,
                          shaping=scenario.link.shaping)


def upload_setup(scenario: Scenario, cell: Cell) -> sched.TcSetup | None:
    """The scheduler under test on the upload (client -> server) as well, at the scenario's
    `upload_rate`; None when the upload is unshaped."""
    rate = scenario.link.upload_rate_bps
    if rate is None:
        return None
    choice = cell.scheduler
    return sched.tc_setup(choice.name, base=choice.base, rate_bps=rate, buffer_packets=scenario.link.buffer_packets,
                          rt_ports=rt_ports(scenario, cell), extra_options=choice.options,
                          shaper=scenario.link.shaper, shaping="upload")


def tc_commands(scenario: Scenario, cell: Cell, htb_burst_s: float | None) -> list[str]:
    """The cell's bottleneck as tc batch lines, the upload's after the download's, with HTB's
    bucket `htb_burst_s` (None: tc's default, the form the keys name the setup by)."""
    upload = upload_setup(scenario, cell)
    return tc_setup(scenario, cell).commands(htb_burst_s) + (upload.commands(htb_burst_s) if upload else [])


# --------------------------------------------------------------------------- the keys

def scenario_seed(scenario: Scenario, cell: Cell) -> int | None:
    """The seed the scenario gives the cell's guest: [uml] seed + repetition under uml;
    None under qemu, which cannot repeat a run, or when the scenario sets none."""
    if scenario.engine != "uml" or scenario.uml.seed is None:
        return None
    return scenario.uml.seed + cell.repetition


def conditions(scenario: Scenario, cell: Cell) -> CellConditions:
    link, web = scenario.link, scenario.web
    trace = _file_digest(link.trace) if link.trace else None
    return CellConditions(
        link=LinkConditions(rate_bps=link.rate_bps, trace=trace, scale=link.trace_scale,
                            offset_s=link.trace_offset_s, rtt_s=link.rtt_s, buffer=link.buffer_packets,
                            shaper=link.shaper, upload_rate_bps=link.upload_rate_bps,
                            traces=_trace_set_conditions(scenario), clients=link.clients, nat=link.nat,
                            bottleneck=link.bottleneck, router_rate_bps=link.router_rate_bps),
        # The setup without HTB's bucket, which follows from the engine: the form the keys
        # have named it by since before the bucket was recorded.
        tc=tuple(tc_commands(scenario, cell, htb_burst_s=None)),
        rt=tuple(f.label for f in cell.rt), rt_settings=scenario.rt, warmup=scenario.warmup,
        web=None if web is None else _web_conditions(web),
        bulk=scenario.bulk, probes=scenario.probes, duration_s=scenario.duration_s,
        stats_interval_s=scenario.stats_interval_s, repetition=cell.repetition,
        engine=scenario.engine, time_mode=engines.entry(scenario.engine).time_mode,
        seed=scenario_seed(scenario, cell),
        kernel=None if scenario.kernel == "6.1" else scenario.kernel,   # every run before the choice ran 6.1
        flent=scenario.flent)


def _file_digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _web_conditions(web) -> tuple[tuple[str, object], ...]:
    optional = tuple((name, getattr(web, name)) for name, absent in _OPTIONAL_WEB.items()
                     if getattr(web, name) != absent)
    return tuple((name, getattr(web, name)) for name in WEB_CONDITIONS) + optional


def _trace_set_conditions(scenario: Scenario) -> tuple | None:
    traces = scenario.link.traces
    if traces is None:
        return None
    return scenario.seed, tuple((traces.name(path), _file_digest(path)) for path in traces.files)


def cell_key(scenario: Scenario, cell: Cell) -> str:
    return digest(conditions(scenario, cell).key_input())


def simulated_cell_key(scenario: Scenario, cell: Cell, ns3_version: str) -> str:
    """A cell as the simulator measures it: the lab's conditions with the engine, ns-3's
    version, its seed and warm-up, so that simulated and lab measurements never resume one
    another, even in one database."""
    value = [cell_key(scenario, cell), "ns3", ns3_version, scenario.sim.seed, scenario.sim.warmup_s]
    return hashlib.sha256(json.dumps(value).encode()).hexdigest()[:20]


def unit_key(cell_key_: str, page_key: str, page_digest: str) -> str:
    """A page (by the scenario's name for it and its content's digest) under a cell."""
    return digest([cell_key_, page_key, page_digest])


def load_phase_s(scenario: Scenario, cell: Cell, ref: PageRef) -> float:
    """How long a load waits after its RT flow's warm-up: drawn from [0, [warmup] phase)
    by the scenario's seed, the repetition and the page, so every scheduler meets the page
    at the same moment of its RT flow's life, and the pages meet a controller's periodic
    behaviour (TCP-BBR probes its minimum RTT once it has seen no lower one for 10 s: 10 s
    into a fresh connection) at phases spread over its period rather than at one."""
    if not scenario.warmup.phase_s:
        return 0.0
    draw = random.Random(f"load-phase/{scenario.seed}/{cell.repetition}/{ref.key}")
    return round(draw.uniform(0, scenario.warmup.phase_s), 3)


@dataclass(frozen=True)
class DrawnTrace:
    """The trace a load plays from a set, and where in it the load starts."""
    path: Path
    name: str                         # its name in the set (shaping.TraceSet.name)
    offset_s: float                   # a point of the trace: the load starts at its rate


def load_trace(scenario: Scenario, cell: Cell, ref: PageRef) -> DrawnTrace | None:
    """The trace of the scenario's `[link] traces` a load plays, and its offset: drawn by
    the scenario's seed, the repetition and the page, as load_phase_s is, so that every
    scheduler and controller meets the page on the same stretch of the same link and a
    rerun draws the same. The offset is one of the trace's points, each as likely, so the
    load starts on a rate the trace has; None for a rate or a single trace."""
    traces = scenario.link.traces
    if traces is None:
        return None
    draw = random.Random(f"link-trace/{scenario.seed}/{cell.repetition}/{ref.key}")
    path = draw.choice(traces.files)
    offset, _ = draw.choice(shaping.trace_points(path))
    return DrawnTrace(path, traces.name(path), round(offset, 6))
