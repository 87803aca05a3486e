# SPDX-License-Identifier: MIT
"""The results database: SQLite (Python's own sqlite3), one file, one row per run, frame,
page, object, flow and qdisc sample.

SQLite rather than DuckDB: it ships with Python (no dependency), a half-written run is
rolled back as a whole (one transaction per run), and the matrix writing while a report
reads is what its WAL mode is for. The tables are small enough (a 1500-page matrix is a
few million frame rows) for either.

Times: `*_ns` columns are the guest's CLOCK_MONOTONIC (per run: the VM boots afresh), `*_s`
columns of objects and connections count from their page load's start, `*_unix` are host
wall clock. Rates in bit/s, delays in ms.

    db = Database("results/lab/lab.sqlite")
    run_id = db.store_run(scenario, run_info, run_data)
    db.valid_units(cell_key)       # what a resumed matrix can skip
    db.merge("other.sqlite")       # a matrix measured in several processes, as one
    db.export("part.sqlite.xz", since_unix=t0)   # the runs since t0, small, to keep or send
"""

from __future__ import annotations

import json
import lzma
import math
import shutil
import sqlite3
import tempfile
from contextlib import contextmanager
from graphlib import TopologicalSorter
from pathlib import Path
from typing import Iterable, Iterator

from confucius import metrics
from confucius.provenance import recorded_programs

# The lab's database unless told otherwise (`--db`): the runner writes it, the report reads it.
DEFAULT_DB = Path(__file__).resolve().parents[2] / "results" / "lab" / "lab.sqlite"

SCHEMA_VERSION = 9
# Older versions this code still reads, once it has added what they lack: the tables
# (3 added qdisc_flows, 6 the percca_* tables, 7 flent_tests), the runs' engine columns (4),
# which every earlier run had as below (only qemu in real time existed), the pages'
# warm-up count (5; unknown before), the runs' seed (8; none before) and the per-CCA runs'
# versions (9; unknown before).
UPGRADABLE_VERSIONS = {2, 3, 4, 5, 6, 7, 8}
ADDED_COLUMNS = {"runs": (("engine", "TEXT NOT NULL DEFAULT 'qemu'"),
                          ("time_mode", "TEXT NOT NULL DEFAULT 'real'"),
                          ("seed", "INTEGER")),
                 "pages": (("warmups", "INTEGER"),),
                 "percca_runs": (("versions", "TEXT"),)}

SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS scenarios (
    id INTEGER PRIMARY KEY, name TEXT NOT NULL, digest TEXT NOT NULL, path TEXT, text TEXT NOT NULL,
    UNIQUE (name, digest));
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
-- Flent's tests (lab/flent.py): one row per test of a run, its data file and summary.
CREATE TABLE IF NOT EXISTS flent_tests (
    id INTEGER PRIMARY KEY, run_id INTEGER NOT NULL REFERENCES runs(id),
    number INTEGER NOT NULL, test TEXT NOT NULL,
    started_ns INTEGER NOT NULL, ended_ns INTEGER NOT NULL, exit INTEGER NOT NULL,
    data_file TEXT,                    -- Flent's *.flent.gz, the source of the figures
    plot_file TEXT,                    -- Flent's default plot of it (PNG)
    error TEXT, plot_error TEXT,
    window_from_s REAL, window_to_s REAL,   -- the load window, s from Flent's start
    latency TEXT,                      -- the series: Ping (ms) ICMP (round trip) or VoIP::delay (one way)
    latency_samples INTEGER, latency_median_ms REAL, latency_p99_ms REAL,
    udp_samples INTEGER, udp_median_ms REAL, udp_p99_ms REAL,   -- Ping (ms) UDP * (irtt)
    download_mbps REAL, upload_mbps REAL);  -- TCP download sum, TCP upload sum: netperf's figures per flow, summed
