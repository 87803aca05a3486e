# SPDX-License-Identifier: MIT
"""The step-response experiment (scenarios/steps.toml): how each RT controller follows a fall
of the link's capacity on a plain shaped link (issue 12, "Know the controllers").

The run's bandwidth trace is played in a loop from the start of the measured span (the lab's
TracePlayer); every fall of capacity in it is one step, measured until the next change.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from confucius import metrics
from confucius.experiment import db_runs
from confucius.experiment.db import Database
from confucius.experiment.shaping import read_trace

from . import data


@dataclass(frozen=True)
class Step:
    at_ns: int
    from_bps: float
    to_bps: float
    until_ns: int       # the next change of capacity, or the end of the measured span


@dataclass(frozen=True)
class StepRow:
    run_id: int
    scheduler: str
    controller: str
    step: Step
    response: metrics.StepResponse


def _played(trace: dict) -> list[tuple[float, float]]:
    """The trace as the lab plays it: from its offset on, times its scale."""
    points = [(t, bps) for t, bps in read_trace(Path(trace["path"])) if t >= trace["offset_s"]]
    return [(t - points[0][0], bps * trace["scale"]) for t, bps in points]


def capacity_falls(points: list[tuple[float, float]], start_ns: int, end_ns: int) -> list[Step]:
    """Every fall of capacity of `points` (seconds, bit/s) played in a loop from start_ns,
    before end_ns. The loop restarts at the last point's time, as the lab's player does."""
    period_ns = round(points[-1][0] * 1e9)
    if period_ns <= 0:
        return []
    changes = []
    loop_start = start_ns
    while loop_start < end_ns:
        changes += [(loop_start + round(t * 1e9), bps) for t, bps in points[:-1]]
        loop_start += period_ns
    changes.append((end_ns, None))
    steps, previous = [], None
    for (at, bps), (after, _) in zip(changes, changes[1:]):
        if previous is not None and bps < previous and at < end_ns:
            steps.append(Step(at, previous, bps, min(after, end_ns)))
        previous = bps
    return steps


def step_rows(db: Database, scenario: str) -> list[StepRow]:
    """Each fall of capacity in each valid run of `scenario`, with each RT flow's response."""
    rows = []
    for run in db_runs.valid_runs(db, scenario):
        trace = json.loads(run["spec"]).get("trace")
        if not trace:
            raise data.ReportError(f"run {run['id']} of {scenario} has no bandwidth trace: no steps to measure")
        steps = capacity_falls(_played(trace), run["measure_from_ns"], run["measure_to_ns"])
        for flow in db_runs.flows_of_run(db, run["id"], "rt"):
            frames, rates = data.frames(db, flow["id"]), data.rates(db, flow["id"])
            rows += [StepRow(run["id"], run["scheduler"], flow["label"], step,
                             metrics.step_response(frames, rates, step.at_ns, step.until_ns))
                     for step in steps]
    return rows
