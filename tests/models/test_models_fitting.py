# SPDX-License-Identifier: MIT
"""Fitting the per-CCA models' parameters from measured throughputs."""

import json
import math

import numpy as np
import pytest

from confucius.models import fitting, presets
from confucius.models.aggressiveness import AggressivenessParams, load
from confucius.models.validate import ModelInputError


def test_exact_exponential_is_recovered():
    x = np.linspace(0.1, 0.9, 9)
    w, m, r2 = fitting.relative_aggressiveness(x, 28.7 * np.exp(-1.17 * x))
    assert (w, m, r2) == (pytest.approx(28.7), pytest.approx(-1.17), pytest.approx(1.0))


def test_least_squares_in_log_space_by_hand():
    # ln ratios 0, 1, 3 at x = 0, 0.5, 1: slope m = 3, intercept −1/6, so w = e^(−1/6)
    w, m, r2 = fitting.relative_aggressiveness([0, 0.5, 1], [1, math.e, math.e ** 3])
    assert m == pytest.approx(3.0)
    assert w == pytest.approx(math.exp(-1 / 6))
    # residuals (1/6)·(1, −2, 1): SS_res = 1/6, SS_tot = 14/3 -> R² = 1 − 1/28
    assert r2 == pytest.approx(1 - 1 / 28)


def test_pairs_given_in_either_order_join_one_fit():
    rows = [("bbr", "reno", 0.2, 28.7 * math.exp(-1.17 * 0.2), 1.0),
            ("reno", "bbr", 0.4, 1.0, 28.7 * math.exp(-1.17 * 0.6)),   # x_bbr = 0.6
            ("bbr", "reno", 0.9, 28.7 * math.exp(-1.17 * 0.9), 1.0)]
    (fit,) = fitting.fit_pairs(rows)
    assert (fit.i, fit.j, fit.samples) == ("bbr", "reno", 3)
    assert (fit.w, fit.m) == (pytest.approx(28.7), pytest.approx(-1.17))


def test_training_aggressiveness_eq6():
    assert fitting.training_aggressiveness({"a": 1, "b": 2, "c": 3}) == \
        pytest.approx({"a": 0.5, "b": 1.0, "c": 1.5})
    # Paper 003's own values have mean 1 and come back unchanged.
    assert fitting.training_aggressiveness(presets.PAPER003.g) == pytest.approx(presets.PAPER003.g)


def test_csv_round_trip_and_merge_with_a_base(tmp_path):
    pairs = tmp_path / "pairs.csv"
    pairs.write_text("cca_i,cca_j,x_i,thr_i,thr_j\n"
                     "cubic,reno,0.25,11mbit,10mbit\ncubic,reno,0.75,13mbit,10mbit\n")
    shared = tmp_path / "shared.csv"
    shared.write_text("cca,thr\nreno,1mbit\ncubic,1mbit\nbbr,4mbit\nbbr,4mbit\n")
    fits = fitting.fit_pairs(fitting.read_pairs_csv(pairs))
    g = fitting.training_aggressiveness(fitting.read_shared_csv(shared))
    params = fitting.params_from_fits(g, fits, presets.PAPER003)
    assert params.g == pytest.approx({"reno": 0.5, "cubic": 0.5, "bbr": 2.0})
    # ln(1.1) + m·0.25 and ln(1.3) + m·0.75: m = 2·ln(1.3/1.1) = 0.334108
    assert params.relative[("cubic", "reno")][1] == pytest.approx(2 * math.log(1.3 / 1.1))
    assert params.relative[("bbr", "reno")] == presets.PAPER003.relative[("bbr", "reno")]
    path = tmp_path / "params.json"
    path.write_text(json.dumps(params.to_json()))
    assert load(path) == params


@pytest.mark.parametrize("text, message", [
    ("cca_i,cca_j,x_i\nbbr,reno,0.5\n", "missing column"),
    ("cca_i,cca_j,x_i,thr_i,thr_j\n", "no data rows"),
    ("cca_i,cca_j,x_i,thr_i,thr_j\nbbr,reno,half,1,1\n", "x_i must be a number"),
    ("cca_i,cca_j,x_i,thr_i,thr_j\nbbr,reno,0.5,fast,1\n", "cannot read rate"),
])
def test_bad_csv_is_refused(tmp_path, text, message):
    path = tmp_path / "pairs.csv"
    path.write_text(text)
    with pytest.raises(ModelInputError, match=message):
        fitting.read_pairs_csv(path)


@pytest.mark.parametrize("x, ratio, message", [
    ([0.5, 0.5], [1, 2], "two or more different"),
    ([0.1, 0.5], [1, 0], "must be positive"),
    ([0.1, 1.5], [1, 2], "must lie in"),
])
def test_unfittable_samples_are_refused(x, ratio, message):
    with pytest.raises(ModelInputError, match=message):
        fitting.relative_aggressiveness(x, ratio)


def test_missing_file_and_bad_json(tmp_path):
    with pytest.raises(ModelInputError, match="cannot read"):
        fitting.read_shared_csv(tmp_path / "absent.csv")
    bad = tmp_path / "bad.json"
    bad.write_text("{")
    with pytest.raises(ModelInputError, match="not JSON"):
        load(bad)
    bad.write_text('{"g": {}}')
    with pytest.raises(ModelInputError, match="malformed"):
        load(bad)


def test_same_cca_twice_is_refused():
    with pytest.raises(ModelInputError, match="two different CCAs"):
        fitting.fit_pairs([("bbr", "bbr", 0.5, 1.0, 1.0)])
    with pytest.raises(ModelInputError):
        AggressivenessParams(("a", "b"), {}, {("a", "a"): (1.0, 0.0)})