CREATE INDEX IF NOT EXISTS flent_tests_run ON flent_tests (run_id);
-- Per-CCA queueing runs (confucius/percca, seed 003): bulk CCA mixes, one row per run.
CREATE TABLE IF NOT EXISTS percca_runs (
    id INTEGER PRIMARY KEY,
    scenario_id INTEGER NOT NULL REFERENCES scenarios(id),
    point_key TEXT NOT NULL,           -- policy/classifier/seed
    policy TEXT NOT NULL,              -- shared | per-cca | per-class
    qdisc TEXT NOT NULL, service TEXT NOT NULL, weights TEXT,
    queues TEXT NOT NULL,              -- JSON: each queue's CCAs
    classifier TEXT NOT NULL,          -- label: -, ideal, f1=0.83, dragonfly@5s, accuracy=...
    classifier_kind TEXT, f1_target REAL,
    f1_drawn REAL,                     -- share of flows the draw classified correctly
    seed INTEGER NOT NULL,
    flows TEXT NOT NULL,               -- JSON: {cca: count}
    rate_bps REAL NOT NULL, rtt_s REAL NOT NULL, buffer_packets INTEGER NOT NULL,
    duration_s REAL NOT NULL, warmup_s REAL NOT NULL, window_s REAL,
    tc_commands TEXT NOT NULL,         -- JSON list: queues and filters as installed
    status TEXT NOT NULL, error TEXT,
    started_unix REAL NOT NULL, wall_s REAL, results_dir TEXT NOT NULL,
    engine TEXT NOT NULL, time_mode TEXT NOT NULL, guest_kernel TEXT,
    git_commit TEXT, git_dirty INTEGER,
    versions TEXT,                     -- JSON: as the runs' (lab or simulator programs)
    min_thr REAL, jfi REAL, total_bps REAL,   -- confucius/metrics.py
    model_simple REAL, model_advanced REAL);  -- the models' MinThr for this point
CREATE INDEX IF NOT EXISTS percca_runs_point ON percca_runs (scenario_id, point_key);
CREATE TABLE IF NOT EXISTS percca_ccas (
    run_id INTEGER NOT NULL REFERENCES percca_runs(id), cca TEXT NOT NULL, flows INTEGER NOT NULL,
    thr_bps REAL, avg_bps REAL, normalised REAL);   -- Thr_i, avgThr_i, avgThr_i / fairShare
CREATE TABLE IF NOT EXISTS percca_flows (
    run_id INTEGER NOT NULL REFERENCES percca_runs(id), number INTEGER NOT NULL,
    cca TEXT NOT NULL, classified_as TEXT NOT NULL, queue INTEGER NOT NULL, port INTEGER NOT NULL,
    bps REAL);
CREATE TABLE IF NOT EXISTS percca_queues (
    run_id INTEGER NOT NULL REFERENCES percca_runs(id), queue INTEGER NOT NULL,
    ccas TEXT NOT NULL, flows INTEGER NOT NULL,
    mean_packets REAL, max_packets INTEGER, drops INTEGER);
CREATE TABLE IF NOT EXISTS percca_occupancy (
    run_id INTEGER NOT NULL REFERENCES percca_runs(id), time_ns INTEGER NOT NULL,
    queue INTEGER NOT NULL, packets INTEGER NOT NULL);
"""


# How merge() knows that a source's run is here already: a run copied twice is the same row.
_RUN_IDENTITY = {"runs": ("cell_key", "started_unix", "results_dir"),
                 "percca_runs": ("point_key", "started_unix", "results_dir")}
# Rows that runs share rather than own: a source's row becomes the destination's equal one.
_SHARED_IDENTITY = {"scenarios": ("name", "digest")}


class DatabaseError(RuntimeError):
    """A database that is not this project's, or of another schema version."""


