# SPDX-License-Identifier: MIT
"""The page-load experiment's part of the results database, the lab's and the simulator's:
its tables, how a run is written (`store_run`) and every query of them.

    run_id = store_run(db, scenario_id, row, data)   # one run, one transaction
    valid_units(db, unit_keys)                       # what a resumed matrix can skip

A run is one `runs` row with its RT flows' frames and rate logs, its page loads (each with
its PLT and RT metrics over the load's window, from metrics.load_metrics), their objects
and connections, bulk flows, the scheduler's samples and probes; a Flent run's tests go
to flent_tests (db_flent.py).
"""

from __future__ import annotations

import json
import math
from typing import TYPE_CHECKING, Iterable

from confucius import metrics

from .db_flent import store_flent_test

if TYPE_CHECKING:
    from .db import Database

TABLES = """
CREATE TABLE IF NOT EXISTS runs (
    id INTEGER PRIMARY KEY,
    scenario_id INTEGER NOT NULL REFERENCES scenarios(id),
    cell_key TEXT NOT NULL,            -- scheduler, RT flows, repetition and conditions
    scheduler TEXT NOT NULL, scheduler_base TEXT NOT NULL, scheduler_options TEXT NOT NULL,
    tc_commands TEXT NOT NULL,         -- JSON list: how the bottleneck was set up
    controller TEXT NOT NULL,          -- RT flow label(s), e.g. gcc, tcp-bbr, gcc+copa
    rt_flows TEXT NOT NULL,            -- JSON
    repetition INTEGER NOT NULL, mode TEXT NOT NULL,
    link_rate_bps REAL, trace TEXT, rtt_s REAL NOT NULL, buffer_packets INTEGER NOT NULL,
    status TEXT NOT NULL,              -- ok | failed
    error TEXT,
    started_unix REAL NOT NULL, duration_s REAL, boot_s REAL, results_dir TEXT NOT NULL,
    git_commit TEXT, git_dirty INTEGER, guest_kernel TEXT,
    engine TEXT NOT NULL,              -- qemu | uml: what ran the guest kernel
    time_mode TEXT NOT NULL,           -- the guest clock: real (qemu) or UML's time-travel mode
    seed INTEGER,                      -- uml: the guest's random.seed (same seed, same run in
                                       -- inf-cpu); sim: ns-3's run number; NULL: none (qemu)
    versions TEXT,                     -- JSON: tools, binaries' digests, qemu, iproute2 ...
    host_load TEXT,                    -- JSON: load average before and after, CPU steal share
    spec TEXT NOT NULL,                -- JSON: everything the guest was told
    measure_from_ns INTEGER, measure_to_ns INTEGER, warmup_s REAL, converged INTEGER,
    sender_max_gap_ms REAL, valid INTEGER);
CREATE INDEX IF NOT EXISTS runs_cell ON runs (cell_key);
CREATE TABLE IF NOT EXISTS flows (
    id INTEGER PRIMARY KEY, run_id INTEGER NOT NULL REFERENCES runs(id),
    kind TEXT NOT NULL,                -- rt | web | bulk
    label TEXT NOT NULL,               -- controller, domain or CCA
    session INTEGER, number INTEGER,   -- rt: session and flow; web: connection id; bulk: index
    page_id INTEGER REFERENCES pages(id),
    port INTEGER, started_ns INTEGER, ended_ns INTEGER, bytes INTEGER,
    details TEXT);                     -- JSON: kind-specific fields
CREATE INDEX IF NOT EXISTS flows_run ON flows (run_id, kind);
CREATE INDEX IF NOT EXISTS flows_page ON flows (page_id);   -- a load's connections, for its JFI
CREATE TABLE IF NOT EXISTS frames (
    flow_id INTEGER NOT NULL REFERENCES flows(id), frame_id INTEGER NOT NULL,
    capture_ns INTEGER NOT NULL, key INTEGER, size_bytes INTEGER, packets INTEGER,
    packets_received INTEGER, last_arrival_ns INTEGER, delay_ms REAL, complete INTEGER NOT NULL);
CREATE INDEX IF NOT EXISTS frames_flow ON frames (flow_id, capture_ns);
CREATE TABLE IF NOT EXISTS rt_rates (
    flow_id INTEGER NOT NULL REFERENCES flows(id), time_ns INTEGER NOT NULL,
    target_bps REAL, pacing_bps REAL, sent_bps REAL, acked_bps REAL, srtt_ms REAL, loss REAL,
    in_flight_bytes INTEGER, queue_bytes INTEGER, cwnd_bytes INTEGER);
CREATE INDEX IF NOT EXISTS rt_rates_flow ON rt_rates (flow_id, time_ns);
CREATE TABLE IF NOT EXISTS flow_samples (
    flow_id INTEGER NOT NULL REFERENCES flows(id), time_ns INTEGER NOT NULL, bps REAL NOT NULL);
CREATE TABLE IF NOT EXISTS bulk_rtts (    -- a bulk flow's own RTT: its sender's tcp_info (ss -ti) every 0.2 s
    flow_id INTEGER NOT NULL REFERENCES flows(id), time_ns INTEGER NOT NULL, rtt_ms REAL NOT NULL);
CREATE INDEX IF NOT EXISTS bulk_rtts_flow ON bulk_rtts (flow_id, time_ns);
CREATE TABLE IF NOT EXISTS pages (
    id INTEGER PRIMARY KEY, run_id INTEGER NOT NULL REFERENCES runs(id),
    number INTEGER NOT NULL, unit_key TEXT NOT NULL, page_key TEXT NOT NULL, page_id TEXT NOT NULL,
    session INTEGER NOT NULL,
    started_ns INTEGER NOT NULL,       -- the runner started web-client
    load_start_ns INTEGER,             -- web-client's start (first connection attempt)
    first_request_ns INTEGER, window_end_ns INTEGER NOT NULL,
    ok INTEGER NOT NULL, exit INTEGER, error TEXT,
    plt_s REAL,                        -- first request to last byte (confucius/metrics.py)
    plt_client_s REAL,                 -- web-client's own: first connection attempt to last byte
    objects_total INTEGER, objects_done INTEGER, connections INTEGER, bytes INTEGER,
    peak_active INTEGER,
    warmup_s REAL, converged INTEGER, calm INTEGER, rt_target_bps REAL,
    warmups INTEGER,                   -- RT flows warmed up for this load (guest/schedule.py)
    -- RT metrics over the window [load_start_ns, window_end_ns) (confucius/metrics.py)
    stall_s REAL, max_delay_ms REAL, p99_delay_ms REAL, lost_share REAL, rt_goodput_bps REAL,
    jfi REAL,
    sender_max_gap_ms REAL NOT NULL, valid INTEGER NOT NULL, invalid_reason TEXT);
CREATE INDEX IF NOT EXISTS pages_unit ON pages (unit_key);
CREATE INDEX IF NOT EXISTS pages_run ON pages (run_id);
CREATE TABLE IF NOT EXISTS objects (
    page_id INTEGER NOT NULL REFERENCES pages(id), object_id TEXT NOT NULL, domain TEXT NOT NULL,
    size INTEGER NOT NULL, parent TEXT, depth INTEGER, status TEXT NOT NULL, connection INTEGER,
    ready_s REAL, request_s REAL, first_byte_s REAL, last_byte_s REAL, received INTEGER, error TEXT);
CREATE INDEX IF NOT EXISTS objects_page ON objects (page_id);
CREATE TABLE IF NOT EXISTS qdisc_stats (
    run_id INTEGER NOT NULL REFERENCES runs(id), time_ns INTEGER NOT NULL,
    handle TEXT, parent TEXT, kind TEXT NOT NULL,
    bytes INTEGER, packets INTEGER, drops INTEGER, overlimits INTEGER, requeues INTEGER,
    backlog INTEGER, qlen INTEGER,
    xstats TEXT);                      -- JSON: the qdisc's own statistics as tc -j prints them
CREATE INDEX IF NOT EXISTS qdisc_stats_run ON qdisc_stats (run_id, time_ns);
CREATE TABLE IF NOT EXISTS qdisc_flows (  -- Confucius's flows as it dumps them (tc -s class show)
    run_id INTEGER NOT NULL REFERENCES runs(id), time_ns INTEGER NOT NULL,
    bucket INTEGER NOT NULL, state TEXT NOT NULL,   -- new | old
    class_id INTEGER NOT NULL,         -- 0 while new, else its class 1..K
    weight REAL NOT NULL,              -- 1 = an old flow's
    packets INTEGER NOT NULL, bytes INTEGER NOT NULL, deficit INTEGER NOT NULL,
    sojourn_us INTEGER NOT NULL,       -- how long its head packet had waited
    sport INTEGER, dport INTEGER, ip_proto INTEGER);  -- its head packet's (NULL: empty)
CREATE INDEX IF NOT EXISTS qdisc_flows_run ON qdisc_flows (run_id, time_ns);
CREATE TABLE IF NOT EXISTS probes (
    run_id INTEGER NOT NULL REFERENCES runs(id), time_ns INTEGER NOT NULL, rtt_ms REAL);
CREATE TABLE IF NOT EXISTS host_bytes (   -- with [link] clients > 1: each client host's received bytes
    run_id INTEGER NOT NULL REFERENCES runs(id), time_ns INTEGER NOT NULL,
    host INTEGER NOT NULL, rx_bytes INTEGER NOT NULL);   -- host 1, 2 as the scenario numbers them
CREATE INDEX IF NOT EXISTS host_bytes_run ON host_bytes (run_id, time_ns);
"""
# Columns added since version 2, with what every earlier row had (db.UPGRADABLE_VERSIONS):
# the runs' engine (4; only qemu in real time existed), their seed (8; none before) and the
# pages' warm-up count (5; unknown before).
ADDED_COLUMNS = {"runs": (("engine", "TEXT NOT NULL DEFAULT 'qemu'"),
                          ("time_mode", "TEXT NOT NULL DEFAULT 'real'"),
                          ("seed", "INTEGER")),
                 "pages": (("warmups", "INTEGER"),)}
