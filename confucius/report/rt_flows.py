# SPDX-License-Identifier: MIT
"""Seed 000 Fig. 29 (appendix C.5): the page loads with 1 to N real-time flows side by side
(scenarios/seeds-fig29.toml), per controller, scheduler and number of flows: the stall per
RT flow (the seed's "average duration of delay degradation of real-time flows"), the loads
with a stall, and the pages' load time against fq with its interval.

A load's stall is summed over its RT flows (metrics.load_metrics), so the stall per flow is
that sum over the number of flows. Cells whose flows run different controllers
(`gcc+copa`) are a family of their own.
"""

from __future__ import annotations

from dataclasses import dataclass

from confucius import metrics

from . import intervals
from .data import PageResult, paired, scheduler_order
from .summary import BASELINE


@dataclass(frozen=True)
class FlowCountCell:
    scenario: str
    controller: str             # the flows' controller ("gcc"), or the mixed set's label
    flows: int                  # RT flows side by side
    scheduler: str
    loads: int
    stall_per_flow_s: float     # mean over loads of the load's stall over the number of flows
    stalled_share: float        # loads where any flow stalled
    max_delay_ms: float         # mean of the loads' largest frame delays (over every flow's frames)
    plt_s: float
    plt_vs_fq: float            # Σ PLT / Σ fq's PLT − 1, over the pages both loaded with as many flows
    plt_vs_fq_low: float
    plt_vs_fq_high: float


def family(controller: str) -> tuple[str, int]:
    """A cell's controller label as (the flows' controller, their number): gcc+gcc → (gcc, 2);
    a mixed set keeps its label."""
    labels = controller.split("+")
    return (labels[0] if len(set(labels)) == 1 else controller), len(labels)


def flow_count_cells(results: list[PageResult], schedulers: list[str] | None = None) -> list[FlowCountCell]:
    """A cell per scenario, controller family, number of flows and scheduler (in
    `schedulers`' order, else by name)."""
    groups: dict[tuple[str, str, int], dict[str, list[PageResult]]] = {}
    for r in results:
        groups.setdefault((r.scenario, *family(r.controller)), {}).setdefault(r.scheduler, []).append(r)
    order = scheduler_order(schedulers)
    cells = []
    for (scenario, controller, flows), by_scheduler in sorted(groups.items()):
        fq = by_scheduler.get(BASELINE, [])
        for scheduler in sorted(by_scheduler, key=order):
            loads = by_scheduler[scheduler]
            vs_fq = intervals.change(paired(loads, fq, lambda r: r.plt_s))
            cells.append(FlowCountCell(
                scenario, controller, flows, scheduler, len(loads),
                stall_per_flow_s=metrics.mean(r.stall_s / flows for r in loads),
                stalled_share=metrics.share([metrics.stalled(r.stall_s) for r in loads]),
                max_delay_ms=metrics.mean(r.max_delay_ms for r in loads),
                plt_s=metrics.mean(r.plt_s for r in loads if r.plt_s is not None),
                plt_vs_fq=vs_fq[0], plt_vs_fq_low=vs_fq[1], plt_vs_fq_high=vs_fq[2]))
    return cells