class Database:
    def __init__(self, path):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.conn = sqlite3.connect(self.path, timeout=60)
        self.conn.row_factory = sqlite3.Row
        try:
            self.conn.execute("PRAGMA journal_mode=WAL")
            self.conn.execute("PRAGMA foreign_keys=ON")
            self._check_schema()
        except sqlite3.DatabaseError as err:
            self.conn.close()
            raise DatabaseError(f"{self.path} is not a results database: {err}") from None

    def _check_schema(self) -> None:
        tables = {r[0] for r in self.conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        if tables and "meta" not in tables:
            raise DatabaseError(f"{self.path} is an SQLite file but not a results database")
        if "meta" in tables:
            row = self.conn.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()
            if row is None or int(row[0]) not in {SCHEMA_VERSION, *UPGRADABLE_VERSIONS}:
                raise DatabaseError(f"{self.path} has schema version {row[0] if row else '?'}, "
                                    f"this code reads version {SCHEMA_VERSION}")
        with self.conn:
            self._add_missing_columns(tables)
            self.conn.executescript(SCHEMA)
            self.conn.execute("INSERT OR REPLACE INTO meta VALUES ('schema_version', ?)", (str(SCHEMA_VERSION),))

    def _add_missing_columns(self, tables: set[str]) -> None:
        for table, columns in ADDED_COLUMNS.items():
            if table not in tables:
                continue
            have = {r[1] for r in self.conn.execute(f"PRAGMA table_info({table})")}
            for name, declaration in columns:
                if name not in have:
                    self.conn.execute(f"ALTER TABLE {table} ADD COLUMN {name} {declaration}")

    def close(self) -> None:
        self.conn.close()

    def __enter__(self) -> Database:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # ------------------------------------------------------------------ queries

    def query(self, sql: str, params: Iterable = ()) -> list[sqlite3.Row]:
        return self.conn.execute(sql, tuple(params)).fetchall()

    def _for_keys(self, sql: str, keys: Iterable[str]) -> Iterator[sqlite3.Row]:
        """The rows of `sql`, whose `{marks}` stands for the keys' placeholders, for all
        `keys`, asked in chunks that SQLite's limit on parameters allows."""
        keys = list(keys)
        for start in range(0, len(keys), 500):
            chunk = keys[start:start + 500]
            yield from self.conn.execute(sql.format(marks=",".join("?" * len(chunk))), chunk)

    def valid_units(self, unit_keys: Iterable[str]) -> set[str]:
        """The page measurements (unit keys) that have a valid result."""
        return {r[0] for r in self._for_keys(
            "SELECT DISTINCT unit_key FROM pages WHERE valid=1 AND unit_key IN ({marks})", unit_keys)}

    def attempts(self, unit_keys: Iterable[str]) -> dict[str, int]:
        """How often each page measurement was tried (valid or not)."""
        return {key: n for key, n in self._for_keys(
            "SELECT unit_key, COUNT(*) FROM pages WHERE unit_key IN ({marks}) GROUP BY unit_key", unit_keys)}

    def check_programs(self, cell_keys: Iterable[str], programs: dict[str, str | None]) -> None:
        """Refuse to add to cells whose valid measurements other programs produced: a cell's
        key names its conditions, not the code that measured it, so a resumed cell would
        mix two versions. `programs` holds the digests of what would run now, by the names
        the runs' `versions` record them under. Valid as a resumed matrix counts it: a valid
        run, or a valid page of any run (a run that failed part-way keeps the pages it
        finished)."""
        found = {r[0] for r in self._for_keys(
            "SELECT DISTINCT versions FROM runs WHERE cell_key IN ({marks}) AND "
            "((status='ok' AND valid=1) OR EXISTS (SELECT 1 FROM pages WHERE pages.run_id=runs.id AND pages.valid=1))",
            cell_keys)}
        self._refuse_other_programs(found, programs, "cells")

    def check_percca_programs(self, scenario_id: int, programs: dict[str, str | None]) -> None:
        """As check_programs, for the measured points of a per-CCA scenario."""
        found = {r[0] for r in self.conn.execute(
            "SELECT DISTINCT versions FROM percca_runs WHERE scenario_id=? AND status='ok'", (scenario_id,))}
        self._refuse_other_programs(found, programs, "points")

    def _refuse_other_programs(self, found: set[str | None], programs: dict[str, str | None], what: str) -> None:
        # A digest unknown (runs stored before versions were, a program not built now) is no
        # evidence of another program: only two known digests that differ are.
        differing: dict[str, set] = {}
        for versions in found:
            then = recorded_programs(json.loads(versions or "{}"))
            for name, digest in programs.items():
                if None not in (digest, then.get(name)) and then[name] != digest:
                    differing.setdefault(name, set()).add(then[name])
        if differing:
            digests = "; ".join(f"{name} {', '.join(sorted(then))} then, {programs[name]} now"
                                for name, then in sorted(differing.items()))
            raise DatabaseError(f"{self.path} holds measurements of these {what} made by other programs "
                                f"(sha256 {digests}): resuming would mix two versions. Resume with the "
                                f"programs that made them, or measure into another database (--db).")

    def run_attempts(self, cell_key: str) -> tuple[bool, int]:
        """For runs without pages: (has a valid run, runs tried)."""
        rows = self.query("SELECT valid FROM runs WHERE cell_key=? AND status='ok'", (cell_key,))
        tried = self.query("SELECT COUNT(*) FROM runs WHERE cell_key=?", (cell_key,))[0][0]
        return any(r["valid"] for r in rows), tried

    # ------------------------------------------------------------------ writing

    def scenario_id(self, name: str, digest: str, path: str, text: str) -> int:
        with self.conn:
            self.conn.execute("INSERT OR IGNORE INTO scenarios (name, digest, path, text) VALUES (?,?,?,?)",
                              (name, digest, path, text))
        return self.conn.execute("SELECT id FROM scenarios WHERE name=? AND digest=?", (name, digest)).fetchone()[0]

    def store_run(self, scenario_id: int, info: dict, data=None) -> int:
        """One run in one transaction: `info` (the runs row's fields) and, unless the run
        failed, everything `data` (a results.RunData) holds."""
        with self.conn:
            run_id = self._insert("runs", {"scenario_id": scenario_id, **info})
            if data is not None:
                _store_data(self, run_id, data)
        return run_id

    def store_percca_run(self, scenario_id: int, run: dict, ccas: list[dict], flows: list[dict],
                         queues: list[dict], occupancy: list[tuple]) -> int:
        """One per-CCA run (confucius/percca) in one transaction: the percca_runs row and,
        when it measured anything, its CCAs, flows, queues and occupancy samples."""
        with self.conn:
            run_id = self._insert("percca_runs", {"scenario_id": scenario_id, **run})
            for table, rows in (("percca_ccas", ccas), ("percca_flows", flows), ("percca_queues", queues)):
                for row in rows:
                    self._insert(table, {"run_id": run_id, **row})
            self._insert_many("percca_occupancy", ("run_id", "time_ns", "queue", "packets"),
                              ((run_id, *sample) for sample in occupancy))
        return run_id

    # ------------------------------------------------------------------ merging

    def merge(self, source) -> dict[str, int]:
        """Copy in every run of the results database `source` that this one lacks, with all
        that hangs on it (pages, flows, frames, samples ...), in one transaction: rows get
        new ids, scenarios are shared, runs already here are skipped. The rows copied per table."""
        source = Path(source)
        check_source(source)
        if source.resolve() == self.path.resolve():
            raise DatabaseError(f"{source} is the database it would be merged into")
        with _plain(source) as plain:
            return self._merge_attached(plain)

    def _merge_attached(self, source: Path) -> dict[str, int]:
        self.conn.execute("ATTACH DATABASE ? AS src", (str(source),))
        tables: list[str] = []
        try:
            tables = self._tables_parents_first()
            with self.conn:
                return {table: self._copy_table(table) for table in tables}
        finally:
            for table in tables:
                self.conn.execute(f'DROP TABLE IF EXISTS temp."merged_{table}"')
            self.conn.execute("DETACH DATABASE src")

    # ------------------------------------------------------------------ exporting

    def export(self, target, since_unix: float | None = None, samples: bool = False) -> dict[str, int]:
        """Write the new database `target` with the runs (and per-CCA runs) started at or after
        `since_unix` (all by default), with all that hangs on them. Without `samples`, what the
        load reports do not read is left out (EXPORT_SAMPLE_TABLES), and the RT flows' frames
        and rate logs keep only the time around each page load: a matrix's measurements small
        enough to keep beside the code (data/README.md). A target named *.xz is compressed,
        and `merge` reads it as it is. The rows kept per table."""
        return _write_export(self.conn, Path(target), since_unix, samples)

    def _tables_parents_first(self) -> list[str]:
        def names(schema: str) -> set[str]:
            return {r[0] for r in self.conn.execute(f"SELECT name FROM {schema}.sqlite_master WHERE type='table'")}
        tables = (names("main") & names("src")) - {"meta"}
        return _parents_first(self.conn, tables)

    def _copy_table(self, table: str) -> int:
        """Copy `table`'s rows whose parents were copied, their references renumbered;
        a table with ids records old -> new in temp.merged_TABLE for its children."""
        def columns(schema: str) -> list[str]:
            return [r["name"] for r in self.conn.execute(f'PRAGMA {schema}.table_info("{table}")')]
        mine = columns("main")
        shared = [c for c in mine if c in set(columns("src")) and c != "id"]
        parents = list(_foreign_keys(self.conn, table).items())
        joins = " ".join(f'LEFT JOIN temp."merged_{parent}" p{i} ON p{i}.old = s."{column}"'
                         for i, (column, parent) in enumerate(parents))
        kept = [f'(s."{column}" IS NULL OR p{i}.old IS NOT NULL)' for i, (column, _) in enumerate(parents)]
        if table in _RUN_IDENTITY:
            same = " AND ".join(f'm."{c}" IS s."{c}"' for c in _RUN_IDENTITY[table])
            kept.append(f'NOT EXISTS (SELECT 1 FROM main."{table}" m WHERE {same})')
        where = " WHERE " + " AND ".join(kept) if kept else ""
        renumbered = {column: f"p{i}.new" for i, (column, _) in enumerate(parents)}
        values = ", ".join(renumbered.get(c, f's."{c}"') for c in shared)
        names = ", ".join(f'"{c}"' for c in shared)
        if "id" not in mine:
            return self.conn.execute(f'INSERT INTO main."{table}" ({names}) SELECT {values} FROM src."{table}" s '
                                     f"{joins}{where}").rowcount
        self.conn.execute(f'CREATE TEMP TABLE "merged_{table}" (old INTEGER PRIMARY KEY, new INTEGER NOT NULL)')
        if table in _SHARED_IDENTITY:
            copied = self.conn.execute(f'INSERT OR IGNORE INTO main."{table}" ({names}) '
                                       f'SELECT {values} FROM src."{table}" s {joins}{where}').rowcount
            same = " AND ".join(f'm."{c}" = s."{c}"' for c in _SHARED_IDENTITY[table])
            self.conn.execute(f'INSERT INTO temp."merged_{table}" SELECT s.id, m.id FROM src."{table}" s '
                              f'JOIN main."{table}" m ON {same}')
            return copied
        offset = self.conn.execute(f'SELECT COALESCE(MAX(id), 0) FROM main."{table}"').fetchone()[0]
        self.conn.execute(f'INSERT INTO temp."merged_{table}" SELECT s.id, s.id + ? FROM src."{table}" s '
                          f"{joins}{where}", (offset,))
        return self.conn.execute(f'INSERT INTO main."{table}" (id, {names}) SELECT n.new, {values} '
                                 f'FROM src."{table}" s JOIN temp."merged_{table}" n ON n.old = s.id {joins}').rowcount

    def _insert(self, table: str, row: dict) -> int:
        names = ",".join(row)
        marks = ",".join("?" * len(row))
        return self.conn.execute(f"INSERT INTO {table} ({names}) VALUES ({marks})", tuple(row.values())).lastrowid

    def _insert_many(self, table: str, columns: tuple[str, ...], rows: Iterable[tuple]) -> None:
        marks = ",".join("?" * len(columns))
        self.conn.executemany(f"INSERT INTO {table} ({','.join(columns)}) VALUES ({marks})", rows)


# What an export leaves out unless asked for samples: time series that the timelines and the
# lab's checks read, and the load reports (summary, seeds, stalls, steps) do not.
EXPORT_SAMPLE_TABLES = ("qdisc_stats", "qdisc_flows", "flow_samples", "probes", "percca_occupancy")
# Of an RT flow's frames and rate log, an export without samples keeps each page load's
# window and this much before the load (more than `report timeline` draws by default).
EXPORT_MARGIN_NS = 10 * 10**9


def _tables(conn: sqlite3.Connection) -> list[str]:
    return [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table' AND name != 'meta' "
                                       "ORDER BY name")]


