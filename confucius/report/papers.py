# SPDX-License-Identifier: MIT
"""The papers' evaluation (paper 000 §7.2, paper 002 §V-B) measured again: each figure the
papers give for 1000 websites beside ours, from the page loads of any database (lab or
simulated), per scenario and RT controller.

The papers' figures are for the RT flow under Copa on the cellular traces C1 (their Fig. 10(a),
broken down in Fig. 11 and 12 of paper 000, Fig. 12 and 13 of paper 002; "the results when
using GCC and BBR are similar"), except the headline reductions against FQ-CoDel, which
span their traces and CCAs (paper 000 §1). Every measured figure comes from
confucius/metrics.py; ratios are over the pages both schedulers met, with a 95 % paired
bootstrap interval over pages (intervals.py).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable, Sequence

from confucius import metrics
from confucius.experiment.schedulers import SCHEDULERS

from . import intervals
from .data import PageResult, paired, scheduler_order
from .summary import BASELINE

CODEL = "fq_codel"


@dataclass(frozen=True)
class PaperRow:
    """One of the papers' figures for one scheduler, beside ours."""
    scenario: str
    controller: str
    quantity: str
    scheduler: str
    measured: float
    unit: str                  # "%" a share or a reduction, "±%" a change, "/1000" loads per 1000, "ms", "s"
    low: float                 # 95 % interval over pages (NaN where none is computed)
    high: float
    loads: int                 # loads the figure is over (pairs for comparisons)
    paper: str                 # the papers' figure, as they give it ("" where they give none); the
                               # name of the table's column and of the JSON key `report papers` prints
    source: str


# The papers' figures: quantity -> {scheduler: (figure, where)}. "*" is every scheduler the
# papers' sentence covers that has no figure of its own.
_UNLABELLED = "the unlabelled baselines (FIFO 288 ... SJF 537)"
PAPER_FIGURES: dict[str, dict[str, tuple[str, str]]] = {
    "stall reduction vs fq_codel": {
        "confucius": ("60-69 %", "000 §1, 002 §I (traces, CCAs)")},
    "PLT reduction vs fq_codel": {
        "confucius": ("39-48 %", "000 §1, 002 §I (traces, CCAs)")},
    "PLT vs fq": {
        "confucius": ("<= +8 % (<= 88 ms)", "000 §7.2 Fig. 10, 002 §V-B")},
    "mean stall per load": {
        "confucius": ("< 100 ms", "000 §7.2 Fig. 10(a) (Copa)"),
        "fq_codel": ("200-300 ms", "000 §7.2 Fig. 10(a) (Copa)"),
        "pfifo": ("200-300 ms", "000 §7.2 Fig. 10(a) (Copa)")},
    "loads with a stall": {
        "confucius": ("136 /1000", "000 Fig. 11(a), 002 Fig. 12(a)"),
        "pfifo": ("288 /1000", "000 Fig. 11(a), 002 Fig. 12(a)"),
        "*": ("288-537 /1000", "000 Fig. 11(a): " + _UNLABELLED)},
    "loads with a stall > 190 ms": {
        "confucius": ("136 /1000", "000 §7.2 text (\"not negligible or shorter than 190 ms\")"),
        "pfifo": ("288 /1000", "000 §7.2 text"),
        "*": ("288-537 /1000", "000 §7.2 text: " + _UNLABELLED)},
    "loads with PLT > 2 s": {
        "confucius": ("127 /1000", "000 Fig. 11(b), 002 Fig. 12(b)"),
        "fq_codel": ("227 /1000", "000 Fig. 11(b), 002 Fig. 12(b)"),
        "fq": ("about confucius's", "000 Fig. 11(b) (\"comparable\")")},
    "loads with a stall > 500 ms": {
        "confucius": ("1 %", "000 Fig. 12(a), 002 Fig. 13(a)"),
        "fq_codel": ("18 %", "000 Fig. 12(a), 002 Fig. 13(a)"),
        "pfifo": ("12 %", "000 Fig. 12(a), 002 Fig. 13(a)")},
    "loads with max delay > 500 ms": {
        "confucius": ("1 %", "000 Fig. 12(c), 002 Fig. 13(c)"),
        "fq_codel": ("18 %", "000 Fig. 12(c), 002 Fig. 13(c)"),
        "pfifo": ("5 %", "000 Fig. 12(c), 002 Fig. 13(c)")},
    "loads with no PLT penalty vs fq": {
        "confucius": ("60 %", "000 Fig. 12(b), 002 Fig. 13(b)")},
}
LONG_STALL_S = 0.5         # paper 000 Fig. 12(a) and (c) are read at 500 ms
LONG_DELAY_MS = 500.0


def _paper_figure(quantity: str, base: str) -> tuple[str, str]:
    """The papers' figure for a scheduler (by its lab name, `scheduler_base`): every
    Confucius stands beside the papers' Confucius; the unlabelled baselines without a figure
    of their own beside the range the papers give for all of them."""
    figures = PAPER_FIGURES[quantity]
    known = SCHEDULERS.get(base)
    confucius = known is not None and known.kind == "confucius"
    found = figures.get("confucius" if confucius else base)
    if found:
        return found
    if "*" in figures and known is not None and not confucius and known.rt_weight is None:
        return figures["*"]
    return "", ""


