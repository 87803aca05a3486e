# SPDX-License-Identifier: MIT
"""`confucius model …` as users call it: units as people write them, JSON for scripts, one
clear line for impossible input."""

import json
import math

import pytest
from typer.testing import CliRunner

from confucius.models.cli import app, parse_responsiveness
from confucius.models.validate import ModelInputError

runner = CliRunner()


def run_json(*args):
    result = runner.invoke(app, [*args, "--json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def test_bounds_for_copa_at_40ms():
    data = run_json("bounds", "--cca", "copa", "--rtt", "40ms")
    assert data["scenario"]["tau_s"] == pytest.approx(0.04)
    assert data["scenario"]["k_per_s2"] == pytest.approx(986.96, rel=1e-4)
    assert data["table1"]["confucius"]["q_max_s"] == pytest.approx(0.6422, rel=1e-3)
    assert data["table1"]["fifo"]["q_max_s"] is None           # q0 = 0: unbounded


def test_units_as_people_write_them():
    data = run_json("bounds", "--rate", "100mbit", "--size", "1mb", "--burst", "15kb",
                    "--q0", "5ms", "--tau", "20ms", "--k", "0.001/ms^2", "--interval", "125ms",
                    "--flows", "4")
    sc = data["scenario"]
    assert (sc["capacity_bps"], sc["flow_size_bits"], sc["initial_burst_bits"]) == (
        100e6, 8 * 2**20, 8 * 15 * 1024)
    assert (sc["q0_s"], sc["tau_s"], sc["lambda_per_s"]) == (
        pytest.approx(0.005), pytest.approx(0.02), pytest.approx(8.0))
    assert sc["k_per_s2"] == pytest.approx(1000.0)
    assert data["table1"]["cbq"]["fct_degradation_s"] == pytest.approx(3 * 8 * 2**20 / 100e6)


@pytest.mark.parametrize("text, k", [("1000", 1000.0), ("1000/s^2", 1000.0),
                                     ("0.001/ms^2", 1000.0), ("4e-4/ms2", 400.0)])
def test_responsiveness_forms(text, k):
    assert parse_responsiveness(text) == pytest.approx(k)


def test_fluid_json_matches_table1_in_its_exact_regime():
    data = run_json("fluid", "--policy", "fq,cbq", "--tau", "50ms", "--k", "1000",
                    "--duration", "1s")
    for row in data["policies"]:
        assert row["model_over_table1"] == pytest.approx(1.0, abs=5e-3)
        assert row["q_max_change_when_step_halved"] < 0.01
    assert data["policies"][0]["fct_eq8_s"] == pytest.approx(11 * 15 * 1024 * 8 / 20e6)


def test_fluid_skips_fifo_without_queue_and_writes_a_plot(tmp_path):
    data = run_json("fluid", "--policy", "fifo,confucius", "--duration", "1s", "--plot",
                    "--out", str(tmp_path))
    assert "FIFO needs q0 > 0" in data["policies"][0]["skipped"]
    assert data["policies"][1]["q_max_s"] > 0
    assert (tmp_path / "fluid_timeseries.png").stat().st_size > 10_000


def test_fluid_table_on_the_terminal():
    result = runner.invoke(app, ["fluid", "--policy", "cbq", "--duration", "1s"],
                           env={"COLUMNS": "160"})
    assert result.exit_code == 0
    assert "cbq" in result.output and "Table 1" in result.output


def test_percca_reproduces_paper003_at_f1_0_83():
    data = run_json("percca", "--f1", "0.83", "--classes", "reno+cubic,bbr")
    by = {(o["arrangement"], o["model"], o["service_rates"]): o["min_thr"]
          for o in data["outcomes"]}
    assert by[("shared buffer", "advanced", "per flow")] == pytest.approx(0.1185, abs=1e-3)
    assert by[("per-CCA", "advanced", "per flow")] == pytest.approx(0.493, abs=1e-3)
    assert ("per-class reno+cubic,bbr", "advanced", "optimised") in by
    assert data["row_sums"] == pytest.approx([1 / 3] * 3)
    assert data["diagonal_sum"] == pytest.approx(0.83)


def test_percca_with_a_published_classifier():
    data = run_json("percca", "--classifier", "deepcci", "--interval", "10s", "--model",
                    "advanced", "--no-optimise")
    assert "deepcci" in data["classifier"]
    assert len(data["outcomes"]) == 2


def test_fit_then_use_the_parameters(tmp_path):
    pairs = tmp_path / "pairs.csv"
    pairs.write_text("cca_i,cca_j,x_i,thr_i,thr_j\nbbr,reno,0.2,20,1\nbbr,reno,0.8,8,1\n")
    params = tmp_path / "params.json"
    data = run_json("percca-fit", "--pairs", str(pairs), "--write", str(params))
    assert data["fits"][0]["m"] == pytest.approx((math.log(8) - math.log(20)) / 0.6)
    used = run_json("percca", "--params", str(params), "--f1", "0.9")
    assert used["outcomes"]


@pytest.mark.parametrize("args, message", [
    (["bounds", "--rate", "-5mbit"], "cannot read rate"),
    (["bounds", "--rate", "0"], "capacity C must be positive"),
    (["bounds", "--flows", "0"], "at least 1"),
    (["bounds", "--k", "-3"], "must be positive"),
    (["bounds", "--k", "fast"], "cannot read k"),
    (["bounds", "--k", "1000", "--period", "200ms"], "either --k or --period"),
    (["bounds", "--cca", "cubic"], "unknown CCA"),
    (["bounds", "--interval", "0ms"], "must be positive"),
    (["fluid", "--policy", "wfq"], "unknown policy"),
    (["fluid", "--gain", "huge"], "unknown gain"),
    (["percca", "--f1", "1.5"], "F1 must lie in (0, 1]"),
    (["percca", "--f1", "0"], "F1 must lie in (0, 1]"),
    (["percca", "--flows", "reno=0,cubic=0,bbr=0"], "sum to zero"),
    (["percca", "--flows", "reno=-3"], "whole number"),
    (["percca", "--flows", "vegas=3"], "unknown CCA"),
    (["percca", "--f1", "0.9", "--classifier", "deepcci"], "one of --f1"),
    (["percca", "--classifier", "deepcci", "--interval", "2s"], "published for intervals"),
    (["percca", "--classes", "reno,bbr"], "every CCA exactly once"),
    (["percca", "--params", "nowhere.json"], "neither a preset"),
    (["percca-fit"], "give --pairs"),
])
def test_impossible_inputs_end_with_one_clear_line(args, message):
    result = runner.invoke(app, args)
    assert result.exit_code == 2
    assert message in " ".join(result.output.split())
    assert "Traceback" not in result.output


def test_k_parser_rejects_garbage():
    with pytest.raises(ModelInputError, match="not a time unit"):
        parse_responsiveness("1/parsec^2")
