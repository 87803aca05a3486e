# SPDX-License-Identifier: MIT
"""The models' aggressiveness fitted from the lab's database (`confucius percca fit`): the
fit file is checked field by field, its mixes are scenarios of their own, the fit reads the
stored runs, and the fitted advanced model is compared run by run with independent runs."""

import json
import math
from pathlib import Path

import pytest
from typer.testing import CliRunner

from confucius.experiment import db_percca
from confucius.experiment.db import Database
from confucius.experiment.scenario import ScenarioError
from confucius.models import percca as model
from confucius.models.aggressiveness import AggressivenessParams
from confucius.percca import fit, models, stored
from confucius.percca.cli import app as percca_app
from confucius.percca.mix_scenario import parse as parse_scenario

GOOD = """
name = "pairs"
seeds = [1]
duration = "8s"
warmup = "2s"
[link]
rate = "100mbit"
rtt = "40ms"
[pairs]
ccas = ["reno", "cubic", "bbr"]
flows = 10
first = [2, 8]
[training]
flows = 4
[validate]
scenarios = ["mix"]
"""

MIX = """
name = "mix"
seeds = [1]
[link]
rate = "100mbit"
rtt = "40ms"
buffer = 104
[flows]
reno = 4
cubic = 4
bbr = 4
[queues]
policies = ["shared", "per-cca"]
[classifier]
kind = "f1"
f1 = [0.6]
"""


def test_a_fit_file_gives_each_pair_at_each_proportion_and_the_equal_mix(tmp_path):
    plan = fit.parse(GOOD, tmp_path / "pairs.toml")
    assert plan.mix_names == ["pairs-reno2-cubic8", "pairs-reno8-cubic2", "pairs-reno2-bbr8",
                              "pairs-reno8-bbr2", "pairs-cubic2-bbr8", "pairs-cubic8-bbr2", "pairs-equal"]
    # One buffer for every mix: C·RTT/√N of the pair runs' 10 flows, though training has 12.
    assert {sc.buffer for sc in plan.mixes} == {round(100e6 * 0.04 / 8 / 1514 / math.sqrt(10))}
    assert all(sc.policies == ("shared",) and sc.duration_s == 8 and sc.seeds == (1,) for sc in plan.mixes)
    assert plan.mixes[-1].counts == [4, 4, 4] and plan.validate == ("mix",)
    # Each mix is a scenario file of its own: its stored text reads back the same.
    again = parse_scenario(plan.mixes[2].text, tmp_path / "x.toml")
    assert again.flows == (("reno", 2), ("bbr", 8)) and again.buffer == plan.mixes[2].buffer


@pytest.mark.parametrize("change, field", [
    (('ccas = ["reno", "cubic", "bbr"]', 'ccas = ["reno", "tahoe"]'), "pairs.ccas"),
    (('ccas = ["reno", "cubic", "bbr"]', 'ccas = ["reno"]'), "pairs.ccas"),
    (("first = [2, 8]", "first = [2]"), "pairs.first"),
    (("first = [2, 8]", "first = [2, 10]"), "pairs.first"),
    (("flows = 10\n", ""), "pairs.flows"),
    (("[training]\nflows = 4", "[training]\nflows = 0"), "training.flows"),
    (('scenarios = ["mix"]', "scenarios = []"), "validate.scenarios"),
    (('rate = "100mbit"', 'rate = "quick"'), "link.rate"),
    (('rate = "100mbit"\n', ""), "link.rate"),
    (("seeds = [1]", "seeds = [1]\ncolour = 3"), "top level"),
    (("first = [2, 8]", "first = [2, 8]\nx = 0.5"), "pairs"),
])
def test_bad_fit_fields_are_named(tmp_path, change, field):
    with pytest.raises(ScenarioError, match=field.replace(".", r"\.")):
        fit.parse(GOOD.replace(*change), tmp_path / "pairs.toml")


