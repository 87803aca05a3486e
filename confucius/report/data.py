# SPDX-License-Identifier: MIT
"""Measurements read back from the results database, with the metrics of each page load.

Each page measurement (unit: a page under one scheduler, controller, repetition and set of
conditions) counts once: its latest valid result. Invalid ones (disturbed runs, failed
loads) are left out; `counts()` says how many there were.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Sequence

from confucius import metrics, provenance, rtflow
from confucius.experiment import db_runs
from confucius.experiment.db import Database


class ReportError(ValueError):
    """Nothing to report, or a database that is not there."""


def open_db(path) -> Database:
    if not Path(path).is_file():
        raise ReportError(f"no results database at {path} (run `confucius lab run` or `lab matrix` first)")
    return Database(path)


def _frame(row) -> rtflow.Frame:
    return rtflow.Frame(frame_id=row["frame_id"], capture_ns=row["capture_ns"],
                        key=None if row["key"] is None else bool(row["key"]), size_bytes=row["size_bytes"],
                        packets=row["packets"], packets_received=row["packets_received"], first_arrival_ns=None,
                        last_arrival_ns=row["last_arrival_ns"], delay_ms=row["delay_ms"],
                        complete=bool(row["complete"]))


def frames(db: Database, flow_id: int, start_ns: int | None = None, end_ns: int | None = None) -> list[rtflow.Frame]:
    """An RT flow's frames, all or those captured in [start_ns, end_ns)."""
    return [_frame(r) for r in db_runs.frame_rows(db, flow_id, start_ns, end_ns)]


@dataclass
class PageResult:
    page_row: int
    run_id: int
    scenario: str
    scheduler: str
    scheduler_base: str
    controller: str
    repetition: int
    page_key: str
    page_id: str
    session: int
    plt_s: float | None
    load_start_ns: int
    window_end_ns: int
    converged: bool | None
    warmups: int | None = None           # RT warm-ups before the load (low ones are redone)
    stall_s: float = math.nan
    max_delay_ms: float = math.nan
    p99_delay_ms: float = math.nan
    lost_share: float = math.nan
    rt_bps: float = math.nan
    rt_target_bps: float | None = None   # the RT flow's target over the warm-up's last seconds
    link_bps: float | None = None        # constant link rate (None with a trace)
    jfi: float = math.nan
    sender_backlog_ms: float = math.nan
    delays_ms: list[float] = field(default_factory=list, repr=False)
    first_request_ns: int | None = None

    @property
    def page_end_ns(self) -> int:
        """The page's last byte (its first request plus its PLT); the window's end when the
        page did not finish."""
        if self.first_request_ns is None or self.plt_s is None:
            return self.window_end_ns
        return self.first_request_ns + round(self.plt_s * 1e9)

    @property
    def pair_key(self) -> tuple:
        """What makes two schedulers' measurements of a page comparable."""
        return self.scenario, self.controller, self.repetition, self.page_key


def scheduler_order(schedulers: Sequence[str] | None) -> Callable[[str], tuple[int, str]]:
    """The sort key that puts schedulers in the order given (`-s`), the others after them
    by name: every report's order of rows."""
    rank = {name: n for n, name in enumerate(schedulers or [])}
    return lambda scheduler: (rank.get(scheduler, len(rank)), scheduler)


def paired(mine: Sequence[PageResult], theirs: Sequence[PageResult],
           value: Callable[[PageResult], float | None]) -> list[tuple[float, float]]:
    """(mine, theirs) of `value` over the pages both measured (PageResult.pair_key), where
    both have it."""
    by_page = {r.pair_key: value(r) for r in theirs}
    pairs = [(value(r), by_page[r.pair_key]) for r in mine if r.pair_key in by_page]
    return [(a, b) for a, b in pairs if a is not None and b is not None
            and not math.isnan(a) and not math.isnan(b)]


def _connections(db: Database, page_row: int) -> list[tuple[int, int, int]]:
    """The page's connections as metrics.load_jfi takes them: (bytes, opened, last byte)."""
    return [(c["bytes"], c["started_ns"], c["ended_ns"]) for c in db_runs.connection_rows(db, page_row)]


def rates(db: Database, flow_id: int) -> list[rtflow.RateSample]:
    """An RT flow's sender rate log, as stored."""
    return [rtflow.RateSample(**{k: r[k] for k in r.keys() if k != "flow_id"})
            for r in db_runs.rate_rows(db, flow_id)]