def _foreign_keys(conn: sqlite3.Connection, table: str) -> dict[str, str]:
    """The parent table of each of `table`'s referencing columns (in the main schema)."""
    return {r[3]: r[2] for r in conn.execute(f'PRAGMA main.foreign_key_list("{table}")')}


def _parents_first(conn: sqlite3.Connection, tables) -> list[str]:
    """`tables`, each after the tables among them that it references."""
    graph = {t: {parent for parent in _foreign_keys(conn, t).values() if parent in tables} for t in tables}
    return list(TopologicalSorter(graph).static_order())


def _prune(conn: sqlite3.Connection, since_unix: float | None, samples: bool) -> None:
    """Reduce a copy of a results database to an export (Database.export), then compact it."""
    with conn:
        if since_unix is not None:
            for table in _RUN_IDENTITY:
                conn.execute(f"DELETE FROM {table} WHERE started_unix < ?", (since_unix,))
        if not samples:
            for table in EXPORT_SAMPLE_TABLES:
                conn.execute(f"DELETE FROM {table}")
            for table, column in (("frames", "capture_ns"), ("rt_rates", "time_ns")):
                conn.execute(f"DELETE FROM {table} WHERE NOT EXISTS (SELECT 1 FROM flows f JOIN pages p "
                             f"ON p.run_id = f.run_id AND p.session = f.session WHERE f.id = {table}.flow_id "
                             f"AND {table}.{column} BETWEEN p.started_ns - ? AND p.window_end_ns)",
                             (EXPORT_MARGIN_NS,))
        for table in _parents_first(conn, set(_tables(conn))):
            for column, parent in _foreign_keys(conn, table).items():
                conn.execute(f'DELETE FROM "{table}" WHERE "{column}" IS NOT NULL '
                             f'AND "{column}" NOT IN (SELECT id FROM "{parent}")')
        conn.execute("DELETE FROM scenarios WHERE id NOT IN (SELECT scenario_id FROM runs "
                     "UNION SELECT scenario_id FROM percca_runs)")
        # A third of the file, and opening it as a Database makes them again (SCHEMA).
        for (index,) in conn.execute("SELECT name FROM sqlite_master WHERE type='index' AND sql IS NOT NULL").fetchall():
            conn.execute(f'DROP INDEX "{index}"')
    conn.execute("VACUUM")
    conn.execute("PRAGMA journal_mode=DELETE")   # one file, no WAL beside it


