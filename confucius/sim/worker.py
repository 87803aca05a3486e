# SPDX-License-Identifier: MIT
"""What a worker does with a task (plan.SimTask): each page's episode (or the task's
session) in the bottleneck program, its JSON, the video's frame and rate logs and the
scheduler's samples read back (by the lab's own readers: the files have the lab's
formats). Runs anywhere the bottleneck is built (a Dask worker, or this process); touches
no database."""

from __future__ import annotations

import platform
import time
from dataclasses import dataclass, replace
from pathlib import Path

from confucius import rtflow
from confucius.cluster import scratch_directory
from confucius.experiment.results import HostSample, host_load, read_samples
from confucius.provenance import programs_not_as_recorded

from . import bottleneck as bn
from .plan import LinkTrace, SimPage, SimTask, run_options, trace_text


@dataclass(frozen=True)
class BottleneckRun:
    """One run of the bottleneck program: a page's episode, or a session of the task's pages."""
    pages: tuple[SimPage, ...]
    run: dict                    # the bottleneck's JSON (each load's report: web-client's format)
    frames: list[list[rtflow.Frame]]               # per RT flow, in the order of its ports (run["rt_ports"])
    rates: list[list[rtflow.RateSample]]           # per RT flow: its sender's rate log
    qdisc_samples: list[tuple[int, list[dict]]]    # the scheduler's statistics (tc -s -j qdisc's form)
    qdisc_flows: list[tuple[int, list[dict]]]      # Confucius's flows (rtnl.flow_xstats's form)

    @property
    def loads(self) -> list[dict]:
        """Each page's load as the bottleneck reports it (plt_s, report ...), in `pages`' order."""
        if self.run["session"] is None:
            return [self.run["page"]]
        return [page["load"] for page in self.run["session"]]


@dataclass(frozen=True)
class TaskResult:
    task: SimTask
    runs: list[BottleneckRun]    # an episode per page, or the session
    started_unix: float
    wall_s: float
    host_load: dict      # the worker's host meanwhile (results.host_load): what its wall clock means


def simulate(task: SimTask, binary: Path = bn.BOTTLENECK, digest: str | None = None) -> TaskResult:
    """Every page of the task, one bottleneck run each or one for the session; SimError
    when one fails, or when `binary` here is not the program of `digest` (the one the
    sweep records)."""
    differ = programs_not_as_recorded({"bottleneck": digest}, {"bottleneck": binary}) if digest else []
    if differ:
        raise bn.SimError(f"{platform.node()} runs another program than the sweep records ({differ[0]}): "
                          f"build the same tree wherever its tasks run")
    started, clock, host = time.time(), time.monotonic(), HostSample.now()
    runs_of = [task.pages] if task.session else [(page,) for page in task.pages]
    with scratch_directory("confucius-sim-") as scratch:
        runs = [simulate_run(task, pages, Path(scratch), binary) for pages in runs_of]
    return TaskResult(task, runs, started, time.monotonic() - clock, host_load(host, HostSample.now()))


def simulate_run(task: SimTask, pages: tuple[SimPage, ...], scratch: Path,
                 binary: Path = bn.BOTTLENECK) -> BottleneckRun:
    """One run of the task's cell, its files in `scratch`: one page's episode, or the
    session of `pages`, the first one's trace and sampling for all of it."""
    first, last = pages[0], pages[-1]
    args = [*run_options(task, pages), *load_args(task, pages, scratch),
            f"--frame-log={scratch / 'frames.csv'}", f"--rate-log={scratch / 'rates.csv'}",
            *first.sampling.args(scratch), *trace_args(session_trace(first.trace, last.start_s - first.start_s),
                                                       first.start_s, scratch)]
    run = bn.run_bottleneck(args, binary)
    try:
        logs = [rt_logs(scratch, number) for number in range(len(run["rt_ports"]))]
    except rtflow.RtflowError as err:
        raise bn.SimError(f"page {first.key}: {err}") from None
    return BottleneckRun(pages, run, [frames for frames, _ in logs], [rates for _, rates in logs],
                         read_samples(scratch / "qdisc.jsonl", "qdiscs"), read_samples(scratch / "flows.jsonl", "flows"))


def load_args(task: SimTask, pages: tuple[SimPage, ...], scratch: Path) -> list[str]:
    """The bottleneck's option for what the run loads, its files written into `scratch`:
    an episode's page, or the session's pages with their starts."""
    files = []
    for number, page in enumerate(pages):
        files.append(scratch / f"page-{number}.txt")
        files[-1].write_text(page.text)
    if not task.session:
        return [f"--page={files[0]}"]
    (scratch / "session.txt").write_text("".join(f"{page.start_s} {file}\n" for page, file in zip(pages, files)))
    return [f"--session={scratch / 'session.txt'}"]


def session_trace(trace: LinkTrace | None, span_s: float) -> LinkTrace | None:
    """The link's trace for a run whose last load starts `span_s` after its first."""
    return trace if trace is None or not span_s else replace(trace, end_s=trace.end_s + span_s)


def rt_log(scratch: Path, kind: str, number: int) -> Path:
    """The `kind` log (frames, rates) of the RT flow `number` as the bottleneck names them:
    frames.csv for the first, frames-1.csv for the second, ..."""
    return scratch / f"{kind}{f'-{number}' if number else ''}.csv"


def rt_logs(scratch: Path, number: int) -> tuple[list[rtflow.Frame], list[rtflow.RateSample]]:
    """The frame and rate logs of the RT flow `number`."""
    return (rtflow.read_frames(rt_log(scratch, "frames", number)),
            rtflow.read_rates(rt_log(scratch, "rates", number)))


def trace_args(trace: LinkTrace | None, start_s: float, scratch: Path) -> list[str]:
    """The bottleneck's option for the link's trace of an episode whose load starts at
    `start_s`, its file written into `scratch`; none for a constant rate."""
    if trace is None:
        return []
    (scratch / "trace.txt").write_text(trace_text(trace, start_s))
    return [f"--trace={scratch / 'trace.txt'}"]