# How a merge knows that a source's run is here already: a run copied twice is the same row.
RUN_IDENTITY = {"runs": ("cell_key", "started_unix", "results_dir")}
# What an export leaves out unless asked for samples: time series that the timelines and the
# lab's checks read, and the load reports (summary, seeds, stalls, steps) do not.
SAMPLE_TABLES = ("qdisc_stats", "qdisc_flows", "flow_samples", "bulk_rtts", "probes", "host_bytes")
# Of an RT flow's frames and rate log, an export without samples keeps each page load's
# window and this much before the load (more than `report timeline` draws by default).
EXPORT_MARGIN_NS = 10 * 10**9


def prune_to_load_windows(db_conn) -> None:
    """An export's frames and rate logs: each page load's window and EXPORT_MARGIN_NS before it."""
    for table, column in (("frames", "capture_ns"), ("rt_rates", "time_ns")):
        db_conn.execute(f"DELETE FROM {table} WHERE NOT EXISTS (SELECT 1 FROM flows f JOIN pages p "
                        f"ON p.run_id = f.run_id AND p.session = f.session WHERE f.id = {table}.flow_id "
                        f"AND {table}.{column} BETWEEN p.started_ns - ? AND p.window_end_ns)",
                        (EXPORT_MARGIN_NS,))