def _share_row(loads: list[PageResult], flag: Callable[[PageResult], bool], per_1000: bool):
    flags = [flag(r) for r in loads]
    low, high = intervals.share_interval(flags)
    scale = 1000 if per_1000 else 1
    value = metrics.per_thousand(flags) if per_1000 else metrics.share(flags)
    return value, low * scale, high * scale, len(flags), "/1000" if per_1000 else "%"


def _comparisons(loads: list[PageResult], codel: list[PageResult], fq: list[PageResult]) -> dict:
    """Quantities that pair a scheduler's loads with another's: (value, low, high, pairs, unit)."""
    found = {}
    if codel:
        for quantity, attribute in (("stall reduction vs fq_codel", "stall_s"), ("PLT reduction vs fq_codel", "plt_s")):
            pairs = paired(loads, codel, lambda r, a=attribute: getattr(r, a))
            if pairs:
                found[quantity] = (*intervals.reduction(pairs), len(pairs), "%")
    if fq:
        baseline = {r.pair_key: r.plt_s for r in fq}
        mean_s, relative, count = metrics.degradation({r.pair_key: r.plt_s for r in loads}, baseline)
        if count:
            pairs = paired(loads, fq, lambda r: r.plt_s)
            low, high = intervals.ratio_interval(pairs)
            found["PLT vs fq"] = (relative, low - 1, high - 1, count, "±%")
            found["mean PLT difference vs fq"] = (mean_s * 1e3, math.nan, math.nan, count, "ms")
            penalties = [metrics.no_plt_penalty(r.plt_s, baseline[r.pair_key]) for r in loads
                         if r.plt_s is not None and baseline.get(r.pair_key) is not None]
            low, high = intervals.share_interval(penalties)
            found["loads with no PLT penalty vs fq"] = (metrics.share(penalties), low, high, len(penalties), "%")
    return found


def _quantities(loads: list[PageResult], codel: list[PageResult], fq: list[PageResult]) -> dict:
    """Every quantity of one scheduler's loads: (value, low, high, loads, unit)."""
    found = {"mean stall per load": (metrics.mean(r.stall_s for r in loads) * 1e3, math.nan, math.nan,
                                     len(loads), "ms"),
             "mean PLT": (metrics.mean(r.plt_s for r in loads), math.nan, math.nan, len(loads), "s"),
             "loads with a stall": _share_row(loads, lambda r: metrics.stalled(r.stall_s), True),
             "loads with a stall > 190 ms": _share_row(
                 loads, lambda r: metrics.stalled(r.stall_s, metrics.STALL_THRESHOLD_S), True),
             "loads with PLT > 2 s": _share_row(loads, lambda r: metrics.long_plt(r.plt_s), True),
             "loads with a stall > 500 ms": _share_row(loads, lambda r: metrics.stalled(r.stall_s, LONG_STALL_S),
                                                       False),
             "loads with max delay > 500 ms": _share_row(loads, lambda r: r.max_delay_ms > LONG_DELAY_MS, False)}
    found.update(_comparisons(loads, codel, fq))
    return found


ORDER = ("stall reduction vs fq_codel", "PLT reduction vs fq_codel", "PLT vs fq", "mean PLT difference vs fq",
         "mean stall per load", "mean PLT", "loads with a stall", "loads with a stall > 190 ms",
         "loads with PLT > 2 s", "loads with a stall > 500 ms", "loads with max delay > 500 ms",
         "loads with no PLT penalty vs fq")


def paper_rows(results: list[PageResult], schedulers: Sequence[str] | None = None) -> list[PaperRow]:
    """The table: per scenario, controller and quantity (ORDER), a row per scheduler
    (in `schedulers`' order, else by name) with the papers' figure where they give one. A
    scheduler is not compared with itself."""
    groups: dict[tuple[str, str], dict[str, list[PageResult]]] = {}
    for r in results:
        groups.setdefault((r.scenario, r.controller), {}).setdefault(r.scheduler, []).append(r)
    order = scheduler_order(schedulers)
    rows = []
    for (scenario, controller), by_scheduler in sorted(groups.items()):
        names = sorted(by_scheduler, key=order)
        found = {s: _quantities(by_scheduler[s], by_scheduler.get(CODEL, []) if s != CODEL else [],
                                by_scheduler.get(BASELINE, []) if s != BASELINE else []) for s in names}
        for quantity in ORDER:
            for s in names:
                if quantity not in found[s]:
                    continue
                value, low, high, loads, unit = found[s][quantity]
                figure, source = _paper_figure(quantity, by_scheduler[s][0].scheduler_base) if quantity in PAPER_FIGURES \
                    else ("", "")
                rows.append(PaperRow(scenario, controller, quantity, s, value, unit, low, high, loads, figure, source))
    return rows


def formatted(value: float, unit: str) -> str:
    """A measured figure in its unit ("–" for NaN)."""
    if math.isnan(value):
        return "–"
    return {"%": f"{value:.1%}", "±%": f"{value:+.1%}", "/1000": f"{value:.0f} /1000",
            "ms": f"{value:.0f} ms", "s": f"{value:.2f} s"}[unit]
