# SPDX-License-Identifier: MIT
"""The controlled workloads of paper 000 §7.3 and appendix C.2: pages of N Web flows of one
size each (`[web.sweep]`, pages named flows-N-size-B), per scenario, controller and
scheduler:

- Fig. 14: the number of flows swept at one size (scenarios/sweep-flows.toml);
- Fig. 15: the size swept at one number (scenarios/sweep-sizes.toml);
- Fig. 25: the fairness (JFI) of the RT flow and the page's flows while they compete,
  against the number of competitors (scenarios/seeds-fig25.toml).

Each point gives the RT flow's stall, the PLT against fq over the same pages and the load's
JFI (metrics.load_jfi). Within a scenario the number sweep holds the size at its most
common value and the size sweep the number at its own; a point can be on both.

Beside them, the theory the seed draws as a dashed line (Table 1, models/bounds.py): the
papers' schedule costs a page at most log2(e)/λ against FQ, at the seeds' 1/λ = 250 ms
(the default `interval`), whatever its number and size of flows.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from confucius import metrics
from confucius.models import bounds

from . import intervals
from .data import PageResult, paired, scheduler_order
from .summary import BASELINE

SWEEP_PAGE = re.compile(r"^flows-(\d+)-size-(\d+)$")
# The seeds' 1/λ (and the qdisc's default interval), for the theory lines.
SEEDS_LAMBDA = 1 / 0.25


@dataclass(frozen=True)
class SweepPoint:
    scenario: str
    controller: str
    scheduler: str
    swept: str                 # "flows" or "sizes": which sweep the point is on
    flows: int
    size_bytes: int
    loads: int
    stall_s: float             # mean stall per load
    stalled_share: float       # loads with a stall
    plt_s: float
    degradation_s: float       # mean PLT − fq's over the same pages
    plt_vs_fq: float           # Σ PLT / Σ fq's − 1 over the same pages
    plt_vs_fq_low: float
    plt_vs_fq_high: float
    jfi: float                 # mean over loads of the JFI of the page's flows and the RT flow's


def _most_common(values: list[int]) -> int:
    return max(sorted(set(values)), key=values.count)


def _point(scenario: str, controller: str, scheduler: str, swept: str, flows: int, size: int,
           loads: list[PageResult], fq: list[PageResult]) -> SweepPoint:
    pairs = paired(loads, fq, lambda r: r.plt_s)
    change, low, high = intervals.change(pairs)
    return SweepPoint(scenario, controller, scheduler, swept, flows, size, len(loads),
                      stall_s=metrics.mean(r.stall_s for r in loads),
                      stalled_share=metrics.share([metrics.stalled(r.stall_s) for r in loads]),
                      plt_s=metrics.mean(r.plt_s for r in loads),
                      degradation_s=metrics.mean(a - b for a, b in pairs),
                      plt_vs_fq=change, plt_vs_fq_low=low, plt_vs_fq_high=high,
                      jfi=metrics.mean(r.jfi for r in loads))


def sweep_points(results: list[PageResult], schedulers: list[str] | None = None) -> list[SweepPoint]:
    """The sweep pages' points, per scenario and controller, each sweep's points by
    scheduler (in `schedulers`' order, else by name) and then by what is swept."""
    cells: dict[tuple[str, str], dict[tuple[str, int, int], list[PageResult]]] = {}
    for r in results:
        match = SWEEP_PAGE.match(r.page_key)
        if match:
            key = (r.scheduler, int(match.group(1)), int(match.group(2)))
            cells.setdefault((r.scenario, r.controller), {}).setdefault(key, []).append(r)
    order = scheduler_order(schedulers)
    points = []
    for (scenario, controller), by_cell in sorted(cells.items()):
        size_fixed = _most_common([size for _, _, size in by_cell])
        flows_fixed = _most_common([n for _, n, _ in by_cell])
        cell_order = sorted(by_cell, key=lambda k: (*order(k[0]), k[1], k[2]))
        for swept, on_sweep in (("flows", lambda n, size: size == size_fixed),
                                ("sizes", lambda n, size: n == flows_fixed)):
            for scheduler, n, size in cell_order:
                if on_sweep(n, size):
                    points.append(_point(scenario, controller, scheduler, swept, n, size,
                                         by_cell[(scheduler, n, size)], by_cell.get((BASELINE, n, size), [])))
    return points


def theory_degradation_s(lam: float = SEEDS_LAMBDA) -> float:
    """Table 1's bound on the papers' schedule's PLT cost against FQ (Eq. 32), in seconds."""
    return bounds.fct_degradation_bound_confucius(lam)