# --------------------------------------------------------------------------- resuming

def valid_units(db: Database, unit_keys: Iterable[str]) -> set[str]:
    """The page measurements (unit keys) that have a valid result."""
    return {r[0] for r in db.for_keys(
        "SELECT DISTINCT unit_key FROM pages WHERE valid=1 AND unit_key IN ({marks})", unit_keys)}


def attempts(db: Database, unit_keys: Iterable[str]) -> dict[str, int]:
    """How often each page measurement was tried (valid or not)."""
    return {key: n for key, n in db.for_keys(
        "SELECT unit_key, COUNT(*) FROM pages WHERE unit_key IN ({marks}) GROUP BY unit_key", unit_keys)}


def check_programs(db: Database, cell_keys: Iterable[str], programs: dict[str, str | None]) -> None:
    """Refuse to add to cells whose valid measurements other programs produced: a cell's
    key names its conditions, not the code that measured it, so a resumed cell would
    mix two versions. `programs` holds the digests of what would run now, by the names
    the runs' `versions` record them under. Valid as a resumed matrix counts it: a valid
    run, or a valid page of any run (a run that failed part-way keeps the pages it
    finished)."""
    found = {r[0] for r in db.for_keys(
        "SELECT DISTINCT versions FROM runs WHERE cell_key IN ({marks}) AND "
        "((status='ok' AND valid=1) OR EXISTS (SELECT 1 FROM pages WHERE pages.run_id=runs.id AND pages.valid=1))",
        cell_keys)}
    db.refuse_other_programs(found, programs, "cells")