def export(source: Path, target: Path, since_unix: float | None = None, samples: bool = False) -> dict[str, int]:
    """Database.export from the results database `source` (NAME.sqlite.xz too), which is
    only read: a matrix may be writing it."""
    check_source(source)
    with _plain(source) as plain:
        conn = sqlite3.connect(f"{plain.resolve().as_uri()}?mode=ro", uri=True)
        try:
            return _write_export(conn, target, since_unix, samples)
        finally:
            conn.close()


def _write_export(conn: sqlite3.Connection, target: Path, since_unix: float | None, samples: bool) -> dict[str, int]:
    if target.exists():
        raise DatabaseError(f"{target} exists: an export goes into a new database")
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="confucius-export-", dir=target.parent) as tmp:
        plain = Path(tmp) / "export.sqlite"
        out = sqlite3.connect(plain)
        try:
            conn.backup(out)
            _prune(out, since_unix, samples)
            counts = {t: out.execute(f'SELECT COUNT(*) FROM "{t}"').fetchone()[0] for t in _tables(out)}
        finally:
            out.close()
        if target.suffix == ".xz":
            with plain.open("rb") as data, lzma.open(plain.with_suffix(".xz"), "wb", preset=9) as packed:
                shutil.copyfileobj(data, packed)
            plain = plain.with_suffix(".xz")
        plain.replace(target)
    return counts


