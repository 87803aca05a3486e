# SPDX-License-Identifier: MIT
"""The closed forms of paper 000 Appx. B / Table 1, against values computed by hand."""

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st
from scipy.integrate import quad
from scipy.special import expit

from confucius.models import bounds
from confucius.models.fluid_scenario import FluidScenario
from confucius.models.validate import ModelInputError

# Hand computation, k = 1000 s^-2, q0 = 5 ms, τ = 40 ms:
# (2/3)·√(2/1000) = (2/3)·0.0447214 = 0.0298142; bracket = 0.0298142 + 0.045 = 0.0748142.
K, Q0, TAU = 1000.0, 0.005, 0.040
BRACKET = 0.0748142


def test_delay_term():
    assert bounds.delay_term(K, Q0, TAU) == pytest.approx(BRACKET, rel=1e-6)


def test_fq_eq14():
    assert bounds.q_max_fq(10, K, Q0, TAU) == pytest.approx(0.748142, rel=1e-6)


def test_cbq_eq19():
    assert bounds.q_max_cbq(K, Q0, TAU) == pytest.approx(0.0748142, rel=1e-6)


def test_fifo_eq18():
    # N·B0 = 10 · 116800 bit = 1.168e6 bit; q0·C = 0.005 · 20e6 = 1e5 bit: factor 12.68.
    assert bounds.q_max_fifo(10, 116800, 20e6, K, Q0, TAU) == pytest.approx(
        12.68 * 0.0748142, rel=1e-6)


def test_fifo_without_own_queue_is_unbounded_and_without_burst_is_cbq_like():
    assert math.isinf(bounds.q_max_fifo(10, 116800, 20e6, K, 0.0, TAU))
    assert bounds.q_max_fifo(10, 0.0, 20e6, K, Q0, TAU) == pytest.approx(BRACKET, rel=1e-6)


def test_confucius_eq30():
    # 6·0.005 + 15·0.04 + 8·4/1000 + (0.05 + 0.6)·16/1000 = 0.03 + 0.6 + 0.032 + 0.0104
    assert bounds.q_max_confucius(K, Q0, TAU, 4.0) == pytest.approx(0.6724, rel=1e-9)


def test_confucius_series_eq29():
    f0, f1, f2 = bounds.confucius_series_coefficients(K, Q0, TAU)
    # √k = 31.6228. F0 = 0.01 + 0.24 + 4/31.6228
    assert f0 == pytest.approx(0.376491, rel=1e-5)
    # F1 = 0.0033333 + 0.0004 + 0.0032 + 0.00063246 + 0.0067462
    assert f1 == pytest.approx(0.0143120, rel=1e-5)
    # F2 = 2e-5 + 2.4e-4 + 8e-6 + 6.4e-5 + 3.7947e-5 + 5.5656e-4
    assert f2 == pytest.approx(9.2651e-4, rel=1e-4)
    assert bounds.q_max_confucius_series(K, Q0, TAU, 4.0) == pytest.approx(
        0.376491 + 4 * 0.0143120 + 16 * 9.2651e-4, rel=1e-5)


def test_fct_eq15_eq20_and_cbq_degradation():
    b, c = 122880.0, 20e6                      # 15 KiB flows at 20 Mbit/s
    assert bounds.fct_fq(10, b, c) == pytest.approx(11 * b / c)          # 67.584 ms
    assert bounds.fct_cbq(10, b, c) == pytest.approx(0.12288)
    assert bounds.fct_degradation_cbq(10, b, c) == pytest.approx(0.055296)
    assert bounds.fct_cbq(10, b, c) - bounds.fct_fq(10, b, c) == pytest.approx(
        bounds.fct_degradation_cbq(10, b, c))


def test_fct_confucius_eq31_eq32():
    # log2(5.5) = 2.459432: (0.5 − 0.2459432 − 0.05) / 4 = 0.0510142
    assert bounds.fct_degradation_confucius(10, 4.0) == pytest.approx(0.0510142, rel=1e-5)
    assert bounds.fct_confucius(10, 122880, 20e6, 4.0) == pytest.approx(
        0.067584 + 0.0510142, rel=1e-5)
    assert bounds.fct_degradation_bound_confucius(4.0) == pytest.approx(0.360674, rel=1e-5)