def run_attempts(db: Database, cell_key: str) -> tuple[bool, int]:
    """For runs without pages: (has a valid run, runs tried)."""
    rows = db.query("SELECT valid FROM runs WHERE cell_key=? AND status='ok'", (cell_key,))
    tried = db.query("SELECT COUNT(*) FROM runs WHERE cell_key=?", (cell_key,))[0][0]
    return any(r["valid"] for r in rows), tried


# --------------------------------------------------------------------------- writing

def store_run(db: Database, scenario_id: int, info: dict, data=None) -> int:
    """One run in one transaction: `info` (the runs row's fields) and, unless the run
    failed, everything `data` (a results.RunData) holds."""
    with db.conn:
        run_id = db.insert("runs", {"scenario_id": scenario_id, **info})
        if data is not None:
            _store_data(db, run_id, data)
    return run_id


# What `tc -s -j qdisc show` prints for every qdisc; the rest is the qdisc's own statistics.
_TC_COMMON = {"kind", "handle", "root", "refcnt", "parent", "options", "bytes", "packets", "drops",
              "overlimits", "requeues", "backlog", "qlen"}


def _xstats(qdisc: dict) -> dict:
    return {k: v for k, v in qdisc.items() if k not in _TC_COMMON}


def _dump(value) -> str:
    return json.dumps(value, sort_keys=True)


def _store_data(db: Database, run_id: int, data) -> None:
    for flow in data.rt_flows():
        flow_id = db.insert("flows", {
            "run_id": run_id, "kind": "rt", "label": flow.label, "session": flow.session,
            "number": flow.number, "port": flow.port,
            "started_ns": flow.rates[0].time_ns if flow.rates else None,
            "ended_ns": flow.rates[-1].time_ns if flow.rates else None,
            "bytes": sum(f.size_bytes or 0 for f in flow.frames if f.complete)})
        db.insert_many("frames", ("flow_id", "frame_id", "capture_ns", "key", "size_bytes", "packets",
                                   "packets_received", "last_arrival_ns", "delay_ms", "complete"),
                        ((flow_id, f.frame_id, f.capture_ns, f.key, f.size_bytes, f.packets, f.packets_received,
                          f.last_arrival_ns, f.delay_ms, int(f.complete)) for f in flow.frames))
        db.insert_many("rt_rates", ("flow_id", "time_ns", "target_bps", "pacing_bps", "sent_bps", "acked_bps",
                                     "srtt_ms", "loss", "in_flight_bytes", "queue_bytes", "cwnd_bytes"),
                        ((flow_id, r.time_ns, r.target_bps, r.pacing_bps, r.sent_bps, r.acked_bps, r.srtt_ms,
                          r.loss, r.in_flight_bytes, r.queue_bytes, r.cwnd_bytes) for r in flow.rates))
    for page in data.pages:
        session = next(s for s in data.sessions if s.index == page.session)
        _store_page(db, run_id, page, [flow.frames for flow in session.flows])
    for bulk in data.bulk:
        flow_id = db.insert("flows", {
            "run_id": run_id, "kind": "bulk", "label": bulk.cca, "number": bulk.number,
            "started_ns": bulk.started_ns, "ended_ns": bulk.samples[-1][0] if bulk.samples else None,
            "bytes": bulk.bytes, "details": _dump({"error": bulk.error})})
        db.insert_many("flow_samples", ("flow_id", "time_ns", "bps"),
                        ((flow_id, t, bps) for t, bps in bulk.samples))
        db.insert_many("bulk_rtts", ("flow_id", "time_ns", "rtt_ms"), ((flow_id, t, rtt) for t, rtt in bulk.rtts))
    db.insert_many("qdisc_stats", ("run_id", "time_ns", "handle", "parent", "kind", "bytes", "packets", "drops",
                                    "overlimits", "requeues", "backlog", "qlen", "xstats"),
                    ((run_id, t, q.get("handle"), q.get("parent", "root" if q.get("root") else None), q["kind"],
                      q.get("bytes"), q.get("packets"), q.get("drops"), q.get("overlimits"), q.get("requeues"),
                      q.get("backlog"), q.get("qlen"), _dump(_xstats(q)))
                     for t, qdiscs in data.qdisc_samples for q in qdiscs))
    db.insert_many("qdisc_flows", ("run_id", "time_ns", "bucket", "state", "class_id", "weight", "packets", "bytes",
                                    "deficit", "sojourn_us", "sport", "dport", "ip_proto"),
                    ((run_id, t, f["bucket"], f["state"], f["class"], f["weight"], f["packets"], f["bytes"],
                      f["deficit"], f["sojourn_us"], *_head_ports(f)) for t, flows in data.qdisc_flows for f in flows))
    db.insert_many("probes", ("run_id", "time_ns", "rtt_ms"), ((run_id, t, rtt) for t, rtt in data.probes))
    db.insert_many("host_bytes", ("run_id", "time_ns", "host", "rx_bytes"),
                   ((run_id, t, host, count) for t, counts in data.host_bytes
                    for host, count in enumerate(counts, 1)))
    for test in data.flent:
        store_flent_test(db, run_id, test)


