# SPDX-License-Identifier: MIT
"""Per-CCA runs in the database: stored in one transaction, summarised per point for the
report, and exported as the inputs of `confucius model percca-fit`."""

import json
from dataclasses import replace

import pytest

from confucius.lab import uml
from confucius.experiment import db_percca
from confucius.experiment.db import SCHEMA_VERSION, Database, DatabaseError
from confucius.lab.engine import REPO
from confucius.provenance import program_digest
from confucius.models import fitting
from confucius.percca import mix_scenario, runner, stored
from confucius.report import percca as report


def scenario_text(name, reno, bbr):
    return (f'name = "{name}"\n[link]\nrate = "100mbit"\n[flows]\nreno = {reno}\nbbr = {bbr}\n'
            '[queues]\npolicies = ["shared"]\n')


def store(db, scenario_id, policy, flows, avg, min_thr, seed=1, classifier="-", f1=None, versions=None):
    run = {"point_key": f"{policy}/{classifier}/seed={seed}", "policy": policy, "qdisc": "pfifo",
           "service": "flows", "queues": json.dumps([list(flows)]), "classifier": classifier,
           "f1_target": f1, "f1_drawn": f1 or 1.0, "seed": seed, "flows": json.dumps(flows),
           "rate_bps": 100e6, "rtt_s": 0.04, "buffer_packets": 50, "duration_s": 10, "warmup_s": 2,
           "tc_commands": "[]", "status": "ok", "started_unix": 0, "results_dir": "x", "engine": "uml",
           "time_mode": "inf-cpu", "min_thr": min_thr, "jfi": 0.5, "total_bps": 95e6,
           "model_simple": 0.1, "model_advanced": 0.12, "versions": json.dumps(versions or {})}
    ccas = [{"cca": c, "flows": n, "thr_bps": avg[c] * n, "avg_bps": avg[c], "normalised": None}
            for c, n in flows.items()]
    return db_percca.store_run(db, scenario_id, run, ccas, [], [{"queue": 0, "ccas": "+".join(flows),
                                                             "flows": sum(flows.values()),
                                                             "mean_packets": 10.0, "max_packets": 20,
                                                             "drops": 3}],
                               [(1, 0, 5), (2, 0, 7)])


def test_runs_are_summarised_and_exported_for_the_fit(tmp_path):
    with Database(tmp_path / "db.sqlite") as db:
        assert db.query("SELECT value FROM meta")[0][0] == str(SCHEMA_VERSION)
        equal = db.scenario_id("equal", "d1", str(tmp_path / "equal.toml"), scenario_text("equal", 2, 2))
        pair = db.scenario_id("pair", "d2", str(tmp_path / "pair.toml"), scenario_text("pair", 3, 1))
        store(db, equal, "shared", {"reno": 2, "bbr": 2}, {"reno": 1e6, "bbr": 20e6}, 0.1, seed=1)
        store(db, equal, "shared", {"reno": 2, "bbr": 2}, {"reno": 3e6, "bbr": 18e6}, 0.3, seed=2)
        store(db, pair, "shared", {"reno": 3, "bbr": 1}, {"reno": 2e6, "bbr": 40e6}, 0.1)
        rows = report.point_rows(db, "equal")
        assert len(rows) == 1 and rows[0].runs == 2
        assert (rows[0].min_thr, rows[0].min_thr_low, rows[0].min_thr_high) == pytest.approx((0.2, 0.1, 0.3))
        shared, pairs = stored.fit_inputs(db, ["equal", "pair"])
        assert db.query("SELECT COUNT(*) FROM percca_occupancy")[0][0] == 6
    # Equal counts give g_i (Eq. 6); two CCAs give a g_ij sample each (x_i of the first by name).
    # (the 3:1 run is no equal mix: it gives a pair sample only)
    assert {r["cca"] for r in shared} == {"reno", "bbr"} and len(shared) == 4
    g = fitting.training_aggressiveness({c: sum(r["thr"] for r in shared if r["cca"] == c) / 2
                                         for c in ("reno", "bbr")})
    assert g["bbr"] > 1 > g["reno"]
    assert [(p["cca_i"], p["cca_j"]) for p in pairs] == [("bbr", "reno")] * 3
    assert sorted(p["x_i"] for p in pairs) == [0.25, 0.5, 0.5]


def test_a_scenario_resumes_only_with_the_kernel_that_measured_its_points(tmp_path, monkeypatch):
    kernel = tmp_path / "linux"
    kernel.write_bytes(b"the kernel that measured")
    # The lab flavour's kernel is its build folder's linux (uml.FLAVOURS, as the runs look it up).
    monkeypatch.setitem(uml.FLAVOURS, "lab", (tmp_path, uml.FLAVOURS["lab"][1]))
    path = tmp_path / "mix.toml"
    path.write_text('engine = "uml"\n' + scenario_text("mix", 2, 2))
    sc = mix_scenario.load(path)
    then = program_digest(kernel)
    with Database(tmp_path / "db.sqlite") as db:
        sid = db.scenario_id(sc.name, sc.digest, str(sc.path), sc.text)
        store(db, sid, "shared", {"reno": 2, "bbr": 2}, {"reno": 1e6, "bbr": 20e6}, 0.1,
              versions={"binaries_sha256": {"uml": then}})
        db_percca.check_programs(db, sid, runner.programs(sc, list(sc.points())))
        kernel.write_bytes(b"a kernel rebuilt since")
        monkeypatch.setattr(runner, "execute", lambda *args: pytest.fail("measured despite the other kernel"))
        with pytest.raises(DatabaseError, match=f"uml {then} then, {program_digest(kernel)} now"):
            runner.run_scenario(sc, tmp_path / "db.sqlite", tmp_path / "runs")


def test_the_report_names_the_points_whose_seeds_ran_different_programs(tmp_path):
    with Database(tmp_path / "db.sqlite") as db:
        sid = db.scenario_id("mix", "d", str(tmp_path / "mix.toml"), scenario_text("mix", 2, 2))
        for seed, kernel in ((1, "k1"), (2, "k2")):
            store(db, sid, "shared", {"reno": 2, "bbr": 2}, {"reno": 1e6, "bbr": 20e6}, 0.1, seed=seed,
                  versions={"binaries_sha256": {"uml": kernel, "sch_confucius.ko": "m"}})
        store(db, sid, "per-cca", {"reno": 2, "bbr": 2}, {"reno": 1e6, "bbr": 20e6}, 0.9,
              versions={"binaries_sha256": {"uml": "k1"}})
        assert report.mixed_programs(db, None) == {("mix", "shared", "-"): {"uml": ["k1", "k2"]}}
        assert report.mixed_programs(db, "other") == {}


def test_the_figure_puts_published_classifiers_on_their_interval_and_the_rest_on_f1():
    published = mix_scenario.load(REPO / "scenarios/percca/percca-published.toml")
    label, x = report.axis(published)
    row = report.PointRow("percca-published", "per-cca", "dragonfly@5s", None, 0.91, 3, 0.9, 0.8, 1.0,
                          0.97, 0.93, 0.7, 0.66, 0.85, 0.87)
    assert label == "classifier interval (s)" and x(row) == 5.0
    equal = mix_scenario.load(REPO / "scenarios/percca/percca-equal.toml")
    label, x = report.axis(equal)
    assert label == "classifier F1" and x(row) == 0.91 and x(replace(row, f1_target=0.83)) == 0.83
