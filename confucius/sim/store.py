# SPDX-License-Identifier: MIT
"""A simulated task as the experiment's results (experiment/results.py): the same rows the
lab writes for a run of page loads, through the database's own writer, with engine "ns3",
time mode "simulated", ns-3's seed as the run's `seed`, and its version and seed in each
run's `versions` and `spec`.
So every `confucius report` command reads simulated runs as it reads the lab's.

As the lab's run, a task's pages share one clock: each page's episode is simulated from
0, and page n's times (frames, rates, samples, its load) are moved after the episodes
before it (`run_offsets`), so that a run's qdisc samples of one load are not another's.
A continuous task is one simulation already, one RT session as the lab's continuous run:
each page's window ends where the next page starts, the last one's when the video is
calm again.
Besides the frames, the RT sender's rate log (rt_rates) and the scheduler's samples
(qdisc_stats, every `stats_interval`; for Confucius its flows, qdisc_flows, every 20 ms
from 2 s before the load) are stored as the lab's. Probes have no counterpart and stay
empty. The RT sender is never starved of CPU in a simulation: every page is valid
(sender_max_gap_ms 0)."""

from __future__ import annotations

import json
import math
import platform
from dataclasses import asdict, replace
from pathlib import Path

from confucius import metrics
from confucius.experiment import engines
from confucius.experiment.results import Measurement, PageRecord, RtFlowLog, RunData, Session
from confucius.experiment.scenario import Scenario
from confucius.ns3 import provenance
from confucius.web.client_report import PageLoad, parse_report

from .bottleneck import BOTTLENECK
from .plan import CALM_S, SimTask
from .worker import BottleneckRun, TaskResult

ENGINE = "ns3"


def versions(ns3_version: str, binary: Path = BOTTLENECK) -> dict:
    """What produced the runs: ns-3, the bottleneck program, the tree's commit."""
    return {**provenance("bottleneck", binary, ns3_version), "python": platform.python_version()}


def window_end(frames, load_end_ns: int, settle_s: float) -> tuple[int, bool]:
    """The end of a load's window as the lab's tail (guest/schedule.py) finds it: once the
    frames captured over the last CALM_S, all after the load's end, were on time; at most
    `settle_s` after the load's end. Also whether the frames got calm."""
    deadline, calm_ns = load_end_ns + round(settle_s * 1e9), round(CALM_S * 1e9)
    last_late = None
    for f in sorted(frames, key=lambda f: f.capture_ns):
        if f.capture_ns > deadline:
            break
        if not metrics.on_time(f.complete, f.delay_ms):
            last_late = f.capture_ns
        elif f.capture_ns - calm_ns >= load_end_ns and (last_late is None or last_late < f.capture_ns - calm_ns):
            return f.capture_ns, True
    return deadline, False


def _load_end_ns(load: PageLoad, start_ns: int, timeout_s: float) -> int:
    last = [o.last_byte for o in load.objects if o.last_byte is not None]
    return start_ns + round((max(last) if load.ok and last else timeout_s) * 1e9)


def run_offsets(runs: list[BottleneckRun]) -> list[int]:
    """Where each simulation of a task starts on the run's clock (ns): after the ones
    before it, each rounded up to a whole second."""
    offsets, at = [], 0
    for p in runs:
        offsets.append(at)
        at += math.ceil(p.run["simulated_s"]) * 1_000_000_000
    return offsets


def on_run_clock(page_run: BottleneckRun, offset_ns: int) -> BottleneckRun:
    """The simulation's frames, rates and samples moved by `offset_ns` (its JSON is not: its
    loads' starts are moved where they are read, page_records)."""
    def moved(t: int | None) -> int | None:
        return None if t is None else t + offset_ns
    return replace(page_run,
                   frames=[[replace(f, capture_ns=f.capture_ns + offset_ns, first_arrival_ns=moved(f.first_arrival_ns),
                                    last_arrival_ns=moved(f.last_arrival_ns)) for f in frames]
                           for frames in page_run.frames],
                   rates=[[replace(r, time_ns=r.time_ns + offset_ns) for r in rates] for rates in page_run.rates],
                   qdisc_samples=[(t + offset_ns, s) for t, s in page_run.qdisc_samples],
                   qdisc_flows=[(t + offset_ns, s) for t, s in page_run.qdisc_flows])


def page_records(first: int, session: int, page_run: BottleneckRun, scenario: Scenario,
                 offset_ns: int = 0) -> list[PageRecord]:
    """The pages of one simulation, numbered from `first` in the task: `page_run` already on
    the run's clock (on_run_clock), `offset_ns` its move. Each page's window ends where the
    next one starts (as the lab's continuous runs), the last one's as the lab's tail finds
    it (window_end)."""
    loads = [parse_report(json.dumps(load["report"])) for load in page_run.loads]
    starts = [round(load.start_unix * 1e9) + offset_ns for load in loads]   # the simulator's clock, as the frame log's
    every_frame = [f for frames in page_run.frames for f in frames]
    end, calm = window_end(every_frame, _load_end_ns(loads[-1], starts[-1], scenario.web.timeout_s),
                           scenario.web.settle_s)
    ends = [(next_start, None) for next_start in starts[1:]] + [(end, calm)]
    return [PageRecord(number=first + n, key=page.key, unit_key=page.unit_key, page_id=page.page_id,
                       session=session, started_ns=start, load_start_ns=start, window_end_ns=window_ns,
                       exit=0 if load.ok else 1, error=load.error, load=load,
                       warmup_s=scenario.sim.warmup_s if n == 0 else None, converged=None, warmups=1 if n == 0 else None,
                       calm=window_calm, rt_target_bps=[], sender_max_gap_ms=0.0)
            for n, (page, load, start, (window_ns, window_calm))
            in enumerate(zip(page_run.pages, loads, starts, ends, strict=True))]