def store_run(db, sc, policy, avg_bps, classes=None, min_thr=0.5, seed=1, classifier="-"):
    """One run of scenario `sc` as the runner stores it: per-CCA averages and every flow."""
    scenario_id = db.scenario_id(sc.name, sc.digest, str(sc.path), sc.text)
    flow_ccas = [c for c, n in sc.flows for _ in range(n)]
    classes = classes or flow_ccas
    run = {"point_key": f"{policy}/{classifier}/seed={seed}", "policy": policy, "qdisc": "pfifo",
           "service": "flows", "queues": json.dumps([sc.ccas]), "classifier": classifier,
           "f1_target": None, "f1_drawn": 1.0, "seed": seed, "flows": json.dumps(dict(sc.flows)),
           "rate_bps": sc.rate_bps, "rtt_s": sc.rtt_s, "buffer_packets": sc.buffer, "duration_s": 8,
           "warmup_s": 2, "tc_commands": "[]", "status": "ok", "started_unix": 0, "results_dir": "x",
           "engine": "uml", "time_mode": "inf-cpu", "min_thr": min_thr, "jfi": 0.5, "total_bps": 95e6}
    ccas = [{"cca": c, "flows": n, "thr_bps": avg_bps[c] * n, "avg_bps": avg_bps[c], "normalised": None}
            for c, n in sc.flows]
    flows = [{"number": f, "cca": c, "classified_as": k, "queue": sc.ccas.index(k), "port": 6000 + f,
              "bps": avg_bps[c]} for f, (c, k) in enumerate(zip(flow_ccas, classes))]
    return db_percca.store_run(db, scenario_id, run, ccas, flows, [], [])


# Known relative aggressiveness: g_ij(x) = w·e^(m·x) exactly, so the fit must return it.
KNOWN = {("reno", "cubic"): (0.8, 0.3), ("reno", "bbr"): (0.05, 1.2), ("cubic", "bbr"): (0.07, 1.0)}


def store_known_pairs(db, plan):
    for sc in plan.mixes[:-1]:
        (i, n_i), (j, n_j) = sc.flows
        w, m = KNOWN[(i, j)]
        ratio = w * math.exp(m * n_i / (n_i + n_j))
        store_run(db, sc, "shared", {i: ratio * 1e6, j: 1e6})
    store_run(db, plan.mixes[-1], "shared", {"reno": 1e6, "cubic": 2e6, "bbr": 9e6})


def test_the_fit_reads_the_database_and_returns_known_parameters(tmp_path):
    plan = fit.parse(GOOD, tmp_path / "pairs.toml")
    with Database(tmp_path / "db.sqlite") as db:
        with pytest.raises(fit.FitError, match="no two-CCA shared-buffer runs"):
            fit.fit_database(db, plan.mix_names)
        store_known_pairs(db, plan)
        result = fit.fit_database(db, plan.mix_names)
    # fit_pairs orders each pair by name (x of the first alphabetically): compare g_ij(x) itself.
    for (i, j), (w, m) in KNOWN.items():
        for x in (0.1, 0.5, 0.9):
            assert result.params.relative_aggressiveness(i, j, x) == pytest.approx(w * math.exp(m * x))
    assert result.g == pytest.approx({"reno": 0.25, "cubic": 0.5, "bbr": 2.25})   # Eq. 6: 1, 2, 9 over 4