@contextmanager
def _plain(path: Path) -> Iterator[Path]:
    """`path` itself, or for an xz-compressed database (NAME.sqlite.xz) its content in a
    temporary file."""
    if path.suffix != ".xz":
        yield path
        return
    with tempfile.TemporaryDirectory(prefix="confucius-db-") as tmp:
        plain = Path(tmp) / path.stem
        try:
            with lzma.open(path) as packed, plain.open("wb") as out:
                shutil.copyfileobj(packed, out)
        except (lzma.LZMAError, EOFError) as err:
            raise DatabaseError(f"{path} is not an xz-compressed results database: {err}") from None
        yield plain


def check_source(path: Path) -> None:
    """Refuse, before anything changes, a source that is not a results database this code reads."""
    if not path.is_file():
        raise DatabaseError(f"{path}: no such database")
    with _plain(path) as plain:
        _check_plain_source(plain, path)


def _check_plain_source(plain: Path, path: Path) -> None:
    try:
        conn = sqlite3.connect(f"{plain.resolve().as_uri()}?mode=ro", uri=True)
        try:
            row = conn.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()
        finally:
            conn.close()
    except sqlite3.DatabaseError as err:
        raise DatabaseError(f"{path} is not a results database: {err}") from None
    if row is None or int(row[0]) not in {SCHEMA_VERSION, *UPGRADABLE_VERSIONS}:
        raise DatabaseError(f"{path} has schema version {row[0] if row else '?'}, "
                            f"this code reads version {SCHEMA_VERSION}")


