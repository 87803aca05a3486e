# SPDX-License-Identifier: MIT
"""`confucius sim traces`: a scenario's simulated loads on a set of traces (`[link]
traces`), grouped by the trace each load drew, as its run's spec records it
(`page_traces`): which traces of a set the stall and the page time come from."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

from confucius import metrics
from confucius.experiment import db_runs
from confucius.experiment.scenario import Scenario
from confucius.report.data import PageResult, open_db, page_results

from . import bottleneck as bn


@dataclass(frozen=True)
class TraceCell:
    """The loads of one (trace, controller, scheduler)."""
    trace: str
    controller: str
    scheduler: str
    loads: int
    stall_s: float            # mean per load
    stalled: int              # loads with a stall
    plt_s: float              # mean over the loads that finished


def drawn_trace_names(db, results: Sequence[PageResult]) -> dict[int, str]:
    """Each load's (by its pages row) trace, from its run's spec; SimError for a run
    without draws (not simulated on a set)."""
    names = {}
    for run_id in sorted({r.run_id for r in results}):
        spec = json.loads(db_runs.run_row(db, run_id)["spec"])
        if "page_traces" not in spec:
            raise bn.SimError(f"run {run_id} records no traces drawn per load: its scenario has no [link] traces")
        by_page = dict(zip(spec["pages"], (d["trace"] for d in spec["page_traces"])))
        names.update({r.page_row: by_page[r.page_key] for r in results if r.run_id == run_id})
    return names


def _natural(text: str) -> list:
    """trace2 before trace10."""
    return [int(part) if part.isdigit() else part for part in re.split(r"(\d+)", text)]


def by_trace(scenario: Scenario, db_path: Path) -> list[TraceCell]:
    """The scenario's loads in the database per (trace, controller, scheduler), traces in
    their natural order, schedulers in the scenario's."""
    db = open_db(db_path)
    results = page_results(db, scenario.name)
    if not results:
        raise bn.SimError(f"{db_path} holds no loads of scenario {scenario.name!r}")
    names = drawn_trace_names(db, results)
    groups: dict[tuple[str, str, str], list[PageResult]] = {}
    for r in results:
        groups.setdefault((names[r.page_row], r.controller, r.scheduler), []).append(r)
    order = {c.name: n for n, c in enumerate(scenario.schedulers)}
    cells = [TraceCell(trace, controller, scheduler, len(loads), metrics.mean(r.stall_s for r in loads),
                       sum(metrics.stalled(r.stall_s) for r in loads), metrics.mean(r.plt_s for r in loads))
             for (trace, controller, scheduler), loads in groups.items()]
    return sorted(cells, key=lambda c: (_natural(c.trace), c.controller, order.get(c.scheduler, len(order))))
