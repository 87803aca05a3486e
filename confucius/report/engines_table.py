# SPDX-License-Identifier: MIT
"""The same pages in two databases, e.g. the simulator's and the lab's: per scheduler and
controller, over the pages both loaded validly, each one's mean PLT, stall and largest frame
delay, and the ratio of their PLTs (Σ PLT in the first over Σ PLT in the second,
metrics.ratio_of_sums) with its paired bootstrap interval over those pages
(intervals.ratio_interval). It is how the simulator is held to the real kernel (issue 45 item
5: its baselines' page loads within 10 % of the lab's).

A page pairs with its namesake: the same scheduler, controller, repetition and page key. The
scenario's name is not compared, so a copy of a scenario that keeps fewer pages (`sample =
20`) pairs with the full one; a database that loaded a page in two scenarios is refused
unless `scenario` keeps one name in both."""

from __future__ import annotations

from dataclasses import dataclass

from confucius import metrics
from confucius.experiment.db import Database

from . import intervals
from .data import PageResult, ReportError, page_results


@dataclass(frozen=True)
class EnginesRow:
    scheduler: str
    controller: str
    pages: int                   # the pages both databases loaded validly
    plt_s: float                 # mean PLT in the first database
    other_plt_s: float           # and in the second
    plt_ratio: float             # Σ PLT first / Σ PLT second
    plt_ratio_low: float         # its 95 % paired bootstrap interval
    plt_ratio_high: float
    stall_s: float
    other_stall_s: float
    max_delay_ms: float
    other_max_delay_ms: float


def _by_page(results: list[PageResult]) -> dict[tuple[str, str], dict[tuple, PageResult]]:
    """Each scheduler's and controller's finished loads, by repetition and page key; a page
    that two scenarios loaded (e.g. at two rates) is refused, as its pair would be a guess."""
    found: dict[tuple[str, str], dict[tuple, PageResult]] = {}
    for page in results:
        if page.plt_s is None:
            continue
        pages = found.setdefault((page.scheduler, page.controller), {})
        key = (page.repetition, page.page_key)
        if key in pages and pages[key].scenario != page.scenario:
            raise ReportError(f"page {page.page_key} under {page.scheduler} / {page.controller} was loaded in "
                              f"scenarios {pages[key].scenario} and {page.scenario}: give --scenario")
        pages[key] = page
    return found


def rows(db: Database, other: Database, scenario: str | None = None) -> list[EnginesRow]:
    """The comparison of two databases' valid loads (of one scenario, or all)."""
    return compare(page_results(db, scenario), page_results(other, scenario))


def compare(results: list[PageResult], others: list[PageResult]) -> list[EnginesRow]:
    """One row per scheduler and controller that both sets of loads have on common pages, in
    the first set's order."""
    mine, theirs = _by_page(results), _by_page(others)
    found = []
    for key, pages in mine.items():
        common = sorted(set(pages) & set(theirs.get(key, {})))
        if common:
            found.append(_row(key, [pages[p] for p in common], [theirs[key][p] for p in common]))
    return found


def _row(key: tuple[str, str], a: list[PageResult], b: list[PageResult]) -> EnginesRow:
    plts = [(x.plt_s, y.plt_s) for x, y in zip(a, b)]
    low, high = intervals.ratio_interval(plts)
    return EnginesRow(*key, pages=len(a), plt_s=metrics.mean(x.plt_s for x in a), other_plt_s=metrics.mean(y.plt_s for y in b),
                      plt_ratio=metrics.ratio_of_sums(plts), plt_ratio_low=low, plt_ratio_high=high,
                      stall_s=metrics.mean(x.stall_s for x in a), other_stall_s=metrics.mean(y.stall_s for y in b),
                      max_delay_ms=metrics.mean(x.max_delay_ms for x in a),
                      other_max_delay_ms=metrics.mean(y.max_delay_ms for y in b))