# What `tc -s -j qdisc show` prints for every qdisc; the rest is the qdisc's own statistics.
_TC_COMMON = {"kind", "handle", "root", "refcnt", "parent", "options", "bytes", "packets", "drops",
              "overlimits", "requeues", "backlog", "qlen"}


def _xstats(qdisc: dict) -> dict:
    return {k: v for k, v in qdisc.items() if k not in _TC_COMMON}


def _dump(value) -> str:
    return json.dumps(value, sort_keys=True)


def _store_data(db: Database, run_id: int, data) -> None:
    for flow in data.rt_flows():
        flow_id = db._insert("flows", {
            "run_id": run_id, "kind": "rt", "label": flow.label, "session": flow.session,
            "number": flow.number, "port": flow.port,
            "started_ns": flow.rates[0].time_ns if flow.rates else None,
            "ended_ns": flow.rates[-1].time_ns if flow.rates else None,
            "bytes": sum(f.size_bytes or 0 for f in flow.frames if f.complete)})
        db._insert_many("frames", ("flow_id", "frame_id", "capture_ns", "key", "size_bytes", "packets",
                                   "packets_received", "last_arrival_ns", "delay_ms", "complete"),
                        ((flow_id, f.frame_id, f.capture_ns, f.key, f.size_bytes, f.packets, f.packets_received,
                          f.last_arrival_ns, f.delay_ms, int(f.complete)) for f in flow.frames))
        db._insert_many("rt_rates", ("flow_id", "time_ns", "target_bps", "pacing_bps", "sent_bps", "acked_bps",
                                     "srtt_ms", "loss", "in_flight_bytes", "queue_bytes", "cwnd_bytes"),
                        ((flow_id, r.time_ns, r.target_bps, r.pacing_bps, r.sent_bps, r.acked_bps, r.srtt_ms,
                          r.loss, r.in_flight_bytes, r.queue_bytes, r.cwnd_bytes) for r in flow.rates))
    for page in data.pages:
        session = next(s for s in data.sessions if s.index == page.session)
        _store_page(db, run_id, page, [flow.frames for flow in session.flows])
    for bulk in data.bulk:
        flow_id = db._insert("flows", {
            "run_id": run_id, "kind": "bulk", "label": bulk.cca, "number": bulk.number,
            "started_ns": bulk.started_ns, "ended_ns": bulk.samples[-1][0] if bulk.samples else None,
            "bytes": bulk.bytes, "details": _dump({"error": bulk.error})})
        db._insert_many("flow_samples", ("flow_id", "time_ns", "bps"),
                        ((flow_id, t, bps) for t, bps in bulk.samples))
    db._insert_many("qdisc_stats", ("run_id", "time_ns", "handle", "parent", "kind", "bytes", "packets", "drops",
                                    "overlimits", "requeues", "backlog", "qlen", "xstats"),
                    ((run_id, t, q.get("handle"), q.get("parent", "root" if q.get("root") else None), q["kind"],
                      q.get("bytes"), q.get("packets"), q.get("drops"), q.get("overlimits"), q.get("requeues"),
                      q.get("backlog"), q.get("qlen"), _dump(_xstats(q)))
                     for t, qdiscs in data.qdisc_samples for q in qdiscs))
    db._insert_many("qdisc_flows", ("run_id", "time_ns", "bucket", "state", "class_id", "weight", "packets", "bytes",
                                    "deficit", "sojourn_us", "sport", "dport", "ip_proto"),
                    ((run_id, t, f["bucket"], f["state"], f["class"], f["weight"], f["packets"], f["bytes"],
                      f["deficit"], f["sojourn_us"], *_head_ports(f)) for t, flows in data.qdisc_flows for f in flows))
    db._insert_many("probes", ("run_id", "time_ns", "rtt_ms"), ((run_id, t, rtt) for t, rtt in data.probes))
    for test in data.flent:
        _store_flent_test(db, run_id, test)