def run_data(result: TaskResult, scenario: Scenario) -> RunData:
    """The task's pages as the lab's results reader returns a run (results.RunData): one RT
    session per simulation (a page's episode, or the session of the task's pages), with
    each of the cell's RT flows. A simulation has no guest: no spec or events."""
    labels = [flow.label for flow in result.task.cell.cell.rt]
    offsets = run_offsets(result.runs)
    runs = [on_run_clock(p, offset) for p, offset in zip(result.runs, offsets)]
    sessions = [Session(n, offset, offset + round(p.run["simulated_s"] * 1e9), rt_flow_logs(n, labels, p))
                for n, (p, offset) in enumerate(zip(runs, offsets))]
    firsts = [sum(len(p.pages) for p in runs[:n]) for n in range(len(runs))]
    pages = [record for n, (p, offset, first) in enumerate(zip(runs, offsets, firsts))
             for record in page_records(first, n, p, scenario, offset)]
    return RunData(directory=None, sessions=sessions, pages=pages,
                   qdisc_samples=[s for p in runs for s in p.qdisc_samples],
                   qdisc_flows=[s for p in runs for s in p.qdisc_flows], probes=[], bulk=[])


def rt_flow_logs(session: int, labels: list[str], page_run: BottleneckRun) -> list[RtFlowLog]:
    """The simulation's RT flows as the lab logs them: numbered in the cell's order, each
    with its label and port."""
    return [RtFlowLog(session, number, label, port, frames, rates) for number, (label, port, frames, rates)
            in enumerate(zip(labels, page_run.run["rt_ports"], page_run.frames, page_run.rates, strict=True))]


def link_record(scenario: Scenario) -> str | None:
    """What runs.trace records of the link: its trace, or the directory of its set (each
    load's own trace is in the run's spec, page_traces)."""
    link = scenario.link
    if link.traces is not None:
        return str(link.traces.root)
    return str(link.trace) if link.trace else None


def page_traces(task: SimTask) -> dict:
    """Each page's trace and offset drawn from the link's set, in the order of the spec's
    `pages` (a report groups loads by them); nothing for a rate or a single trace."""
    if all(p.drawn is None for p in task.pages):
        return {}
    return {"page_traces": [{"trace": p.drawn.name, "offset_s": p.drawn.offset_s} for p in task.pages]}


def run_row(task: SimTask, scenario: Scenario, produced: dict) -> dict:
    """The runs row's fields that do not depend on how the task ended."""
    cell, link = task.cell.cell, scenario.link
    return {
        "cell_key": task.cell.key, "scheduler": cell.scheduler.name, "scheduler_base": cell.scheduler.base,
        "scheduler_options": cell.scheduler.options, "tc_commands": json.dumps(list(task.cell.args)),
        "controller": cell.controller, "rt_flows": json.dumps({"flows": [asdict(f) for f in cell.rt],
                                                               **asdict(scenario.rt)}),
        "repetition": cell.repetition, "mode": scenario.web.mode, "link_rate_bps": link.rate_bps,
        "trace": link_record(scenario), "rtt_s": link.rtt_s,
        "buffer_packets": link.buffer_packets, "results_dir": "", "engine": ENGINE, "time_mode": engines.entry(ENGINE).time_mode,
        "seed": task.cell.seed, "git_commit": produced["git_commit"], "git_dirty": int(produced["git_dirty"]),
        "versions": json.dumps({**produced, "seed": task.cell.seed}, sort_keys=True),
        "spec": json.dumps({"bottleneck": list(task.cell.args), "seed": task.cell.seed, "sim": asdict(scenario.sim),
                            "pages": [p.key for p in task.pages],
                            "page_starts_s": [p.start_s for p in task.pages], "chunk": task.chunk,
                            **page_traces(task)}, sort_keys=True),
    }


def measurement(task: SimTask, scenario: Scenario, produced: dict, result: TaskResult | None, error: str | None,
                started_unix: float, wall_s: float) -> Measurement:
    """One task as one run: its pages, or (failed) the error."""
    data = run_data(result, scenario) if result is not None else None
    row = {**run_row(task, scenario, produced), "started_unix": started_unix, "duration_s": wall_s,
           "host_load": json.dumps(result.host_load) if result is not None else None,
           "status": "ok" if error is None else "failed", "error": error}
    return Measurement(row, data, error)
