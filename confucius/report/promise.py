# SPDX-License-Identifier: MIT
"""Both halves of Confucius's promise, per scenario and RT controller (issue 47): for each
scheduler but the two it is held against, how much of FQ-CoDel's and FQ's stall it removes
and what its pages cost against FQ, each over the pages both measured with a 95 % interval
over pages (intervals.py), and whether the targets hold.

The targets are the issue's reading of the papers (paper 000 §1 and §7.2, paper 002 §V-B):
at least 60 % of FQ-CoDel's stall removed and at least 50 % of FQ's, at most +8 % of PLT
against FQ, and at least half of the pages loading with no penalty. Where a baseline has
no stall at all over the pages there is nothing to remove: that half holds when the
scheduler has none either.

The same loads give seed 002 Fig. 4 (the largest frame delay over the video's bitrate and
the link's capacity): each row's mean largest frame delay per load.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass

from confucius import metrics

from . import intervals
from .data import PageResult, paired, scheduler_order

CODEL, FQ = "fq_codel", "fq"
STALL_REMOVED_VS_CODEL = 0.60
STALL_REMOVED_VS_FQ = 0.50
PLT_VS_FQ = 0.08
NO_PENALTY = 0.50


@dataclass(frozen=True)
class Estimate:
    value: float               # NaN when there is nothing to compare (no pairs, or a zero total)
    low: float                 # 95 % interval over pages (NaN with fewer than two)
    high: float
    pairs: int


NONE = Estimate(math.nan, math.nan, math.nan, 0)


@dataclass(frozen=True)
class PromiseRow:
    scenario: str
    controller: str
    scheduler: str
    loads: int
    link_bps: float | None     # the constant link's rate (None on a trace)
    stall_s: float             # mean stall per load, this scheduler's and the baselines' over the same pages
    codel_stall_s: float
    fq_stall_s: float
    max_delay_ms: float        # mean of each load's largest frame delay (seed 002 Fig. 4)
    removed_vs_codel: Estimate  # 1 − Σstall / ΣFQ-CoDel's stall
    removed_vs_fq: Estimate
    plt_vs_fq: Estimate        # ΣPLT / ΣFQ's PLT − 1
    no_penalty: Estimate       # share of pages loading no slower than under FQ
    median_penalty_ms: float   # the median page's PLT minus FQ's: how large a typical penalty is
    stall_half: bool
    plt_half: bool


def _removed(mine: list[PageResult], theirs: list[PageResult]) -> tuple[Estimate, float, bool]:
    """The stall removed against a baseline over the pages both measured, the baseline's
    mean stall over them, and whether it had no stall at all (nothing to remove)."""
    pairs = paired(mine, theirs, lambda r: r.stall_s)
    if not pairs:
        return NONE, math.nan, False
    theirs_mean = metrics.mean(b for _, b in pairs)
    if sum(b for _, b in pairs) == 0:
        return Estimate(math.nan, math.nan, math.nan, len(pairs)), theirs_mean, True
    value, low, high = intervals.reduction(pairs)
    return Estimate(value, low, high, len(pairs)), theirs_mean, False


def _stall_half_holds(estimate: Estimate, nothing_to_remove: bool, stall_s: float, target: float) -> bool:
    if nothing_to_remove:
        return stall_s == 0
    return not math.isnan(estimate.value) and estimate.value >= target


def _plt_vs_fq(mine: list[PageResult], fq: list[PageResult]) -> tuple[Estimate, Estimate, float]:
    pairs = paired(mine, fq, lambda r: r.plt_s)
    if not pairs:
        return NONE, NONE, math.nan
    flags = [metrics.no_plt_penalty(a, b) for a, b in pairs]
    share_low, share_high = intervals.share_interval(flags)
    return (Estimate(*intervals.change(pairs), len(pairs)),
            Estimate(metrics.share(flags), share_low, share_high, len(pairs)),
            statistics.median(a - b for a, b in pairs) * 1e3)


def _row(scenario: str, controller: str, scheduler: str, mine: list[PageResult],
         codel: list[PageResult], fq: list[PageResult]) -> PromiseRow:
    stall_s = metrics.mean(r.stall_s for r in mine)
    vs_codel, codel_stall, codel_clean = _removed(mine, codel)
    vs_fq, fq_stall, fq_clean = _removed(mine, fq)
    plt, no_penalty, median_penalty_ms = _plt_vs_fq(mine, fq)
    links = {r.link_bps for r in mine}
    return PromiseRow(
        scenario=scenario, controller=controller, scheduler=scheduler, loads=len(mine),
        link_bps=links.pop() if len(links) == 1 else None,
        stall_s=stall_s, codel_stall_s=codel_stall, fq_stall_s=fq_stall,
        max_delay_ms=metrics.mean(r.max_delay_ms for r in mine),
        removed_vs_codel=vs_codel, removed_vs_fq=vs_fq, plt_vs_fq=plt, no_penalty=no_penalty,
        median_penalty_ms=median_penalty_ms,
        stall_half=(_stall_half_holds(vs_codel, codel_clean, stall_s, STALL_REMOVED_VS_CODEL)
                    and _stall_half_holds(vs_fq, fq_clean, stall_s, STALL_REMOVED_VS_FQ)),
        plt_half=(not math.isnan(plt.value) and plt.value <= PLT_VS_FQ
                  and no_penalty.value >= NO_PENALTY))


def promise_rows(results: list[PageResult], schedulers: list[str] | None = None) -> list[PromiseRow]:
    """A row per scenario, controller and scheduler other than fq_codel and fq (in
    `schedulers`' order, else by name), for the scenarios where both baselines ran."""
    groups: dict[tuple[str, str], dict[str, list[PageResult]]] = {}
    for r in results:
        groups.setdefault((r.scenario, r.controller), {}).setdefault(r.scheduler, []).append(r)
    order = scheduler_order(schedulers)
    rows = []
    for (scenario, controller), by_scheduler in groups.items():
        if CODEL not in by_scheduler or FQ not in by_scheduler:
            continue
        names = sorted((s for s in by_scheduler if s not in (CODEL, FQ)), key=order)
        rows += [_row(scenario, controller, s, by_scheduler[s], by_scheduler[CODEL], by_scheduler[FQ])
                 for s in names]
    return rows