def test_exact_fct_degradations_derived_here():
    # Eq. 9d: (1.442695·0.45 − 0.2459432)/4 = 0.1008174
    assert bounds.fct_degradation_confucius_exact(10, 4.0) == pytest.approx(0.1008174, rel=1e-5)
    # paper 002 curve: (3.321928 − 1.1·2.459432)/4 = 0.154138
    assert bounds.fct_degradation_confucius002_exact(10, 4.0) == pytest.approx(0.154138,
                                                                              rel=1e-5)


@given(st.integers(min_value=1, max_value=10_000))
def test_exact_confucius_degradation_stays_under_table1_bound(n):
    exact = bounds.fct_degradation_confucius_exact(n, 4.0)
    assert -1e-12 <= exact <= bounds.LOG2_E / (2 * 4.0)
    assert exact <= bounds.fct_degradation_bound_confucius(4.0)


def test_first_peak_with_q0_zero_is_eq14_and_eq19():
    # τ = 50 ms >= √(2/k) = 44.7 ms: the peak falls inside the first 2τ, the form is exact.
    for share, closed in ((1 / 11, bounds.q_max_fq(10, K, 0.0, 0.05)),
                          (0.5, bounds.q_max_cbq(K, 0.0, 0.05))):
        value, exact = bounds.first_peak_constant_share(share, K, 0.0, 0.05)
        assert exact
        assert value == pytest.approx(closed, rel=1e-12)


def test_first_peak_with_q0_by_hand():
    # ρ = 1/11, k = 1000, q0 = 5 ms, τ = 60 ms:
    # u* = √(0.000025 + 0.002) − 0.005 = 0.045 − 0.005 = 0.04
    # rise = 0.06 + 0.04 − 1000·(0.005·0.0016/2 + 0.000064/6) = 0.1 − 0.0146667 = 0.0853333
    # q = 0.005·11 + 10·0.0853333 = 0.908333
    value, exact = bounds.first_peak_constant_share(1 / 11, K, 0.005, 0.06)
    assert exact
    assert value == pytest.approx(0.908333, rel=1e-5)
    assert not bounds.first_peak_constant_share(1 / 11, K, 0.005, 0.03)[1]


def test_peak_without_delay_and_the_taylor_error_of_eq14():
    # τ = 0, q0 = 0: q_max = N/√k = 10/31.6228 = 0.316228; Eq. 14 gives (2/3)√2 = 0.9428 of it
    exact = bounds.peak_without_delay(1 / 11, K, 0.0)
    assert exact == pytest.approx(0.316228, rel=1e-5)
    assert bounds.q_max_fq(10, K, 0.0, 0.0) / exact == pytest.approx(2 / 3 * math.sqrt(2))


def test_table1_collects_the_four_policies():
    sc = FluidScenario(10, 20e6, 122880, 116800, Q0, TAU, K, 4.0)
    table = bounds.table1(sc)
    assert table["fq"] == (pytest.approx(0.748142, rel=1e-6), 0.0)
    assert table["cbq"][1] == pytest.approx(0.055296)
    assert table["confucius"] == (pytest.approx(0.6724), pytest.approx(0.360674, rel=1e-5))


def test_paper002_integral_of_the_real_time_share():
    # paper 002 §IV-D: ∫0^∞ 1/(1 + 2^(λt)) dt = 1/λ (the paper prints 1, with λ as the unit)
    for lam in (1.0, 4.0, 10.0):
        area, _ = quad(lambda t: expit(-lam * t * math.log(2)), 0, math.inf)
        assert area == pytest.approx(1 / lam, rel=1e-9)


@given(st.floats(min_value=0, max_value=60))
def test_paper002_share_lies_between_two_exponentials(x):
    # paper 002 §IV-D: ½·2^(−λt) <= 1/(1 + 2^(λt)) <= 2^(−λt), with x = λt
    share = 1 / (1 + 2 ** x)
    assert 0.5 * 2 ** -x <= share * (1 + 1e-12)
    assert share <= 2 ** -x * (1 + 1e-12)


@pytest.mark.parametrize("call", [
    lambda: bounds.delay_term(0, Q0, TAU),
    lambda: bounds.fct_constant_share(10, 1e5, 1e6, 1.0),
    lambda: bounds.first_peak_constant_share(0.0, K, Q0, TAU),
    lambda: bounds.first_peak_constant_share(0.5, K, -1, TAU),
    lambda: bounds.peak_without_delay(1.5, K, Q0),
    lambda: bounds.fct_degradation_bound_confucius(0),
])
def test_impossible_inputs_are_refused(call):
    with pytest.raises(ModelInputError):
        call()
