# SPDX-License-Identifier: MIT
"""The comparison table: one row per scheduler and RT controller, over the page loads."""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass

from confucius import metrics

from . import intervals
from .data import PageResult, scheduler_order

BASELINE = "fq"  # PLT degradation is measured against fair queueing without AQM (the papers' FQ)
# RT controllers whose sender paces at a multiple of its target, so that media held in it
# means the sender lacked the CPU (Copa's window and TCP's socket hold media by design).
PACED_CONTROLLERS = frozenset({"gcc", "pion-gcc", "fixed"})


def starved(result: PageResult, max_held_ms: float) -> bool:
    """A load whose paced RT sender held more than `max_held_ms` of media."""
    paced = all(c in PACED_CONTROLLERS for c in result.controller.split("+"))
    return paced and result.sender_backlog_ms > max_held_ms


def started_low(result: PageResult, min_start: float) -> bool:
    """A load whose RT flow went into it below `min_start` × the link rate: its warm-up
    settled low (under TCG, Copa can settle at 1–2 Mbit/s of 20), so a stall in it is not
    all the page load's doing. Loads on a trace (no constant rate) are never low."""
    return (result.link_bps is not None and result.rt_target_bps is not None
            and result.rt_target_bps < min_start * result.link_bps)


def common_loads(results: list[PageResult]) -> list[PageResult]:
    """The loads of pages measured under every scheduler of their scenario (same controller
    and repetition), so that each controller's rows cover the same pages: a resumed matrix
    stopped mid-chunk has pages that only some schedulers met."""
    schedulers: dict[str, set[str]] = {}
    measured: dict[tuple, set[str]] = {}
    for r in results:
        schedulers.setdefault(r.scenario, set()).add(r.scheduler)
        measured.setdefault(r.pair_key, set()).add(r.scheduler)
    return [r for r in results if measured[r.pair_key] == schedulers[r.scenario]]


@dataclass
class SummaryRow:
    scheduler: str
    controller: str
    loads: int
    stall_s: float            # mean stall duration per page load
    stall_share: float        # share of loads with any stall
    max_delay_ms: float       # mean over loads of the largest frame delay
    p99_delay_ms: float       # 99th percentile of every frame delay in the loads' windows
    lost_share: float         # share of frames that never arrived whole
    rt_mbps: float            # RT throughput (payload) over the loads' windows
    plt_s: float              # mean PLT
    degradation_s: float      # mean PLT - PLT under the baseline, same pages
    degradation: float        # total PLT difference / total baseline PLT
    paired: int               # loads paired with the baseline
    long_plt_share: float     # share of loads with PLT > 2 s (or failed)
    jfi: float                # mean JFI over loads
    converged_share: float    # loads whose RT flow had converged before
    rewarmed: int             # loads whose RT flow was warmed up more than once
    sender_backlog_ms: float  # mean over loads of the RT sender's largest backlog
    also: dict[str, float]    # degradation against each further baseline, by its name


def _plts(results: list[PageResult], scheduler: str) -> dict[tuple, float | None]:
    return {r.pair_key: r.plt_s for r in results if r.scheduler == scheduler}


def summarize(results: list[PageResult], baseline: str = BASELINE,
              also: tuple[str, ...] = ()) -> list[SummaryRow]:
    """One row per scheduler and controller; PLT degradation against `baseline`, and
    against each scheduler of `also` (its relative figure only)."""
    groups: dict[tuple[str, str], list[PageResult]] = {}
    for r in results:
        groups.setdefault((r.scheduler, r.controller), []).append(r)
    baseline_plt = _plts(results, baseline)
    also_plt = {name: _plts(results, name) for name in also}
    rows = []
    for (scheduler, controller), loads in groups.items():
        mine = {r.pair_key: r.plt_s for r in loads}
        degradation_s, degradation, paired = metrics.degradation(mine, baseline_plt)
        rows.append(SummaryRow(
            scheduler=scheduler, controller=controller, loads=len(loads),
            stall_s=metrics.mean(r.stall_s for r in loads),
            stall_share=metrics.share(metrics.stalled(r.stall_s) for r in loads),
            max_delay_ms=metrics.mean(r.max_delay_ms for r in loads),
            p99_delay_ms=metrics.nearest_rank([d for r in loads for d in r.delays_ms], 99),
            lost_share=metrics.mean(r.lost_share for r in loads),
            rt_mbps=metrics.mean(r.rt_bps for r in loads) / 1e6,
            plt_s=metrics.mean(r.plt_s for r in loads),
            degradation_s=degradation_s, degradation=degradation, paired=paired,
            long_plt_share=metrics.share(metrics.long_plt(r.plt_s) for r in loads),
            jfi=metrics.mean(r.jfi for r in loads),
            converged_share=metrics.share(bool(r.converged) for r in loads),
            rewarmed=sum((r.warmups or 1) > 1 for r in loads),
            sender_backlog_ms=metrics.mean(r.sender_backlog_ms for r in loads),
            also={name: metrics.degradation(mine, plts)[1] for name, plts in also_plt.items()}))
    return rows


