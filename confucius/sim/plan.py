# SPDX-License-Identifier: MIT
"""A lab scenario (confucius/experiment/scenario.py, read with ns-3's TCP congestion controls
and its [sim] table) as the simulator runs it: the experiment's plan (experiment/plan.py:
cells, keys, pages still to measure in chunks, in the lab's order) with each cell's
bottleneck options, and the cells it cannot run with why.

Each page is an episode of its own, as the lab's episodes: the video alone for
`[sim] warmup` and the load's phase (`[warmup] phase`: the lab's own draw for that page),
the page, then the video until its frames are calm again (at most `[web] settle` after the
load; store.window_end). With `[web] mode = "continuous"` (the papers' sessions) a task's
pages are one session instead: one run of the video, its first page after the warm-up and
that page's phase, each next one `[web] interval` after the one before, each page's
window ending where the next starts. On a link of `[link] traces` each load plays the trace and from
the offset it drew (keys.load_trace). A cell's key is keys.simulated_cell_key: the lab's conditions with
the engine, ns-3's version and the seed, so that simulated and lab measurements never
resume one another, even in one database. The guest's timing that the episodes copy
(its calm, drain and flow-sampling times) comes from the lab's contract (GUEST_TIMING).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

from confucius.experiment import keys, plan as planning, shaping, workload
from confucius.experiment.keys import Cell
from confucius.experiment.scenario import RtFlow, Scenario, SchedulerChoice
from confucius.lab.contract import GUEST_TIMING
from confucius.metrics import STALL_THRESHOLD_S
from confucius.provenance import program_digest

from . import bottleneck as bn

CALM_S, DRAIN_S = GUEST_TIMING.calm_s, GUEST_TIMING.drain_s
FLOW_FAST_S, FLOW_LEAD_S = GUEST_TIMING.flow_fast_s, GUEST_TIMING.flow_lead_s
# Confucius's tc options (tc/README.md) and the queue disc's attributes that stand for them.
CONFUCIUS_ATTRIBUTES = {
    "interval": "Interval", "mode": "Mode", "pace": "Pace", "target": "Target", "maxhold": "MaxHold",
    "maxdelay": "MaxDelay", "classes": "Classes", "weights": "Weights", "reclassify": "Reclassify",
    "hysteresis": "Hysteresis", "limit": "Limit", "flows": "Flows", "quantum": "Quantum",
    "aqm_target": "AqmTarget", "aqm_interval": "AqmInterval",
    "aqm_settle": "AqmSettle", "isolate": "Isolate"}
# Its keywords, which take no value (as fq_codel's), and the attribute value each stands for.
CONFUCIUS_KEYWORDS = {"ecn": ("UseEcn", "true"), "noecn": ("UseEcn", "false")}
# The RT flow's modes the simulator has: rtflow's UDP controllers, and its TCP mode over
# ns-3's congestion controls (the scenario is read with bottleneck.NS3_CCAS).
SIMULATED_MODES = ("gcc", "copa", "fixed", "tcp")


@dataclass(frozen=True)
class SimCell:
    cell: Cell
    key: str
    seed: int                    # ns-3's run number: [sim] seed + repetition
    args: tuple[str, ...]        # the bottleneck's options for each page of the cell


@dataclass(frozen=True)
class Skipped:
    scheduler: str
    controller: str
    why: str


@dataclass(frozen=True)
class Sampling:
    """The scheduler's samples as the lab's guest takes them (guest/capture.py, flows.py):
    its statistics every `stats_interval_s` from the start; Confucius's flows every
    FLOW_FAST_S from `flows_from_s` on and every `stats_interval_s` before, or not at all
    (`flows_from_s` None: [sim] samples = "queues")."""
    stats_interval_s: float
    flows_from_s: float | None

    def args(self, folder: Path) -> list[str]:
        """The bottleneck's options, its logs written into `folder` (qdisc.jsonl, flows.jsonl)."""
        args = [f"--stats-interval={self.stats_interval_s}s", f"--qdisc-log={folder / 'qdisc.jsonl'}"]
        if self.flows_from_s is not None:
            args += [f"--flow-interval={FLOW_FAST_S}s", f"--flow-from={self.flows_from_s}s",
                     f"--flow-log={folder / 'flows.jsonl'}"]
        return args


@dataclass(frozen=True)
class LinkTrace:
    """A trace from a load's start: its points from the offset, scaled, in bit/s, repeated
    every `period_s`. A scenario's one trace is played as the lab plays it (lab/guest/trace.py's
    TracePlayer: the part from the offset, over and over); a trace drawn from a set from its
    offset to its end and on from its start (drawn_trace)."""
    points: tuple[tuple[float, float], ...]
    period_s: float
    end_s: float                 # the episode's longest end after the load's start


