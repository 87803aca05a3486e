# SPDX-License-Identifier: MIT
"""Per-CCA queueing models (paper 003 §II, §III-F) against values computed by hand."""

import itertools
import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from confucius.models import percca, presets
from confucius.models.aggressiveness import AggressivenessParams
from confucius.models.validate import ModelInputError

# Two CCAs by hand: g = (1, 4), F1 = 0.8. Σ 1/√g = 1.5, γ = 0.2 / (1 · 1.5) = 0.133333.
TWO = AggressivenessParams(("a", "b"), {"a": 1.0, "b": 4.0}, {("b", "a"): (4.0, -1.0)})
A_PRIME = np.array([[0.5 - 0.133333, 0.133333], [0.066667, 0.5 - 0.066667]])


def test_homogeneous_distribution_eq9_eq11():
    a = percca.homogeneous_distribution(0.8, [1.0, 4.0])
    np.testing.assert_allclose(a, A_PRIME, atol=1e-6)
    assert np.trace(a) == pytest.approx(0.8)                   # Eq. 10


def test_general_distribution_eq13_rescales_rows():
    a = percca.flow_distribution(0.8, [1.0, 4.0], [3, 1])      # K·N_i/N = 1.5 and 0.5
    np.testing.assert_allclose(a, [[0.55, 0.2], [0.033333, 0.216667]], atol=1e-6)


def test_misclassification_falls_as_inverse_square_root_of_aggressiveness():
    # paper 003 Contributions: a CCA 4× more aggressive has half the misclassification rate.
    a = percca.homogeneous_distribution(0.9, [1.0, 4.0, 1.0])
    assert a[1, 0] / a[0, 1] == pytest.approx(0.5)


counts_st = st.lists(st.integers(0, 200), min_size=3, max_size=3).filter(lambda c: sum(c) > 0)
g_st = st.lists(st.floats(0.05, 20), min_size=3, max_size=3)


@given(counts_st, g_st, st.floats(0, 1))
def test_distribution_properties(counts, g, position):
    low = percca.lowest_f1(g)
    f1 = max(low + (1 - low) * position, 1e-9)
    a = percca.flow_distribution(f1, g, counts)
    assert a.min() >= 0
    np.testing.assert_allclose(a.sum(axis=1), np.array(counts) / sum(counts), atol=1e-12)
    assert a.sum() == pytest.approx(1.0)


@given(counts_st, g_st)
def test_misclassification_shrinks_linearly_to_zero_as_f1_goes_to_one(counts, g):
    low = percca.lowest_f1(g)
    f1s = [low + (1 - low) * x for x in (0.2, 0.6, 1.0)]
    off = [percca.flow_distribution(f, g, counts) for f in f1s]
    mis = [m - np.diag(np.diag(m)) for m in off]
    np.testing.assert_allclose((mis[0] - mis[1]) / (f1s[1] - f1s[0]),
                               (mis[1] - mis[2]) / (f1s[2] - f1s[1]), atol=1e-9)
    assert np.all(mis[2] == 0)
    assert np.trace(off[2]) == pytest.approx(1.0)              # diagonal -> 1 as F1 -> 1


def test_lowest_f1_of_paper_003s_parameters():
    # 1 − Σ 1/√g / (K · max 1/√g) = 1 − 6.24853 / (3 · 2.93865) = 0.291216
    assert percca.lowest_f1(presets.PAPER003.training_g()) == pytest.approx(0.291216, rel=1e-5)
    with pytest.raises(ModelInputError, match="F1 >= 0.2912"):
        percca.flow_distribution(0.25, presets.PAPER003.training_g(), [50, 50, 50])


def test_simple_model_eq14_eq15_by_hand():
    a = percca.homogeneous_distribution(0.8, [1.0, 4.0])
    p = percca.packet_shares(a, percca.simple_aggressiveness(a, TWO))
    # queue a: g·a = (0.366667, 0.266667) -> (0.578947, 0.421053)
    # queue b: g·a = (0.133333, 1.733333) -> (0.071429, 0.928571)
    np.testing.assert_allclose(p, [[0.578947, 0.071429], [0.421053, 0.928571]], atol=1e-6)
    rates = percca.proportional_rates(a)                        # (0.433333, 0.566667)
    thr = percca.throughputs(p, rates)
    # Thr_a = 0.578947·0.433333 + 0.071429·0.566667 = 0.291353
    assert thr[0] == pytest.approx(0.291353, rel=1e-5)
    assert percca.min_thr(thr, [50, 50]) == pytest.approx(0.582707, rel=1e-5)  # Eq. 17


def test_advanced_model_eq16_by_hand():
    # One queue with 75 % a, 25 % b; g_ba(x) = 4·e^(−x), so g_ab(0.75) = 1/g_ba(0.25).
    a = np.array([[0.75], [0.25]])
    g = percca.advanced_aggressiveness(a, TWO)
    # g_a = 0.75·1 + 0.25/(4·e^(−0.25)) = 0.75 + 0.080252 = 0.830252
    # g_b = 0.75·4·e^(−0.25) + 0.25·1 = 2.336402 + 0.25 = 2.586402
    np.testing.assert_allclose(g[:, 0], [0.830252, 2.586402], rtol=1e-5)


