# SPDX-License-Identifier: MIT
"""The per-CCA experiment's part of the results database (confucius/percca, paper 003):
bulk CCA mixes, one percca_runs row per point with its CCAs, flows, queues and queue
occupancy; how a run is written and every query of them."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .db import Database

TABLES = """
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
# Added in version 9 (db.UPGRADABLE_VERSIONS): the runs' versions, unknown before.
ADDED_COLUMNS = {"percca_runs": (("versions", "TEXT"),)}
RUN_IDENTITY = {"percca_runs": ("point_key", "started_unix", "results_dir")}
SAMPLE_TABLES = ("percca_occupancy",)


def store_run(db: Database, scenario_id: int, run: dict, ccas: list[dict], flows: list[dict],
              queues: list[dict], occupancy: list[tuple]) -> int:
    """One per-CCA run in one transaction: the percca_runs row and, when it measured
    anything, its CCAs, flows, queues and occupancy samples."""
    with db.conn:
        run_id = db.insert("percca_runs", {"scenario_id": scenario_id, **run})
        for table, rows in (("percca_ccas", ccas), ("percca_flows", flows), ("percca_queues", queues)):
            for row in rows:
                db.insert(table, {"run_id": run_id, **row})
        db.insert_many("percca_occupancy", ("run_id", "time_ns", "queue", "packets"),
                       ((run_id, *sample) for sample in occupancy))
    return run_id


def check_programs(db: Database, scenario_id: int, programs: dict[str, str | None]) -> None:
    """As db_runs.check_programs, for the measured points of a per-CCA scenario."""
    found = {r[0] for r in db.query(
        "SELECT DISTINCT versions FROM percca_runs WHERE scenario_id=? AND status='ok'", (scenario_id,))}
    db.refuse_other_programs(found, programs, "points")


def done_points(db: Database, scenario_id: int) -> set[str]:
    return {r[0] for r in db.query("SELECT point_key FROM percca_runs WHERE scenario_id=? AND status='ok'",
                                   (scenario_id,))}


def successful_runs(db: Database, scenario: str | None = None) -> list:
    """The successful runs (of one scenario, or all) with their scenario's name, by scenario,
    policy, F1 target and classifier."""
    where, params = ("AND s.name = ?", [scenario]) if scenario else ("", [])
    return db.query(
        "SELECT s.name, r.* FROM percca_runs r JOIN scenarios s ON s.id = r.scenario_id "
        f"WHERE r.status = 'ok' {where} ORDER BY s.name, r.policy, r.f1_target, r.classifier", params)


def successful_runs_of(db: Database, names: list[str]) -> list:
    """The successful runs of the scenarios `names`, by scenario, policy, F1 target,
    classifier and seed."""
    marks = ",".join("?" * len(names))
    return db.query(f"SELECT s.name, r.* FROM percca_runs r JOIN scenarios s ON s.id = r.scenario_id "
                    f"WHERE r.status = 'ok' AND s.name IN ({marks}) ORDER BY s.name, r.policy, "
                    "r.f1_target, r.classifier, r.seed", list(names))


def shared_buffer_runs(db: Database, names: list[str]) -> list:
    """The successful shared-buffer runs of the scenarios `names`: id and flows per CCA."""
    marks = ",".join("?" * len(names))
    return db.query(f"SELECT r.id, r.flows FROM percca_runs r JOIN scenarios s ON s.id = r.scenario_id "
                    f"WHERE r.status = 'ok' AND r.policy = 'shared' AND s.name IN ({marks})", names)


def per_flow_throughputs(db: Database, run_id: int) -> dict[str, float]:
    """Each CCA's mean throughput per flow in a run (avgThr_i), of the CCAs it ran."""
    return {r["cca"]: r["avg_bps"] for r in db.query(
        "SELECT cca, avg_bps FROM percca_ccas WHERE run_id = ? AND flows > 0", (run_id,))}


def drawn_classes(db: Database, run_id: int) -> list[tuple[str, str]]:
    """Each flow of a run: its CCA and the class the classifier drew for it."""
    return [(f["cca"], f["classified_as"]) for f in db.query(
        "SELECT cca, classified_as FROM percca_flows WHERE run_id = ?", (run_id,))]