@dataclass(frozen=True)
class SimPage:
    number: int                  # in the scenario's page list
    key: str                     # the scenario's name for it
    unit_key: str
    page_id: str
    text: str                    # as the simulator reads it (bottleneck.sim_page_text)
    start_s: float               # when the load starts: [sim] warmup and the load's phase
    args: tuple[str, ...]        # the bottleneck's options for this page's start and end (page_args)
    sampling: Sampling           # how the bottleneck samples the scheduler
    trace: LinkTrace | None      # the link's trace from the load's start; None: a constant rate
    drawn: keys.DrawnTrace | None = None   # the trace and offset it drew from a set, recorded


@dataclass(frozen=True)
class SimTask:
    """One cell's chunk of pages: a task for a worker; an episode each, or one session."""
    cell: SimCell
    pages: tuple[SimPage, ...]
    chunk: int
    session: bool = False        # [web] mode = "continuous": the pages one after another in one run


class PlanError(ValueError):
    """A scenario the simulator cannot run as a whole."""


def check_scenario(scenario: Scenario) -> None:
    """Refuse what the simulator has no counterpart for, rather than run something else."""
    if scenario.web is None:
        raise PlanError(f"{scenario.path}: the simulator runs page loads ([web]); timed scenarios "
                        f"(duration, no pages) are not simulated")
    web = scenario.web
    problems = [text for bad, text in (
        (web.mode == "continuous" and web.interval_s < web.timeout_s,
         f"continuous session whose interval ({web.interval_s:g} s) is shorter than a load's timeout "
         f"({web.timeout_s:g} s): it loads each page `interval` after the one before, on a schedule, so the "
         f"pages could overlap (set [web] timeout at most interval)"),
        (bool(scenario.bulk), "[[bulk]] iperf3 flows"),
        (scenario.probes is not None, "[probes] irtt probes"),
        (scenario.link.shaping != "egress", f"link.shaping {scenario.link.shaping!r} (only egress)"),
        (scenario.link.clients != 1, f"link.clients {scenario.link.clients} (one client host)"),
        (scenario.link.nat, "link.nat (no NAT in the router)"))
        if bad]
    if problems:
        raise PlanError(f"{scenario.path}: the simulator has no {', '.join(problems)}")


def differences(scenario: Scenario) -> list[str]:
    """What the simulator runs otherwise than the lab would, for the user to read."""
    if scenario.web.mode == "continuous":
        notes = [f"one RT flow a session of pages_per_run pages: alone for [sim] warmup = {scenario.sim.warmup_s:g} s "
                 f"and the first load's phase, then a page every interval = {scenario.web.interval_s:g} s on a "
                 f"schedule (the lab waits, at most settle after a load, for the flow to converge again)"]
    else:
        notes = [f"the RT flow runs alone for [sim] warmup = {scenario.sim.warmup_s:g} s before each page "
                 f"(the lab warms it up until it converges), then the load's phase as the lab draws it"]
    tcp = sorted({f.label for flows in scenario.rt_sets for f in flows if f.mode == "tcp"})
    if tcp:
        notes.append(f"{', '.join(tcp)}: rtflow's TCP mode over ns-3's own congestion controls, not "
                     f"Linux's (and ns-3's TCP: minimum RTO 1 s; sim/README.md)")
    return notes


def scheduler_args(choice: SchedulerChoice, known: dict) -> list[str] | str:
    """The bottleneck's options for the scheduler, or why it cannot be simulated."""
    if choice.base in known["missing"]:
        return f"{choice.base} cannot be simulated: {known['missing'][choice.base]}"
    if choice.base not in known["simulated"]:
        return f"{choice.base} has no counterpart in the simulator"
    words = choice.options.split()
    if words and not choice.base.startswith("confucius"):
        return f"{choice.name}: options {choice.options!r} of {choice.base} are not simulated"
    attributes = confucius_attributes(choice.name, words)
    if isinstance(attributes, str):
        return attributes
    return [f"--scheduler={choice.base}"] + [f"--ns3::ConfuciusQueueDisc::{attribute}={value}"
                                             for attribute, value in attributes]


def confucius_attributes(name: str, words: list[str]) -> list[tuple[str, str]] | str:
    """Confucius's tc options as (attribute, value) pairs, or why they cannot be."""
    attributes, words = [], list(words)
    while words:
        option = words.pop(0)
        if option in CONFUCIUS_KEYWORDS:
            attributes.append(CONFUCIUS_KEYWORDS[option])
        elif option not in CONFUCIUS_ATTRIBUTES:
            return f"{name}: option {option!r} has no ConfuciusQueueDisc attribute"
        elif not words:
            return f"{name}: option {option!r} needs a value"
        else:
            attributes.append((CONFUCIUS_ATTRIBUTES[option], words.pop(0)))
    return attributes


