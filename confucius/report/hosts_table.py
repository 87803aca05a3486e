# SPDX-License-Identifier: MIT
"""Each client host's share of the bottleneck (scenarios with `[link] clients = 2`, e.g.
hosts.toml: host 1 has the RT flow and the page, host 2 bulk downloads): per scenario,
scheduler and controller, each host's Mbit/s while the video runs and while the page loads,
beside the video's stall and largest frame delay and the PLT of the latest valid loads.

A host's Mbit/s over a span is what its counters (the bytes its device received,
experiment/db_runs.py host_bytes, every 0.2 s) grew by from the first sample inside the span
to the last, over the time between them. While the video runs: each RT flow's span (the
warm-up, the page and the tail; host 2's downloads run through the whole run). While the page
loads: its first request to its last byte."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from confucius import metrics
from confucius.experiment import db_runs
from confucius.experiment.db import Database

from .data import PageResult, page_results

HOSTS = (1, 2)


@dataclass(frozen=True)
class HostsRow:
    scenario: str
    scheduler: str
    controller: str
    loads: int                       # means over these loads (and their runs' videos)
    host1_video_mbps: float          # while the video runs
    host2_video_mbps: float
    host1_page_mbps: float           # while the page loads
    host2_page_mbps: float
    stall_s: float
    max_delay_ms: float
    plt_s: float


@dataclass
class _Pooled:
    video: dict[int, list[float]] = field(default_factory=lambda: {h: [] for h in HOSTS})
    page: dict[int, list[float]] = field(default_factory=lambda: {h: [] for h in HOSTS})
    stalls: list[float] = field(default_factory=list)
    max_delays: list[float] = field(default_factory=list)
    plts: list[float] = field(default_factory=list)


def span_mbps(samples: list[tuple[int, int]], start_ns: int, end_ns: int) -> float:
    """A host's Mbit/s from `start_ns` to `end_ns`: the growth of its byte counter between the
    first and the last of its samples inside the span (NaN with fewer than two)."""
    inside = [(at, count) for at, count in samples if start_ns <= at <= end_ns]
    if len(inside) < 2 or inside[-1][0] == inside[0][0]:
        return math.nan
    (t0, b0), (t1, b1) = inside[0], inside[-1]
    return (b1 - b0) * 8 / ((t1 - t0) / 1e9) / 1e6


def rows(db: Database, scenario: str | None = None) -> list[HostsRow]:
    """One row per scenario, scheduler and controller, over the latest valid loads of the
    runs with per-host counters, in the order they were measured."""
    pages_by_run: dict[int, list[PageResult]] = {}
    for page in page_results(db, scenario):
        pages_by_run.setdefault(page.run_id, []).append(page)
    pooled: dict[tuple[str, str, str], _Pooled] = {}
    for run_id, pages in pages_by_run.items():
        counters = _counters(db, run_id)
        if not counters:
            continue
        first = pages[0]
        into = pooled.setdefault((first.scenario, first.scheduler, first.controller), _Pooled())
        for host, samples in counters.items():
            into.video[host] += [span_mbps(samples, s["started_ns"], s["ended_ns"]) for s in db_runs.rt_spans(db, run_id)]
            into.page[host] += [span_mbps(samples, *_loading(p)) for p in pages if p.plt_s is not None]
        into.stalls += [p.stall_s for p in pages]
        into.max_delays += [p.max_delay_ms for p in pages]
        into.plts += [p.plt_s for p in pages if p.plt_s is not None]
    return [_row(key, p) for key, p in pooled.items()]


def _counters(db: Database, run_id: int) -> dict[int, list[tuple[int, int]]]:
    """Each host's (time ns, received bytes) samples in a run; empty for a one-client run."""
    found: dict[int, list[tuple[int, int]]] = {}
    for r in db_runs.host_byte_rows(db, run_id):
        found.setdefault(r["host"], []).append((r["time_ns"], r["rx_bytes"]))
    return found if set(found) >= set(HOSTS) else {}


def _loading(page: PageResult) -> tuple[int, int]:
    """The page's load on the run's clock: its first request to its last byte."""
    start = page.first_request_ns if page.first_request_ns is not None else page.load_start_ns
    return start, start + round(page.plt_s * 1e9)


def _row(key: tuple[str, str, str], p: _Pooled) -> HostsRow:
    return HostsRow(*key, loads=len(p.plts), host1_video_mbps=metrics.mean(p.video[1]), host2_video_mbps=metrics.mean(p.video[2]),
                    host1_page_mbps=metrics.mean(p.page[1]), host2_page_mbps=metrics.mean(p.page[2]),
                    stall_s=metrics.mean(p.stalls), max_delay_ms=metrics.mean(p.max_delays), plt_s=metrics.mean(p.plts))