# The targets for confucius (issue 12): stall duration against fq_codel's and CAKE's,
# share of loads with a stall, PLT degradation against FQ.
STALL_RATIO_TARGETS = (("fq_codel", 0.5), ("cake", 0.7))
STALL_SHARE_TARGET = 0.25
DEGRADATION_TARGET = 0.10


@dataclass
class TargetCheck:
    """One target for one controller: the measured value, its 95 % interval over pages
    (paired bootstrap for ratios, Wilson for the share) and the bound."""
    controller: str
    name: str
    value: float
    low: float
    high: float
    bound: float
    unit: str                 # "×" a ratio, "%" a share, "±%" a relative change

    @property
    def met(self) -> bool:
        return self.value <= self.bound


def _paired(mine: dict, theirs: dict, attribute: str) -> list[tuple[float, float]]:
    values = [(getattr(mine[k], attribute), getattr(theirs[k], attribute)) for k in mine if k in theirs]
    return [(a, b) for a, b in values if a is not None and b is not None]


def target_checks(results: list[PageResult], baseline: str = BASELINE) -> list[TargetCheck]:
    """The issue's targets for confucius, per controller, over the pages each pair of
    schedulers both measured."""
    loads: dict[tuple[str, str], dict[tuple, PageResult]] = {}
    for r in results:
        loads.setdefault((r.scheduler, r.controller), {})[r.pair_key] = r
    checks = []
    for controller in sorted({c for s, c in loads if s == "confucius"}):
        mine = loads["confucius", controller]
        for other, bound in STALL_RATIO_TARGETS:
            pairs = _paired(mine, loads.get((other, controller), {}), "stall_s")
            ratio = metrics.ratio_of_sums(pairs)
            if not math.isnan(ratio):
                checks.append(TargetCheck(controller, f"stall vs {other}", ratio,
                                          *intervals.ratio_interval(pairs), bound, "×"))
        stalled = [metrics.stalled(r.stall_s) for r in mine.values()]
        checks.append(TargetCheck(controller, "loads with a stall", metrics.share(stalled),
                                  *intervals.share_interval(stalled), STALL_SHARE_TARGET, "%"))
        pairs = _paired(mine, loads.get((baseline, controller), {}), "plt_s")
        ratio = metrics.ratio_of_sums(pairs)
        if not math.isnan(ratio):
            low, high = intervals.ratio_interval(pairs)
            checks.append(TargetCheck(controller, f"PLT degradation vs {baseline}", ratio - 1,
                                      low - 1, high - 1, DEGRADATION_TARGET, "±%"))
    return checks


def ordered(rows: list, schedulers: list[str] | None = None) -> list:
    """Rows with a controller and a scheduler (the summary's, the stalls report's): by
    controller, then in the given scheduler order (else by name)."""
    order = scheduler_order(schedulers)
    return sorted(rows, key=lambda r: (r.controller, *order(r.scheduler)))


def rows_json(rows) -> str:
    """Dataclass rows as a JSON list, every NaN (a figure there is none of) as null, in
    nested lists and dicts too: the --json of every report."""
    def clean(value):
        if isinstance(value, dict):
            return {k: clean(v) for k, v in value.items()}
        if isinstance(value, (list, tuple)):
            return [clean(v) for v in value]
        return None if isinstance(value, float) and math.isnan(value) else value
    return json.dumps([clean(asdict(r)) for r in rows], indent=1)


def fmt(value: float, pattern: str) -> str:
    return "–" if value is None or (isinstance(value, float) and math.isnan(value)) else pattern.format(value)