def _head_ports(flow: dict) -> tuple:
    """sport, dport, ip_proto of the flow's head packet; NULLs when it had none (the
    kernel gives zeros then)."""
    return (flow["sport"], flow["dport"], flow["ip_proto"]) if flow["packets"] else (None, None, None)


def _at(start_ns: int | None, seconds: float | None) -> int | None:
    """A time of the page load (s from its start) on the run's clock."""
    return None if start_ns is None or seconds is None else start_ns + round(seconds * 1e9)


def _connection_spans(load, start_ns: int | None) -> dict[int, tuple[int | None, int | None]]:
    """Each connection's open and last byte on the run's clock."""
    last_byte: dict[int, float] = {}
    for o in load.objects:
        if o.connection is not None and o.last_byte is not None:
            last_byte[o.connection] = max(o.last_byte, last_byte.get(o.connection, 0.0))
    return {c.id: (_at(start_ns, c.opened), _at(start_ns, last_byte.get(c.id))) for c in load.connections}


def _store_page(db: Database, run_id: int, page, rt_frames: list) -> None:
    load = page.load
    first = page.first_request_ns
    last_byte = [o.last_byte for o in load.objects if o.last_byte is not None] if load and load.ok else []
    plt = metrics.plt_s(first, _at(page.load_start_ns, max(last_byte)) if last_byte else None)
    targets = [t for t in page.rt_target_bps if t is not None]
    spans = _connection_spans(load, page.load_start_ns) if load else {}
    row = {
        "run_id": run_id, "number": page.number, "unit_key": page.unit_key, "page_key": page.key,
        "page_id": page.page_id, "session": page.session, "started_ns": page.started_ns,
        "load_start_ns": page.load_start_ns, "first_request_ns": first, "window_end_ns": page.window_end_ns,
        "ok": int(bool(load and load.ok)), "exit": page.exit, "error": page.error,
        "plt_s": plt, "plt_client_s": load.plt if load else None,
        "objects_total": len(load.objects) if load else None,
        "objects_done": sum(o.status == "done" for o in load.objects) if load else None,
        "connections": len(load.connections) if load else None,
        "bytes": sum(o.received for o in load.objects) if load else None,
        "peak_active": load.peak_active() if load else None,
        "warmup_s": page.warmup_s, "converged": None if page.converged is None else int(page.converged),
        "calm": None if page.calm is None else int(page.calm), "warmups": page.warmups,
        "rt_target_bps": sum(targets) if targets else None,
        "sender_max_gap_ms": page.sender_max_gap_ms, "valid": int(page.valid),
        "invalid_reason": page.invalid_reason}
    if page.load_start_ns is not None:
        connections = [(c.bytes, *spans[c.id]) for c in load.connections if None not in spans[c.id]] if load else []
        m = metrics.load_metrics(rt_frames, page.load_start_ns, page.window_end_ns, connections, first, plt)
        row.update(stall_s=_finite(m.stall_s), max_delay_ms=_finite(m.max_delay_ms),
                   p99_delay_ms=_finite(m.p99_delay_ms), lost_share=_finite(m.lost_share),
                   rt_goodput_bps=_finite(m.rt_bps), jfi=_finite(m.jfi))
    page_id = db.insert("pages", row)
    if load is None:
        return
    db.insert_many("objects", ("page_id", "object_id", "domain", "size", "parent", "depth", "status", "connection",
                                "ready_s", "request_s", "first_byte_s", "last_byte_s", "received", "error"),
                    ((page_id, o.id, o.domain, o.size, o.parent, o.depth, o.status, o.connection, o.ready, o.request,
                      o.first_byte, o.last_byte, o.received, o.error) for o in load.objects))
    for c in load.connections:
        db.insert("flows", {
            "run_id": run_id, "kind": "web", "label": c.domain, "number": c.id, "page_id": page_id,
            "port": c.local_port, "started_ns": spans[c.id][0], "ended_ns": spans[c.id][1], "bytes": c.bytes,
            "details": _dump({"server": c.server, "established_s": c.established, "objects": c.objects,
                              "error": c.error, "protocol": c.protocol})})