def _sender_backlog_ms(db: Database, flows: list[int], start_ns: int, end_ns: int) -> float:
    samples = [(r["target_bps"], r["queue_bytes"]) for f in flows
               for r in db_runs.backlog_rows(db, f, start_ns, end_ns)]
    return metrics.sender_backlog_ms(samples)


def page_results(db: Database, scenario: str | None = None) -> list[PageResult]:
    """Every valid page measurement (of one scenario, or all), with its metrics."""
    results = []
    for row in db_runs.latest_valid_pages(db, scenario):
        start, end = row["load_start_ns"], row["window_end_ns"]
        rt_flows = db_runs.rt_flow_ids(db, row["run_id"], row["session"])
        per_flow = [frames(db, f, start, end) for f in rt_flows]
        m = metrics.load_metrics(per_flow, start, end, _connections(db, row["id"]), row["first_request_ns"],
                                 row["plt_s"])
        results.append(PageResult(
            page_row=row["id"], run_id=row["run_id"], scenario=row["scenario"], scheduler=row["scheduler"],
            scheduler_base=row["scheduler_base"], controller=row["controller"], repetition=row["repetition"],
            page_key=row["page_key"], page_id=row["page_id"], session=row["session"], plt_s=row["plt_s"],
            load_start_ns=start,
            window_end_ns=end, converged=None if row["converged"] is None else bool(row["converged"]),
            warmups=row["warmups"],
            stall_s=m.stall_s, max_delay_ms=m.max_delay_ms, p99_delay_ms=m.p99_delay_ms,
            lost_share=m.lost_share, rt_bps=m.rt_bps, rt_target_bps=row["rt_target_bps"],
            link_bps=row["link_rate_bps"],
            jfi=m.jfi, sender_backlog_ms=_sender_backlog_ms(db, rt_flows, start, end),
            delays_ms=m.delays_ms, first_request_ns=row["first_request_ns"]))
    return results


def mixed_programs(db: Database, results: list[PageResult]) -> dict[tuple[str, str, str], dict[str, list[str]]]:
    """Per (scenario, scheduler, controller) whose loads' runs record a program with more
    than one digest: those programs and their digests. A cell's key names its conditions,
    not the code, so runs copied in by `lab merge`, measured again with `--again`, or
    stored before resumes compared programs can pool two versions of the code in one row."""
    runs: dict[tuple[str, str, str], set[int]] = {}
    for r in results:
        runs.setdefault((r.scenario, r.scheduler, r.controller), set()).add(r.run_id)
    versions = db_runs.run_versions(db)
    found = {cell: provenance.mixed_programs(versions[i] for i in ids) for cell, ids in sorted(runs.items())}
    return {cell: programs for cell, programs in found.items() if programs}


def frames_of_page(db: Database, result: PageResult, before_s: float) -> list[rtflow.Frame]:
    """The (first) RT flow's frames from `before_s` before the load to the end of its window."""
    flows = db_runs.rt_flow_ids(db, result.run_id, result.session)
    return frames(db, flows[0], result.load_start_ns - int(before_s * 1e9), result.window_end_ns) if flows else []


@dataclass
class QdiscView:
    """The RT flow at one sample of the qdisc's per-flow statistics (confucius only)."""
    time_ns: int
    weight_share: float   # its weight / (its own + the other backlogged flows' weights)
    bytes: int            # its queue
    sojourn_ms: float     # how long its head packet had waited


@dataclass
class RtView:
    """The (first) RT flow around a page load, as its sender and the qdisc saw it."""
    targets: list[tuple[int, float]]          # the sender's target rate (time, bit/s)
    qdisc: list[QdiscView]                    # empty when the scheduler exposes no flows

    def queue_growth_bps(self) -> list[tuple[int, float]]:
        """How fast its queue grew from one sample to the next (bit/s, at the later one):
        arrivals minus service, as the qdisc counts no per-flow dequeues."""
        return [(b.time_ns, (b.bytes - a.bytes) * 8e9 / (b.time_ns - a.time_ns))
                for a, b in zip(self.qdisc, self.qdisc[1:]) if b.time_ns > a.time_ns]


def _rt_buckets(rows, port: int) -> set[int]:
    """The buckets whose head packet went to the RT flow's port: its flow (buckets are
    hashes; a flow keeps its bucket while remembered, and an empty one shows no ports)."""
    return {r["bucket"] for r in rows if r["dport"] == port}