def test_relative_aggressiveness_reverse_order():
    # g_ab(x) = 1 / g_ba(1 − x): at x = 0.3, 1 / (4·e^(−0.7)) = 0.503438
    assert TWO.relative_aggressiveness("a", "b", 0.3) == pytest.approx(0.503438, rel=1e-5)
    assert TWO.relative_aggressiveness("a", "a", 0.3) == 1.0


def test_with_a_perfect_classifier_per_cca_queueing_is_fair():
    for counts in ([50, 50, 50], [130, 10, 10], [1, 0, 7]):
        a = percca.flow_distribution(1.0, presets.PAPER003.training_g(), counts)
        for model in percca.MODELS:
            outcome = percca.evaluate(a, presets.PAPER003, counts, "per-CCA", model)
            assert outcome.min_thr == pytest.approx(1.0)


def test_queue_merging_and_accuracy_distribution():
    a = percca.flow_distribution_from_accuracy([0.9, 0.6, 0.95], [50, 50, 50])
    # q_ii = F1_i, errors split evenly: row reno = (0.9, 0.05, 0.05) / 3
    np.testing.assert_allclose(a[0], [0.3, 0.05 / 3, 0.05 / 3])
    merged = percca.merge_queues(a, [[0, 1], [2]])
    np.testing.assert_allclose(merged[:, 0], a[:, 0] + a[:, 1])
    with pytest.raises(ModelInputError, match="every CCA exactly once"):
        percca.merge_queues(a, [[0], [2]])


def _grid_search(p, counts, steps=100):
    best = 0.0
    for i, j in itertools.product(range(steps + 1), repeat=2):
        if i + j <= steps:
            rates = np.array([i, j, steps - i - j]) / steps
            best = max(best, percca.min_thr(percca.throughputs(p, rates), counts))
    return best


@pytest.mark.parametrize("f1", [0.45, 0.6, 0.83])
def test_optimal_rates_beat_a_grid_search(f1):
    counts = [50, 50, 50]
    a = percca.flow_distribution(f1, presets.PAPER003.training_g(), counts)
    p = percca.packet_shares(a, percca.advanced_aggressiveness(a, presets.PAPER003))
    rates, value = percca.optimal_rates(p, counts)
    assert rates.sum() == pytest.approx(1.0) and rates.min() >= 0
    assert value == pytest.approx(percca.min_thr(percca.throughputs(p, rates), counts))
    assert value >= _grid_search(p, counts) - 1e-9


@pytest.mark.parametrize("counts", [[0, 0, 0], [-1, 5, 5], [1.5, 2, 2]])
def test_impossible_flow_counts_are_refused(counts):
    with pytest.raises(ModelInputError):
        percca.flow_distribution(0.9, [1, 1, 1], counts)


@pytest.mark.parametrize("f1", [0.0, -0.1, 1.01, math.nan])
def test_f1_outside_its_range_is_refused(f1):
    with pytest.raises(ModelInputError, match="F1"):
        percca.flow_distribution(f1, [1, 1, 1], [1, 1, 1])


def test_parameters_are_checked():
    with pytest.raises(ModelInputError):
        AggressivenessParams(("reno",))
    with pytest.raises(ModelInputError):
        AggressivenessParams(("a", "b"), {"a": -1.0})
    with pytest.raises(ModelInputError):
        AggressivenessParams(("a", "b"), {}, {("a", "b"): (1, 0), ("b", "a"): (1, 0)})
    with pytest.raises(ModelInputError, match="not in the list"):
        AggressivenessParams(("a", "b"), {"c": 1.0})
    with pytest.raises(ModelInputError, match="no relative aggressiveness"):
        AggressivenessParams(("a", "b", "c"), {}, {}).relative_aggressiveness("a", "b", 0.5)


@pytest.mark.parametrize("queues, total", [(1, 100), (2, 100), (3, 100), (4, 33), (5, 21)])
def test_weight_grid_holds_every_whole_weighting_of_a_total(queues, total):
    grid = percca.weight_grid(queues)
    assert (grid.sum(axis=1) == total).all() and grid.min() == (1 if queues > 1 else total)
    assert len(grid) == math.comb(total - 1, queues - 1) <= 5000
    assert len({tuple(row) for row in grid.tolist()}) == len(grid)


@pytest.mark.parametrize("f1", [0.6, 0.83])
def test_best_weighting_of_one_distribution_is_the_optimum_in_hundredths(f1):
    counts = [50, 50, 50]
    a = percca.flow_distribution(f1, presets.PAPER003.training_g(), counts)
    _, optimum = percca.optimal_rates(percca.packet_shares(a, percca.advanced_aggressiveness(a, presets.PAPER003)),
                                      counts)
    weights, value = percca.best_weighting([a], presets.PAPER003, counts)
    assert sum(weights) == 100
    # MinThr is linear-fractional in the rates: hundredths reach the LP's optimum closely.
    assert optimum - 0.02 <= value <= optimum + 1e-9


def test_mean_min_thr_counts_each_distribution_by_its_frequency():
    counts = [5, 5, 5]
    one = percca.flow_distribution(0.6, presets.PAPER003.training_g(), counts)
    other = percca.flow_distribution(0.95, presets.PAPER003.training_g(), counts)
    grid = percca.weight_grid(3)[::97]
    twice = percca.mean_min_thr([one, other], presets.PAPER003, counts, grid, [2, 1])
    listed = percca.mean_min_thr([one, one, other], presets.PAPER003, counts, grid)
    np.testing.assert_allclose(twice, listed)