def test_the_validation_compares_each_run_with_the_model_on_its_draw(tmp_path):
    plan = fit.parse(GOOD, tmp_path / "pairs.toml")
    mix = parse_scenario(MIX, tmp_path / "mix.toml")
    classes = ["reno"] * 4 + ["cubic", "bbr", "cubic", "cubic"] + ["bbr"] * 4   # one CUBIC flow with BBR
    with Database(tmp_path / "db.sqlite") as db:
        store_known_pairs(db, plan)
        assert fit.validate(db, ["mix"], fit.fit_database(db, plan.mix_names).params) == []
        store_run(db, mix, "shared", {"reno": 1e6, "cubic": 1e6, "bbr": 20e6}, min_thr=0.1)
        store_run(db, mix, "per-cca", {"reno": 8e6, "cubic": 8e6, "bbr": 8e6}, classes, min_thr=0.9,
                  classifier="f1=0.6")
        params = fit.fit_database(db, plan.mix_names).params
        checks = fit.validate(db, ["mix"], params)
    assert [c.policy for c in checks] == ["per-cca", "shared"]
    # The shared FIFO: the advanced model with the fitted g_ij, all 12 flows in one queue
    # (the fit lists its CCAs by name; the model takes them in the scenario's order).
    params = AggressivenessParams(tuple(mix.ccas), params.g, params.relative)
    a = models.drawn_distribution(mix.ccas, [(c, c) for c, n in mix.flows for _ in range(n)])
    shared = model.evaluate(model.shared_buffer(a), params, mix.counts, "shared", "advanced").min_thr
    assert checks[1].fitted == pytest.approx(shared)
    drawn = models.drawn_distribution(mix.ccas, list(zip([c for c, n in mix.flows for _ in range(n)], classes)))
    assert checks[0].fitted == pytest.approx(model.evaluate(drawn, params, mix.counts, "per-cca", "advanced").min_thr)
    gaps = [abs(checks[0].fitted - 0.9), abs(checks[1].fitted - 0.1)]
    assert fit.error(checks) == fit.Error(2, pytest.approx(sum(gaps) / 2), pytest.approx(max(gaps)))
    assert checks[0].paper003 != checks[0].fitted


def test_the_fit_command_writes_parameters_that_scenarios_read(tmp_path):
    (tmp_path / "pairs.toml").write_text(GOOD)
    plan = fit.load(tmp_path / "pairs.toml")
    with Database(tmp_path / "db.sqlite") as db:
        store_known_pairs(db, plan)
        store_run(db, parse_scenario(MIX, tmp_path / "mix.toml"), "shared",
                  {"reno": 1e6, "cubic": 1e6, "bbr": 20e6}, min_thr=0.1)
    out = CliRunner().invoke(percca_app, ["fit", str(tmp_path / "pairs.toml"), "--db", str(tmp_path / "db.sqlite"),
                                          "--write", str(tmp_path / "lab.json"), "--json"])
    assert out.exit_code == 0, out.output
    report = json.loads(out.output)
    assert report["error"]["all"]["fitted"]["runs"] == 1 and len(report["pairs"]) == 3
    text = MIX.replace('f1 = [0.6]', 'f1 = [0.6]\nparams = "lab.json"')
    assert parse_scenario(text, tmp_path / "mix.toml").params.relative == \
        fit.fit_database(Database(tmp_path / "db.sqlite"), plan.mix_names).params.relative
    assert report["unchecked"] == []


def test_the_fit_is_printed_and_written_when_a_validation_scenario_has_no_runs(tmp_path):
    (tmp_path / "pairs.toml").write_text(GOOD)
    with Database(tmp_path / "db.sqlite") as db:
        store_known_pairs(db, fit.load(tmp_path / "pairs.toml"))
    out = CliRunner().invoke(percca_app, ["fit", str(tmp_path / "pairs.toml"), "--db", str(tmp_path / "db.sqlite"),
                                          "--write", str(tmp_path / "lab.json")])
    assert out.exit_code == 0, out.output + out.stderr
    assert "shared FIFO pairs:" in out.stdout and (tmp_path / "lab.json").is_file()
    assert "not checked against mix: no successful runs" in out.stderr
    missing = CliRunner().invoke(percca_app, ["fit", str(tmp_path / "pairs.toml"), "--db", str(tmp_path / "no.sqlite")])
    assert missing.exit_code == 2 and "no database" in missing.output


