# SPDX-License-Identifier: MIT
"""Flent's part of the results database: one row per Flent test of a run (its data file,
plot and summary, lab/flent_files.py), one per bulk flow of a test (its own RTT) and one
per server of an rtt_fair test (its flows' throughput and own RTT, its ping), how they are
written and how the report reads them."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .db import Database

TABLES = """
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
    download_mbps REAL, upload_mbps REAL,  -- TCP download sum, TCP upload sum: netperf's figures per flow, summed
    down_rtt_median_ms REAL, down_rtt_p95_ms REAL,   -- the bulk flows' own RTT (tcp_info) per direction,
    up_rtt_median_ms REAL, up_rtt_p95_ms REAL);      -- over all its flows' samples in the window
CREATE INDEX IF NOT EXISTS flent_tests_run ON flent_tests (run_id);
CREATE TABLE IF NOT EXISTS flent_flows (
    id INTEGER PRIMARY KEY, flent_test_id INTEGER NOT NULL REFERENCES flent_tests(id),
    direction TEXT NOT NULL,           -- download or upload
    flow TEXT NOT NULL,                -- Flent's series (uploads) or the sender's socket (downloads)
    samples INTEGER NOT NULL, rtt_median_ms REAL NOT NULL, rtt_p95_ms REAL NOT NULL);
CREATE INDEX IF NOT EXISTS flent_flows_test ON flent_flows (flent_test_id);
CREATE TABLE IF NOT EXISTS flent_servers (
    id INTEGER PRIMARY KEY, flent_test_id INTEGER NOT NULL REFERENCES flent_tests(id),
    address TEXT NOT NULL, rtt_ms REAL NOT NULL,    -- rtt_fair's server and the RTT the lab gives it
    download_mbps REAL, upload_mbps REAL,           -- its download's and upload's netperf figures
    down_rtt_median_ms REAL, down_rtt_p95_ms REAL,  -- their own RTT (tcp_info) over the window
    up_rtt_median_ms REAL, up_rtt_p95_ms REAL,
    ping_samples INTEGER NOT NULL, ping_median_ms REAL);
CREATE INDEX IF NOT EXISTS flent_servers_test ON flent_servers (flent_test_id);
"""
SERVER_COLUMNS = ("address", "rtt_ms", "download_mbps", "upload_mbps", "down_rtt_median_ms", "down_rtt_p95_ms",
                  "up_rtt_median_ms", "up_rtt_p95_ms", "ping_samples", "ping_median_ms")
# What schema 10 added to the tables of older databases (db.py's upgrade adds them).
ADDED_COLUMNS = {"flent_tests": tuple((name, "REAL") for name in (
    "down_rtt_median_ms", "down_rtt_p95_ms", "up_rtt_median_ms", "up_rtt_p95_ms"))}


def store_flent_test(db: Database, run_id: int, test) -> None:
    event, summary = test.event, test.summary
    row = {"run_id": run_id, "number": test.number, "test": event.test, "started_ns": event.started_ns,
           "ended_ns": event.ended_ns, "exit": event.exit,
           "data_file": str(test.data_file.resolve()) if test.data_file else None,
           "plot_file": str(test.plot.resolve()) if test.plot else None, "error": test.error, "plot_error": test.plot_error}
    if summary is not None:
        row.update(window_from_s=summary.window_s[0], window_to_s=summary.window_s[1],
                   **{k: v for k, v in summary.to_dict().items() if k not in ("test", "window_s", "flows", "servers")})
    test_id = db.insert("flent_tests", row)
    if summary is not None:
        db.insert_many("flent_flows", ("flent_test_id", "direction", "flow", "samples", "rtt_median_ms", "rtt_p95_ms"),
                       [(test_id, f.direction, f.flow, f.samples, f.median_ms, f.p95_ms) for f in summary.flows])
        db.insert_many("flent_servers", ("flent_test_id", *SERVER_COLUMNS),
                       [(test_id, *(getattr(share, name) for name in SERVER_COLUMNS)) for share in summary.servers])


def summarised_tests(db: Database, scenario: str | None = None) -> list:
    """The Flent tests with a summary of valid runs (of one scenario, or all), with the
    run's scenario, scheduler, engine and time mode, run by run."""
    where, params = ("AND s.name = ?", [scenario]) if scenario else ("", [])
    return db.query(
        "SELECT s.name AS scenario, r.scheduler, r.engine, r.time_mode, f.* FROM flent_tests f "
        "JOIN runs r ON r.id = f.run_id JOIN scenarios s ON s.id = r.scenario_id "
        f"WHERE r.status = 'ok' AND r.valid = 1 AND f.latency_samples > 0 {where} ORDER BY r.id, f.number", params)


def stored_servers(db: Database, flent_test_id: int) -> list:
    """An rtt_fair test's servers as stored, in the order of their RTTs."""
    return db.query(f"SELECT {', '.join(SERVER_COLUMNS)} FROM flent_servers WHERE flent_test_id = ? ORDER BY id",
                    [flent_test_id])
