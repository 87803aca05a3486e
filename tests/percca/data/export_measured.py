# SPDX-License-Identifier: MIT
"""Writes percca-fit-measured.json: the stored rows of real lab runs (percca_runs,
percca_ccas, percca_flows and each scenario's text) that tests/percca/test_percca_fit.py
loads into a fresh database, so the fit and its validation are tested on measured data
without booting a VM. Occupancy samples and queue rows are left out (the fit reads neither).

    python tests/percca/data/export_measured.py DB OUT.json NOTE SCENARIO...
"""

import json
import sys

from confucius.experiment.db import Database

RUN_COLUMNS = ("point_key", "policy", "qdisc", "service", "weights", "queues", "classifier",
               "classifier_kind", "f1_target", "f1_drawn", "seed", "flows", "rate_bps", "rtt_s",
               "buffer_packets", "duration_s", "warmup_s", "window_s", "tc_commands", "status",
               "started_unix", "wall_s", "results_dir", "engine", "time_mode", "guest_kernel",
               "git_commit", "git_dirty", "min_thr", "jfi", "total_bps", "model_simple", "model_advanced")


def export(db: Database, names: list[str]) -> list[dict]:
    scenarios = []
    for name in names:
        (sc,) = db.query("SELECT * FROM scenarios WHERE name = ? ORDER BY id DESC LIMIT 1", (name,))
        runs = []
        for run in db.query("SELECT * FROM percca_runs WHERE scenario_id = ? AND status = 'ok' ORDER BY id",
                            (sc["id"],)):
            runs.append({"run": {k: run[k] for k in RUN_COLUMNS},
                         "ccas": [dict(r) for r in db.query(
                             "SELECT cca, flows, thr_bps, avg_bps, normalised FROM percca_ccas WHERE run_id = ?",
                             (run["id"],))],
                         "flows": [dict(r) for r in db.query(
                             "SELECT number, cca, classified_as, queue, port, bps FROM percca_flows "
                             "WHERE run_id = ? ORDER BY number", (run["id"],))]})
        scenarios.append({"name": name, "digest": sc["digest"], "path": sc["path"], "text": sc["text"],
                          "runs": runs})
    return scenarios


def main(db_path: str, out: str, note: str, *names: str) -> None:
    with Database(db_path) as db:
        data = {"measured": note, "scenarios": export(db, list(names))}
    with open(out, "w") as f:
        json.dump(data, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main(*sys.argv[1:])