def test_the_repository_fit_files_are_valid():
    from confucius.lab.engine import REPO
    paths = sorted((REPO / "scenarios" / "percca" / "fit").glob("*.toml"))
    assert paths
    for path in paths:
        plan = fit.load(path)
        assert plan.name == path.stem and len(plan.mixes) >= 2, path


def test_run_refuses_a_policy_the_scenario_lacks(tmp_path):
    (tmp_path / "mix.toml").write_text(MIX)
    out = CliRunner().invoke(percca_app, ["run", str(tmp_path / "mix.toml"), "--policy", "per-class",
                                          "--db", str(tmp_path / "db.sqlite")])
    assert out.exit_code == 2 and "--policy: give one of the scenario's policies ['shared', 'per-cca']" in out.output
    assert not (tmp_path / "db.sqlite").exists()


MEASURED = Path(__file__).parent / "data" / "percca-fit-measured.json"


def load_measured(db) -> dict:
    """The measured rows of data/percca-fit-measured.json (real UML runs; its "measured" note
    says when, at which commit and how) stored as the runner stores them."""
    data = json.loads(MEASURED.read_text())
    for sc in data["scenarios"]:
        scenario_id = db.scenario_id(sc["name"], sc["digest"], sc["path"], sc["text"])
        for r in sc["runs"]:
            db_percca.store_run(db, scenario_id, r["run"], r["ccas"], r["flows"], [], [])
    return data


def test_the_fit_of_measured_runs(tmp_path, monkeypatch):
    from confucius.lab.engine import REPO
    monkeypatch.chdir(REPO)   # the stored scenarios name their parameter files from the repository
    with Database(tmp_path / "db.sqlite") as db:
        data = load_measured(db)
    fit_file = REPO / "scenarios" / "percca" / "fit" / "percca-fit.toml"
    plan = fit.load(fit_file)
    out = CliRunner().invoke(percca_app, ["fit", str(fit_file), "--db", str(tmp_path / "db.sqlite"), "--json"])
    assert out.exit_code == 0, out.output
    report = json.loads(out.output)
    # Every pair of the fit file, each from its three proportions.
    assert sorted((f["i"], f["j"]) for f in report["pairs"]) == [("bbr", "cubic"), ("bbr", "reno"), ("cubic", "reno")]
    assert all(f["samples"] == 3 for f in report["pairs"])
    # What the lab measured, the fit keeps: BBR takes more per flow than Reno and CUBIC at
    # every proportion measured, and the fitted curve says so across them.
    params = AggressivenessParams.from_json(report["params"])
    for s in report["samples"]:
        if "bbr" in (s["cca_i"], s["cca_j"]):
            bbr_first = s["cca_i"] == "bbr"
            other = s["cca_j"] if bbr_first else s["cca_i"]
            x_bbr = s["x_i"] if bbr_first else 1 - s["x_i"]
            assert (s["thr_i"] > s["thr_j"]) == bbr_first
            assert params.relative_aggressiveness("bbr", other, x_bbr) > 1
    # The validation: run by run, the difference it reports is the one between its columns.
    rows = report["validation"]
    assert {r["scenario"] for r in rows} == set(plan.validate)
    gaps = [abs(r["fitted"] - r["measured"]) for r in rows]
    assert report["error"]["all"]["fitted"]["mean"] == pytest.approx(sum(gaps) / len(gaps))
    assert report["error"]["all"]["fitted"]["worst"] == pytest.approx(max(gaps))
    print(f"measured ({data['measured']}): fitted advanced model |MinThr - lab| mean "
          f"{report['error']['all']['fitted']['mean']:.3f}, worst {report['error']['all']['fitted']['worst']:.3f} "
          f"over {len(rows)} runs; paper 003's parameters {report['error']['all']['paper003']['mean']:.3f}, "
          f"worst {report['error']['all']['paper003']['worst']:.3f}")