def _finite(value: float) -> float | None:
    return None if value is None or math.isnan(value) else value


# --------------------------------------------------------------------------- reading

# The queries asked once per page load. Each must find its rows through an index
# (tests/report/test_report_data.py reads their plans): a table scan per load makes a
# report of a 1000-page sweep quadratic.
RT_FLOWS_SQL = "SELECT id FROM flows WHERE run_id=? AND kind='rt' AND session=? ORDER BY number"
FRAMES_SQL = "SELECT * FROM frames WHERE flow_id=? AND capture_ns >= ? AND capture_ns < ? ORDER BY capture_ns"
CONNECTIONS_SQL = ("SELECT bytes, started_ns, ended_ns FROM flows WHERE page_id=? AND kind='web' "
                   "AND started_ns IS NOT NULL AND ended_ns IS NOT NULL")
BACKLOG_SQL = "SELECT target_bps, queue_bytes FROM rt_rates WHERE flow_id=? AND time_ns BETWEEN ? AND ?"
PER_LOAD_QUERIES = (RT_FLOWS_SQL, FRAMES_SQL, CONNECTIONS_SQL, BACKLOG_SQL)
LATEST_VALID_PAGES_SQL = """
SELECT p.*, r.scheduler, r.scheduler_base, r.controller, r.repetition, r.link_rate_bps, s.name AS scenario
FROM pages p JOIN runs r ON r.id = p.run_id JOIN scenarios s ON s.id = r.scenario_id
WHERE p.id IN (SELECT MAX(id) FROM pages WHERE valid = 1 GROUP BY unit_key)
"""


def latest_valid_pages(db: Database, scenario: str | None = None) -> list:
    """The latest valid result of every unit (of one scenario, or all), with its run's cell."""
    sql, params = LATEST_VALID_PAGES_SQL, []
    if scenario:
        sql += " AND s.name = ?"
        params.append(scenario)
    return db.query(sql + " ORDER BY p.id", params)


def rt_flow_ids(db: Database, run_id: int, session: int) -> list[int]:
    return [r["id"] for r in db.query(RT_FLOWS_SQL, (run_id, session))]


def first_rt_flow(db: Database, run_id: int, session: int):
    """The id and port of a session's first RT flow, or None."""
    found = db.query("SELECT id, port FROM flows WHERE run_id=? AND kind='rt' AND session=? ORDER BY number LIMIT 1",
                     (run_id, session))
    return found[0] if found else None


def frame_rows(db: Database, flow_id: int, start_ns: int | None = None, end_ns: int | None = None) -> list:
    """An RT flow's frames, all or those captured in [start_ns, end_ns)."""
    if start_ns is None:
        return db.query("SELECT * FROM frames WHERE flow_id=? ORDER BY capture_ns", (flow_id,))
    return db.query(FRAMES_SQL, (flow_id, start_ns, end_ns))


def connection_rows(db: Database, page_row: int) -> list:
    """A page load's connections that opened and received: bytes, open and last byte."""
    return db.query(CONNECTIONS_SQL, (page_row,))


def rate_rows(db: Database, flow_id: int) -> list:
    return db.query("SELECT * FROM rt_rates WHERE flow_id=? ORDER BY time_ns", (flow_id,))


def backlog_rows(db: Database, flow_id: int, start_ns: int, end_ns: int) -> list:
    return db.query(BACKLOG_SQL, (flow_id, start_ns, end_ns))


def target_rows(db: Database, flow_id: int, start_ns: int, end_ns: int) -> list:
    return db.query("SELECT time_ns, target_bps FROM rt_rates WHERE flow_id=? AND time_ns BETWEEN ? AND ? "
                    "ORDER BY time_ns", (flow_id, start_ns, end_ns))


def qdisc_flow_rows(db: Database, run_id: int, start_ns: int, end_ns: int) -> list:
    return db.query("SELECT * FROM qdisc_flows WHERE run_id=? AND time_ns BETWEEN ? AND ? ORDER BY time_ns",
                    (run_id, start_ns, end_ns))


