# SPDX-License-Identifier: MIT
"""The values the papers state in their text for these models, reproduced.

Each test names the paper's statement and its value; the tolerance says how close we are.
Where our model differs from the paper, the test pins our value and the docstring says so.
"""

import math

import pytest
from scipy.optimize import brentq

from confucius.models import bounds, cca, fluid, percca, policies, presets
from confucius.models.fluid_scenario import FluidScenario

PAPER = presets.PAPER003
G = PAPER.training_g()
EQUAL, FEW, MANY = [50, 50, 50], [130, 10, 10], [10, 10, 130]


def copa_40ms(**changes) -> FluidScenario:
    base = dict(flows=10, capacity=20e6, flow_size=122880, initial_burst=116800, q0=0.0,
                tau=0.040, k=cca.responsiveness("copa", 0.040), lam=4.0)
    return FluidScenario(**{**base, **changes})


# --- paper 000 / 002: fluid model ---

def test_000_footnote_copa_40ms_q_max_about_640ms():
    """§4.3 footnote: Copa, RTT 40 ms -> q_max(Confucius) ≈ 640 ms (Table 1 = Eq. 30 with
    q0 = 0; the paper does not give q0, which adds 6.2·q0)."""
    sc = copa_40ms()
    assert bounds.q_max_confucius(sc.k, 0.0, sc.tau, sc.lam) == pytest.approx(0.640, rel=0.005)
    assert bounds.q_max_confucius(1e3, 0.0, 0.04, 4.0) == pytest.approx(0.6416, rel=1e-4)


def test_000_footnote_the_model_itself_stays_far_below():
    """'the actual delay using Confucius is much lower': so is the model's own solution —
    about 102 ms (served gain) and 83 ms (link gain) against the 642 ms of Eq. 30."""
    sc = copa_40ms()
    assert fluid.solve("confucius", sc, duration=2.0).q_max == pytest.approx(0.1018, rel=0.01)
    assert fluid.solve("confucius", sc, gain="link", duration=2.0).q_max == pytest.approx(
        0.0827, rel=0.01)


def test_002_plt_degradation_of_typical_pages_under_100ms():
    """paper 002 §IV-D: 'the PLT degradation for typical websites of 10–20 flows is less than
    100 ms' at 1/λ = 250 ms. True with Eq. 31 as printed (51 and 76 ms); Eq. 8 integrated
    exactly gives 101 and 129 ms (Eq. 9d) and 154 and 190 ms (002's own curve) for flows
    that outlast the ramp. Short pages (15 KiB flows at 20 Mbit/s) stay under 100 ms."""
    assert bounds.fct_degradation_confucius(10, 4.0) == pytest.approx(0.0510, abs=5e-4)
    assert bounds.fct_degradation_confucius(20, 4.0) == pytest.approx(0.0763, abs=5e-4)
    assert bounds.fct_degradation_confucius_exact(10, 4.0) == pytest.approx(0.1008, abs=5e-4)
    assert bounds.fct_degradation_confucius_exact(20, 4.0) == pytest.approx(0.1288, abs=5e-4)
    assert bounds.fct_degradation_confucius002_exact(10, 4.0) == pytest.approx(0.1541, abs=5e-4)
    assert bounds.fct_degradation_confucius002_exact(20, 4.0) == pytest.approx(0.1896, abs=5e-4)
    for n in (10, 20):
        sc = copa_40ms(flows=n)
        assert policies.fct("confucius", sc) - policies.fct("fq", sc) < 0.100


def test_000_table1_fct_bound_log2e_over_lambda():
    """Table 1: T_Confucius − T_FQ ≈ log2(e)/λ = 361 ms at 1/λ = 250 ms."""
    assert bounds.fct_degradation_bound_confucius(4.0) == pytest.approx(0.3607, abs=1e-4)


def test_000_eq29_does_not_reduce_to_cbq_when_lambda_goes_to_zero():
    """With λ -> 0 Confucius' r(t) is C/2, CBQ's; Eq. 19 gives 70 ms for Copa at 40 ms but
    Eq. 29's F0 gives 367 ms: the series does not follow from the model's λ -> 0 limit."""
    sc = copa_40ms()
    f0, _, _ = bounds.confucius_series_coefficients(sc.k, 0.0, sc.tau)
    assert bounds.q_max_cbq(sc.k, 0.0, sc.tau) == pytest.approx(0.0700, abs=5e-4)
    assert f0 == pytest.approx(0.3673, abs=5e-4)


# --- paper 003: per-CCA queueing ---

def _min_thr(f1, counts, model="advanced", arrange=lambda a: a, optimise=False):
    a = arrange(percca.flow_distribution(f1, G, counts))
    return percca.evaluate(a, PAPER, counts, "", model, optimise).min_thr


def _shared(counts, model="advanced"):
    return _min_thr(1.0, counts, model, percca.shared_buffer)