def rt_args(scenario: Scenario, flows: tuple[RtFlow, ...]) -> list[str] | str:
    """The videos' options, or why the simulator cannot run these RT flows. Every flow of
    a cell starts at one rate (the bottleneck takes one), so fixed-rate flows of different
    rates are refused."""
    if not flows:
        return "the simulator runs cells with at least one RT flow"
    unsimulated = [f.label for f in flows if f.mode not in SIMULATED_MODES]
    if unsimulated:
        return (f"the RT flow {unsimulated[0]} is not simulated (controllers: gcc, copa, fixed-<rate>, "
                f"tcp-<{'|'.join(bn.NS3_CCAS)}>)")
    rt = scenario.rt
    starts = {flow.rate_bps if flow.mode == "fixed" else rt.start_rate_bps for flow in flows}
    if len(starts) > 1:
        return "the simulator starts every RT flow of a cell at one rate: fixed flows of other rates are not simulated"
    start = starts.pop()
    controllers = ",".join(flow.label if flow.mode == "tcp" else flow.mode for flow in flows)
    return [f"--rt={controllers}", f"--rt-start-rate={start:.0f}bps",
            f"--ns3::RtVideoSender::Fps={rt.fps}",
            f"--ns3::RtVideoSender::MinRate={min(rt.min_rate_bps, start):.0f}bps",
            f"--ns3::RtVideoSender::MaxRate={max(rt.max_rate_bps, start):.0f}bps",
            f"--ns3::RtFlowSender::RetransmitWindow={rt.retransmit_s}s"]


def episode_args(scenario: Scenario) -> list[str]:
    """The link and the episode's tail, the same for every page: after the load (until
    web.timeout at most), the video until its frames have been on time for CALM_S, at most
    `settle`, then DRAIN_S more (as the lab's, guest/schedule.py)."""
    link, web = scenario.link, scenario.web
    args = [f"--rtt={link.rtt_s}s", f"--buffer={link.buffer_packets}",
            f"--shaper={'own' if link.shaper == 'own' else 'tbf'}",
            f"--web-cca={web.cca}", f"--ns3::PageLoader::MaxPerDomain={web.max_per_domain}",
            "--web-flows=0", f"--page-tail={web.settle_s + DRAIN_S}s",
            f"--calm={CALM_S}s", f"--late={STALL_THRESHOLD_S}s", f"--drain={DRAIN_S}s",
            f"--tcp={scenario.sim.tcp}"]
    if link.rate_bps is not None:
        args.append(f"--rate={link.rate_bps:.0f}bps")
    if link.bottleneck != "router":
        args += [f"--bottleneck={link.bottleneck}", f"--router-rate={link.router_rate_bps:.0f}bps"]
    return args


def page_args(scenario: Scenario, start_s: float) -> tuple[str, ...]:
    """One page's start (the video's warm-up and the load's phase before it) and end."""
    web = scenario.web
    return f"--web-start={start_s}s", f"--duration={start_s + web.timeout_s + web.settle_s}s"


def page_sampling(scenario: Scenario, start_s: float) -> Sampling:
    """The page's samples: the flows, if [sim] samples keeps them, fast from FLOW_LEAD_S
    before its load (at `start_s`)."""
    flows_from = max(round(start_s - FLOW_LEAD_S, 3), 0.0) if scenario.sim.samples == "flows" else None
    return Sampling(scenario.stats_interval_s, flows_from)


def run_options(task: SimTask, pages: Sequence[SimPage]) -> list[str]:
    """The bottleneck's options for one run of the task, one page's episode or the session
    of its pages: its cell's, the first page's start and the last one's end (the files it
    reads and writes left to the caller)."""
    start, _ = pages[0].args
    _, end = pages[-1].args
    return [*task.cell.args, start, end]


def page_starts(scenario: Scenario, cell: Cell, units: Sequence[planning.Unit]) -> list[float]:
    """When each unit's page loads in its run: each after the warm-up and the lab's own
    phase for this load (keys.load_phase_s), in its own episode; in a session, the first
    so and each next one `interval` after the one before."""
    starts = [round(scenario.sim.warmup_s + keys.load_phase_s(scenario, cell, unit.ref), 3) for unit in units]
    if scenario.web.mode != "continuous":
        return starts
    return [round(starts[0] + number * scenario.web.interval_s, 3) for number in range(len(units))]


def sim_page(scenario: Scenario, cell: Cell, unit: planning.Unit, page, text: str, start: float,
             trace: LinkTrace | None) -> SimPage:
    """A unit of the cell, its page started at `start`, on the scenario's `trace` or the
    one the load draws from its set (keys.load_trace)."""
    drawn = keys.load_trace(scenario, cell, unit.ref)
    if drawn is not None:
        trace = drawn_trace(scenario, drawn)
    return SimPage(unit.number, unit.ref.key, unit.key, page.id, text, start,
                   page_args(scenario, start), page_sampling(scenario, start), trace, drawn)


