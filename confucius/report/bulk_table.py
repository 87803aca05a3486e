# SPDX-License-Identifier: MIT
"""A bulk TCP flow's own RTT beside the RT flow and the page (scenarios with `[[bulk]]`
flows, e.g. demo-bulk): per scenario, scheduler and controller, the video's stall and the
PLT of the latest valid loads, and the bulk flows' own smoothed RTT (their sender's, every
0.2 s; experiment/db_runs.py bulk_rtts) and throughput while a page loads and outside.

A page loads from its first request to its last byte (the PLT's span); outside is the rest
of the bulk flows' life in the run, their slow start and the RT flow's warm-up included. A
table of its own rather than columns of `report summary`: the summary's loads come from
every scenario, and these figures exist only for the runs with bulk flows."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from confucius import metrics
from confucius.experiment import db_runs
from confucius.experiment.db import Database

from .data import PageResult, page_results


@dataclass(frozen=True)
class BulkRow:
    scenario: str
    scheduler: str
    controller: str
    loads: int                       # stall and PLT are means over these loads
    stall_s: float
    plt_s: float
    rtt_during_median_ms: float      # the bulk flows' own RTT samples while a page loads
    rtt_during_p95_ms: float
    rtt_outside_median_ms: float     # ... and the rest of their life in the run
    rtt_outside_p95_ms: float
    mbps_during: float               # their throughput (iperf3's 0.5 s intervals, mean)
    mbps_outside: float


@dataclass
class _Pooled:
    stalls: list[float] = field(default_factory=list)
    plts: list[float] = field(default_factory=list)
    rtts: tuple[list[float], list[float]] = field(default_factory=lambda: ([], []))     # during, outside
    rates: tuple[list[float], list[float]] = field(default_factory=lambda: ([], []))


def rows(db: Database, scenario: str | None = None) -> list[BulkRow]:
    """One row per scenario, scheduler and controller, over the latest valid loads of the
    runs whose bulk flows have RTT samples, in the order they were measured."""
    pages_by_run: dict[int, list[PageResult]] = {}
    for page in page_results(db, scenario):
        pages_by_run.setdefault(page.run_id, []).append(page)
    pooled: dict[tuple[str, str, str], _Pooled] = {}
    for run_id, pages in pages_by_run.items():
        flows = db_runs.flows_of_run(db, run_id, "bulk")
        rtts = [(s["time_ns"], s["rtt_ms"]) for f in flows for s in db_runs.bulk_rtt_rows(db, f["id"])]
        if not rtts:
            continue
        first = pages[0]
        into = pooled.setdefault((first.scenario, first.scheduler, first.controller), _Pooled())
        windows = [_loading(p) for p in pages if p.plt_s is not None]
        into.stalls += [p.stall_s for p in pages if not math.isnan(p.stall_s)]
        into.plts += [p.plt_s for p in pages if p.plt_s is not None]
        _split(rtts, windows, into.rtts)
        rates = [(s["time_ns"], s["bps"] / 1e6) for f in flows for s in db_runs.flow_sample_rows(db, f["id"])]
        _split(rates, windows, into.rates)
    return [_row(key, p) for key, p in pooled.items()]


def _loading(page: PageResult) -> tuple[int, int]:
    """The page's load on the run's clock: its first request to its last byte."""
    start = page.first_request_ns if page.first_request_ns is not None else page.load_start_ns
    return start, start + round(page.plt_s * 1e9)


def _split(samples: list[tuple[int, float]], windows: list[tuple[int, int]],
           into: tuple[list[float], list[float]]) -> None:
    """Each sample's value into `into[0]` if its time is inside a window, else `into[1]`."""
    for at, value in samples:
        into[0 if any(start <= at < end for start, end in windows) else 1].append(value)


def _row(key: tuple[str, str, str], p: _Pooled) -> BulkRow:
    during, outside = p.rtts
    return BulkRow(*key, loads=len(p.plts), stall_s=_mean(p.stalls), plt_s=_mean(p.plts),
                   rtt_during_median_ms=metrics.nearest_rank(during, 50), rtt_during_p95_ms=metrics.nearest_rank(during, 95),
                   rtt_outside_median_ms=metrics.nearest_rank(outside, 50), rtt_outside_p95_ms=metrics.nearest_rank(outside, 95),
                   mbps_during=_mean(p.rates[0]), mbps_outside=_mean(p.rates[1]))


def _mean(values: list[float]) -> float:
    return sum(values) / len(values) if values else math.nan