def _store_flent_test(db: Database, run_id: int, test) -> None:
    event, summary = test.event, test.summary
    row = {"run_id": run_id, "number": test.number, "test": event.test, "started_ns": event.started_ns,
           "ended_ns": event.ended_ns, "exit": event.exit,
           "data_file": str(test.data_file.resolve()) if test.data_file else None,
           "plot_file": str(test.plot.resolve()) if test.plot else None, "error": test.error, "plot_error": test.plot_error}
    if summary is not None:
        row.update(window_from_s=summary.window_s[0], window_to_s=summary.window_s[1],
                   **{k: v for k, v in summary.to_dict().items() if k not in ("test", "window_s")})
    db._insert("flent_tests", row)


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
    page_id = db._insert("pages", row)
    if load is None:
        return
    db._insert_many("objects", ("page_id", "object_id", "domain", "size", "parent", "depth", "status", "connection",
                                "ready_s", "request_s", "first_byte_s", "last_byte_s", "received", "error"),
                    ((page_id, o.id, o.domain, o.size, o.parent, o.depth, o.status, o.connection, o.ready, o.request,
                      o.first_byte, o.last_byte, o.received, o.error) for o in load.objects))
    for c in load.connections:
        db._insert("flows", {
            "run_id": run_id, "kind": "web", "label": c.domain, "number": c.id, "page_id": page_id,
            "port": c.local_port, "started_ns": spans[c.id][0], "ended_ns": spans[c.id][1], "bytes": c.bytes,
            "details": _dump({"server": c.server, "established_s": c.established, "objects": c.objects,
                              "error": c.error})})


def _finite(value: float) -> float | None:
    return None if value is None or math.isnan(value) else value