def _period_s(points) -> float:
    """How long a trace lasts before it repeats: to its last point, and that point for as
    long as its shortest step."""
    steps = [b[0] - a[0] for a, b in zip(points, points[1:]) if b[0] > a[0]]
    return points[-1][0] - points[0][0] + (min(steps) if steps else 1.0)


def _episode_end_s(scenario: Scenario) -> float:
    web = scenario.web
    return web.timeout_s + web.settle_s + DRAIN_S


def link_trace(scenario: Scenario) -> LinkTrace | None:
    """The scenario's one trace from its `trace_offset`; None for a rate or a set."""
    link = scenario.link
    if link.trace is None:
        return None
    points = [(t, bps * link.trace_scale) for t, bps in shaping.read_trace(link.trace) if t >= link.trace_offset_s]
    start = points[0][0]
    return LinkTrace(tuple((t - start, bps) for t, bps in points), _period_s(points), _episode_end_s(scenario))


def drawn_trace(scenario: Scenario, drawn: keys.DrawnTrace) -> LinkTrace:
    """The trace a load drew, from its offset: the rest of the trace, then its beginning
    (the whole trace repeats, so a load that starts near its end meets all of it)."""
    points = shaping.trace_points(drawn.path)
    period, scale = _period_s(points), scenario.link.trace_scale
    rotated = [(t - drawn.offset_s, bps * scale) for t, bps in points if t >= drawn.offset_s]
    rotated += [(t + period - drawn.offset_s, bps * scale) for t, bps in points if t < drawn.offset_s]
    return LinkTrace(tuple(rotated), period, _episode_end_s(scenario))


def trace_text(trace: LinkTrace, start_s: float) -> str:
    """The link's rate over one episode, `time_s Mbps`: the trace's first rate while the
    video warms up, then the trace from the load's start, over and over, to the end."""
    lines = [f"0 {max(trace.points[0][1], shaping.MIN_RATE_BPS) / 1e6:.6f}"]
    loop = 0
    while loop * trace.period_s < trace.end_s:
        lines += [f"{start_s + loop * trace.period_s + t:.6f} {bps / 1e6:.6f}" for t, bps in trace.points]
        loop += 1
    return "\n".join(lines) + "\n"


def plan(scenario: Scenario, db=None, *, binary: Path = bn.BOTTLENECK, schedulers: Sequence[str] | None = None,
         controllers: Sequence[str] | None = None, attempts: int = 3) -> tuple[list[SimTask], list[Skipped]]:
    """The tasks still to do (experiment/plan.py; without a database every page is
    simulated) and the cells the simulator cannot run."""
    check_scenario(scenario)
    known = bn.describe(binary)
    program = {"bottleneck": program_digest(binary)}
    pages = [workload.page(scenario, ref) for ref in scenario.web.pages]
    texts = [bn.sim_page_text(page, scenario.web.http) for page in pages]
    trace, episode = link_trace(scenario), episode_args(scenario)
    runnable, skipped, options = [], [], {}
    for cell in planning.cells(scenario, schedulers, controllers):
        args = [scheduler_args(cell.scheduler, known), rt_args(scenario, cell.rt)]
        why = next((a for a in args if isinstance(a, str)), None)
        if why is None:
            runnable.append(cell)
            options[cell] = (*args[0], *args[1])
        else:
            skipped.append(Skipped(cell.scheduler.name, cell.controller, why))
    tasks = planning.plan(scenario, runnable, lambda cell: keys.simulated_cell_key(scenario, cell, known["ns3"]),
                          db, programs_of=lambda cell: program, attempts=attempts)
    return [sim_task(scenario, task, (*options[task.cell], *episode), pages, texts, trace) for task in tasks], skipped


def sim_task(scenario: Scenario, task: planning.Task, args: tuple[str, ...], pages: list, texts: list[str],
             trace: LinkTrace | None) -> SimTask:
    """The planned task with what the bottleneck needs: the cell's options and seed, each
    page's text, start and sampling."""
    seed = scenario.sim.seed + task.cell.repetition
    cell = SimCell(task.cell, task.cell_key, seed, (*args, f"--seed={seed}"))
    starts = page_starts(scenario, task.cell, task.pages)
    return SimTask(cell, tuple(sim_page(scenario, task.cell, unit, pages[unit.number], texts[unit.number], start, trace)
                               for unit, start in zip(task.pages, starts)), task.chunk,
                   session=scenario.web.mode == "continuous")