def confucius_stats_rows(db: Database, run_id: int) -> list:
    """Confucius's statistics samples of a run (time and xstats), in time order."""
    return db.query("SELECT time_ns, xstats FROM qdisc_stats WHERE run_id=? AND kind='confucius' "
                    "ORDER BY time_ns", (run_id,))


def run_versions(db: Database) -> dict[int, dict]:
    """Every run's `versions`, by run id."""
    return {row["id"]: json.loads(row["versions"] or "{}") for row in db.query("SELECT id, versions FROM runs")}


def run_row(db: Database, run_id: int):
    return db.query("SELECT * FROM runs WHERE id=?", (run_id,))[0]


def counts(db: Database, scenario: str | None = None) -> tuple[list, list]:
    """Runs by status and pages by validity (of one scenario, or all)."""
    where, params = ("WHERE s.name = ?", [scenario]) if scenario else ("", [])
    runs = db.query(f"SELECT r.status, COUNT(*) AS n FROM runs r JOIN scenarios s ON s.id = r.scenario_id "
                    f"{where} GROUP BY r.status", params)
    pages = db.query(f"SELECT p.valid, COUNT(*) AS n FROM pages p JOIN runs r ON r.id = p.run_id "
                     f"JOIN scenarios s ON s.id = r.scenario_id {where} GROUP BY p.valid", params)
    return runs, pages


def latest_runs_per_cell(db: Database, scenario: str, disturbed: bool = False) -> list:
    """The latest valid run of each cell of `scenario`; with `disturbed`, the latest that
    completed, valid or not."""
    usable = "status = 'ok'" if disturbed else "valid = 1"
    return db.query(f"SELECT r.* FROM runs r JOIN scenarios s ON s.id = r.scenario_id WHERE s.name=? AND "
                    f"r.{usable} AND r.id IN (SELECT MAX(id) FROM runs WHERE {usable} GROUP BY cell_key) "
                    f"ORDER BY r.id", (scenario,))


def valid_runs(db: Database, scenario: str) -> list:
    """Every valid run of `scenario`, in the order they were stored."""
    return db.query("SELECT r.* FROM runs r JOIN scenarios s ON s.id = r.scenario_id "
                    "WHERE s.name=? AND r.valid=1 ORDER BY r.id", (scenario,))


def flows_of_run(db: Database, run_id: int, kind: str) -> list:
    """A run's flows of one kind (rt, bulk): id, label and number, in order."""
    return db.query("SELECT id, label, number FROM flows WHERE run_id=? AND kind=? ORDER BY number", (run_id, kind))


def rt_spans(db: Database, run_id: int) -> list:
    """Each RT flow's span in a run: its rate log's first and last time (ns)."""
    return db.query("SELECT started_ns, ended_ns FROM flows WHERE run_id=? AND kind='rt' "
                    "AND started_ns IS NOT NULL AND ended_ns IS NOT NULL ORDER BY number", (run_id,))


def flow_sample_rows(db: Database, flow_id: int) -> list:
    return db.query("SELECT time_ns, bps FROM flow_samples WHERE flow_id=? ORDER BY time_ns", (flow_id,))


def host_byte_rows(db: Database, run_id: int) -> list:
    """Each client host's received bytes over time (runs with more than one client host)."""
    return db.query("SELECT time_ns, host, rx_bytes FROM host_bytes WHERE run_id=? ORDER BY time_ns, host", (run_id,))


def bulk_rtt_rows(db: Database, flow_id: int) -> list:
    """A bulk flow's own RTT samples (its sender's), in time order."""
    return db.query("SELECT time_ns, rtt_ms FROM bulk_rtts WHERE flow_id=? ORDER BY time_ns", (flow_id,))


def recent_runs(db: Database, scenario: str | None, last: int) -> list:
    """The `last` runs (of one scenario, or all), newest first, with their page counts."""
    where, params = ("WHERE s.name = ?", [scenario]) if scenario else ("", [])
    return db.query(
        f"SELECT r.id, s.name, r.engine, r.time_mode, r.seed, r.scheduler, r.controller, r.repetition, r.status, "
        f"r.duration_s, r.host_load, "
        f"r.error, (SELECT COUNT(*) FROM pages p WHERE p.run_id = r.id) AS pages, "
        f"(SELECT COUNT(*) FROM pages p WHERE p.run_id = r.id AND p.valid = 1) AS valid "
        f"FROM runs r JOIN scenarios s ON s.id = r.scenario_id {where} ORDER BY r.id DESC LIMIT ?",
        [*params, last])
