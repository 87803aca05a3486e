# SPDX-License-Identifier: MIT
"""`confucius sim alone`: how much of a simulated load's stall its page caused. Each
cell's episode is simulated again without its page, with the options, seed and load start
its run recorded and the link as the sweep played it. The video's stall over each load's
own window is then set beside its stall with the page. ns-3 is deterministic, so up to the
load's start the video is the one the load met (a test compares the frames)."""

from __future__ import annotations

import json
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

from confucius import metrics, rtflow
from confucius.experiment import db_runs
from confucius.experiment.keys import DrawnTrace
from confucius.experiment.scenario import Scenario
from confucius.provenance import programs_not_as_recorded, recorded_programs
from confucius.report.data import PageResult, open_db, page_results

from . import bottleneck as bn
from .plan import LinkTrace, drawn_trace, link_trace
from .worker import rt_log, trace_args

# The bottleneck's options that act only with a page (its tail, and the calm that ends it).
PAGE_ONLY = ("--page-tail=", "--calm=", "--late=")


@dataclass(frozen=True)
class AloneCell:
    """One (scheduler, controller) of a scenario: its loads' stall with the page and the
    video's stall alone over the same windows."""
    scheduler: str
    controller: str
    loads: int
    stall_s: float            # mean per load, with the page
    alone_stall_s: float      # mean per load over the same windows, the video alone
    stalled: int              # loads with a stall, with the page
    alone_stalled: int        # the same windows with a stall, the video alone


@dataclass(frozen=True)
class EpisodeWithoutPage:
    """An episode without its page: the cell's options, the load's start and the link's trace."""
    args: tuple[str, ...]
    start_s: float
    trace: LinkTrace | None


def episode_of(spec: dict, page_id: str, scenario: Scenario) -> EpisodeWithoutPage:
    """The episode a run's page met, as the run's spec records it, less the page: on the
    scenario's trace, or the one the load drew from its set (the spec's page_traces)."""
    number = spec["pages"].index(page_id)
    trace = link_trace(scenario)
    if "page_traces" in spec:
        drawn = spec["page_traces"][number]
        trace = drawn_trace(scenario, DrawnTrace(scenario.link.traces.root / drawn["trace"], drawn["trace"],
                                                 drawn["offset_s"]))
    return EpisodeWithoutPage(tuple(a for a in spec["bottleneck"] if not a.startswith(PAGE_ONLY)),
                              spec["page_starts_s"][number], trace)


def simulate_alone(episode: EpisodeWithoutPage, end_s: float,
                   binary: Path = bn.BOTTLENECK) -> list[list[rtflow.Frame]]:
    """Each video's frames of the episode without its page, until `end_s`."""
    with tempfile.TemporaryDirectory(prefix="confucius-sim-alone-") as folder:
        scratch = Path(folder)
        run = bn.run_bottleneck([*episode.args, f"--duration={end_s}s", f"--frame-log={scratch / 'frames.csv'}",
                                 *trace_args(episode.trace, episode.start_s, scratch)], binary)
        return [rtflow.read_frames(rt_log(scratch, "frames", number)) for number in range(len(run["rt_ports"]))]


def alone_stall_s(per_flow: Sequence[Sequence[rtflow.Frame]], start_s: float, window_ns: int) -> float:
    """The videos' stall over the window, as a load's (metrics.load_metrics: summed over the flows)."""
    start_ns = round(start_s * 1e9)
    return metrics.load_metrics(per_flow, start_ns, start_ns + window_ns).stall_s


def _runs(db, results: list[PageResult], binary: Path) -> dict[int, dict]:
    """The loads' runs' specs; SimError when one is not simulated, or by another program."""
    specs, recorded = {}, {}
    for run_id in sorted({r.run_id for r in results}):
        row = db_runs.run_row(db, run_id)
        if row["engine"] != "ns3":
            raise bn.SimError(f"run {run_id} ran on {row['engine']}, not in the simulator")
        digest = recorded_programs(json.loads(row["versions"] or "{}")).get("bottleneck")
        recorded.setdefault(digest, run_id)
        specs[run_id] = json.loads(row["spec"])
    for digest, run_id in recorded.items():   # the program is read once per digest, not per run
        differ = programs_not_as_recorded({"bottleneck": digest}, {"bottleneck": binary})
        if differ:
            raise bn.SimError(f"run {run_id} was simulated by another program ({differ[0]}): build it, "
                              f"or give it with --binary")
    return specs


def compare(scenario: Scenario, db_path: Path, binary: Path = bn.BOTTLENECK,
            schedulers: Sequence[str] | None = None, controllers: Sequence[str] | None = None) -> list[AloneCell]:
    """Per (scheduler, controller) of the scenario's simulated loads in the database, the
    stall with the page beside the video's alone over the same windows."""
    if scenario.web.mode == "continuous":
        raise bn.SimError(f"{scenario.name}: continuous sessions are not repeated alone: a page's video there "
                          f"is the one the pages before it left, which no run without them repeats")
    db = open_db(db_path)
    results = [r for r in page_results(db, scenario.name)
               if (not schedulers or r.scheduler in schedulers) and (not controllers or r.controller in controllers)]
    if not results:
        raise bn.SimError(f"{db_path} holds no loads of scenario {scenario.name!r}"
                          f"{' for these schedulers and controllers' if schedulers or controllers else ''}")
    specs = _runs(db, results, binary)
    episodes = {r.page_row: episode_of(specs[r.run_id], r.page_id, scenario) for r in results}
    windows = {r.page_row: r.window_end_ns - r.load_start_ns for r in results}
    ends: dict[EpisodeWithoutPage, float] = {}
    for row, episode in episodes.items():
        ends[episode] = max(ends.get(episode, 0.0), episode.start_s + windows[row] / 1e9 + 1.0)
    frames = {episode: simulate_alone(episode, end, binary) for episode, end in ends.items()}
    cells: dict[tuple[str, str], list[tuple[float, float]]] = {}
    for r in results:
        episode = episodes[r.page_row]
        cells.setdefault((r.scheduler, r.controller), []).append(
            (r.stall_s, alone_stall_s(frames[episode], episode.start_s, windows[r.page_row])))
    return [AloneCell(scheduler, controller, len(pairs), metrics.mean(p for p, _ in pairs),
                      metrics.mean(a for _, a in pairs), sum(metrics.stalled(p) for p, _ in pairs),
                      sum(metrics.stalled(a) for _, a in pairs))
            for (scheduler, controller), pairs in sorted(cells.items())]