def test_003_training_aggressiveness_statements():
    """§III-G: BBR takes 91.6 % of the bandwidth, 23.7× Reno, 20× CUBIC."""
    assert PAPER.g["bbr"] / sum(G) == pytest.approx(0.916, abs=5e-4)
    assert PAPER.g["bbr"] / PAPER.g["reno"] == pytest.approx(23.7, abs=0.05)
    assert PAPER.g["bbr"] / PAPER.g["cubic"] == pytest.approx(20.0, abs=0.15)


def test_003_bbr_vs_reno_falls_from_28_7_to_8_9():
    """§III-G, Fig. 7: g_BBR,Reno decreases from 28.7 to 8.9 as BBR's share goes 0 -> 1."""
    assert PAPER.relative_aggressiveness("bbr", "reno", 0.0) == pytest.approx(28.7)
    assert PAPER.relative_aggressiveness("bbr", "reno", 1.0) == pytest.approx(8.9, abs=0.02)


@pytest.mark.parametrize("counts, paper_value, tolerance", [
    (EQUAL, 0.119, 0.001),      # §III-B: Reno gets 11.9 % of its fair share; ours 11.85 %
    (FEW, 0.104, 0.001),        # §III-C: 10.4 %; ours 10.37 %
    (MANY, 0.22, 0.001),        # §III-C: 22 %; ours 21.91 %
])
def test_003_shared_buffer_min_thr(counts, paper_value, tolerance):
    """Measured shared-buffer MinThr, reproduced by the advanced model (Eq. 16)."""
    assert _shared(counts) == pytest.approx(paper_value, abs=tolerance)


def test_003_simple_model_shared_buffer_is_g_reno():
    """The simple model gives the shared buffer g_Reno / mean(g) = 0.1158 for any counts."""
    for counts in (EQUAL, FEW, MANY):
        assert _shared(counts, "simple") == pytest.approx(0.1158, abs=1e-4)


def test_003_f1_needed_for_half_the_fair_share():
    """§III-B: MinThr crosses 0.5 at F1 = 0.83 (measured; the advanced model is 'extremely
    accurate'): ours crosses at 0.834. §III-C many sharks: 0.95; ours 0.951."""
    assert brentq(lambda f: _min_thr(f, EQUAL) - 0.5, 0.7, 0.95) == pytest.approx(0.83,
                                                                                  abs=0.005)
    assert brentq(lambda f: _min_thr(f, MANY) - 0.5, 0.8, 0.99) == pytest.approx(0.95,
                                                                                 abs=0.002)


def test_003_eighty_percent_at_f1_0_95():
    """Contributions: 80 % of the fair share for F1 = 0.95; ours 0.794."""
    assert _min_thr(0.95, EQUAL) == pytest.approx(0.80, abs=0.007)


def test_003_simple_model_at_f1_0_83():
    """§III-B: 'with F1 = 0.83 [the simple model] predicts 0.66'. Ours: 0.536 — we found no
    reading of Eqs. 7–15 that gives 0.66 (ours reaches 0.66 only at F1 = 0.891)."""
    assert _min_thr(0.83, EQUAL, "simple") == pytest.approx(0.536, abs=0.001)


def test_003_few_sharks_doubling_at_f1_0_55():
    """§III-C: per-CCA queueing doubles Reno's share at F1 = 0.55; ours at 0.554."""
    target = 2 * _shared(FEW)
    assert brentq(lambda f: _min_thr(f, FEW) - target, 0.4, 0.8) == pytest.approx(0.55,
                                                                                  abs=0.005)


def test_003_per_class_queueing():
    """§III-E (measured, 'closely approximated' by the advanced model): F1 = 0.6 -> 21.7 %,
    ours 24.3 %; F1 = 1 -> 0.88, ours 0.910."""
    merged = [[0, 1], [2]]

    def per_class(a):
        return percca.merge_queues(a, merged)

    assert _min_thr(0.6, EQUAL, arrange=per_class) == pytest.approx(0.243, abs=0.001)
    assert _min_thr(1.0, EQUAL, arrange=per_class) == pytest.approx(0.910, abs=0.001)


def test_003_optimised_service_rates():
    """§III-F (the advanced model, optimised): F1 = 0.6 -> 46 % against 26 % unoptimised;
    ours 45.8 % and 24.4 %. Fair share reached from F1 = 0.88; ours from 0.894."""
    assert _min_thr(0.6, EQUAL, optimise=True) == pytest.approx(0.46, abs=0.003)
    assert _min_thr(0.6, EQUAL) == pytest.approx(0.244, abs=0.001)
    threshold = brentq(lambda f: _min_thr(f, EQUAL, optimise=True) - 0.9999, 0.85, 0.95)
    assert threshold == pytest.approx(0.894, abs=0.001)
    assert not math.isclose(threshold, 0.88, abs_tol=0.01)