def _qdisc_views(rows, buckets: set[int]) -> list[QdiscView]:
    by_time: dict[int, list] = {}
    for r in rows:
        by_time.setdefault(r["time_ns"], []).append(r)
    views = []
    for time_ns, flows in sorted(by_time.items()):
        rt = [f for f in flows if f["bucket"] in buckets]
        if not rt:
            continue  # forgotten meanwhile (idle longer than the qdisc's interval)
        others = sum(f["weight"] for f in flows if f["packets"] and f["bucket"] not in buckets)
        weight = sum(f["weight"] for f in rt)
        views.append(QdiscView(time_ns, weight / (weight + others), sum(f["bytes"] for f in rt),
                               max(f["sojourn_us"] for f in rt) / 1e3))
    return views


def rt_view(db: Database, result: PageResult, before_s: float) -> RtView:
    """The first RT flow's target rate and, where the qdisc exposed its flows, its weight
    share and queue, from `before_s` before the load to the end of its window."""
    start, end = result.load_start_ns - int(before_s * 1e9), result.window_end_ns
    flow = db_runs.first_rt_flow(db, result.run_id, result.session)
    if flow is None:
        return RtView([], [])
    targets = [(r["time_ns"], r["target_bps"]) for r in db_runs.target_rows(db, flow["id"], start, end)]
    rows = db_runs.qdisc_flow_rows(db, result.run_id, start, end)
    return RtView(targets, _qdisc_views(rows, _rt_buckets(rows, flow["port"])))


def counts(db: Database, scenario: str | None = None) -> dict:
    """Runs and page measurements, valid or not, for the report's footnote."""
    runs, pages = db_runs.counts(db, scenario)
    return {"runs": {r["status"]: r["n"] for r in runs},
            "pages": {("valid" if r["valid"] else "invalid"): r["n"] for r in pages}}


# --------------------------------------------------------------------------- timed runs

@dataclass
class TimedRun:
    """A run without page loads (e.g. the four-CCA run): its flows over the measured span."""
    run_id: int
    scheduler: str
    controller: str
    start_ns: int
    end_ns: int
    rt: dict[str, list[rtflow.Frame]]              # label -> frames over the whole run
    bulk: dict[str, list[tuple[int, float]]]       # CCA -> (time, bit/s) samples
    classes: list[tuple[int, list[int]]]           # confucius: (time, flows per class)
    sender_max_gap_ms: float | None = None         # the RT senders' longest pause
    valid: bool = True

    def throughputs_bps(self) -> dict[str, float]:
        """Each flow's mean throughput over the measured span."""
        found = {label: metrics.goodput_bps(f, self.start_ns, self.end_ns) for label, f in self.rt.items()}
        for cca, samples in self.bulk.items():
            found[cca] = metrics.mean(bps for t, bps in samples if self.start_ns <= t <= self.end_ns)
        return found


def _classes(db: Database, run_id: int) -> list[tuple[int, list[int]]]:
    found = []
    for row in db_runs.confucius_stats_rows(db, run_id):
        xstats = json.loads(row["xstats"]) if row["xstats"] else {}
        found.append((row["time_ns"], [c.get("flows", 0) for c in xstats.get("classes", [])]))
    return found


def timed_runs(db: Database, scenario: str, disturbed: bool = False) -> list[TimedRun]:
    """The latest valid run of each cell; with `disturbed`, also runs that completed but
    whose RT sender paused (for measures a pause does not touch, e.g. classes over time)."""
    runs = db_runs.latest_runs_per_cell(db, scenario, disturbed)
    found = []
    for run in runs:
        rt = {}
        for f in db_runs.flows_of_run(db, run["id"], "rt"):
            rt[f["label"] if f["label"] not in rt else f"{f['label']}-{f['number']}"] = frames(db, f["id"])
        bulk = {}
        for f in db_runs.flows_of_run(db, run["id"], "bulk"):
            bulk[f["label"]] = [(s["time_ns"], s["bps"]) for s in db_runs.flow_sample_rows(db, f["id"])]
        found.append(TimedRun(run["id"], run["scheduler"], run["controller"], run["measure_from_ns"],
                              run["measure_to_ns"], rt, bulk, _classes(db, run["id"]),
                              run["sender_max_gap_ms"], bool(run["valid"])))
    return found
