# SPDX-License-Identifier: MIT
"""Available bandwidth per policy (Eq. 9a–9d, paper 002) and the FCT of Eq. 8."""

import pytest

from confucius.models import bounds, policies
from confucius.models.fluid_scenario import FluidScenario
from confucius.models.validate import ModelInputError


def test_constant_shares(scenario):
    sc = scenario()
    assert policies.share("fq", sc, [0.0, 3.0]).tolist() == pytest.approx([1 / 11] * 2)
    assert policies.share("cbq", sc, 1.0) == pytest.approx(0.5)
    # Eq. 9b: q0·C = 1e5 bit, N·B0 = 1.168e6 bit: 1e5 / 1.268e6 = 0.0788644
    assert policies.share("fifo", sc, 1.0) == pytest.approx(0.0788644, rel=1e-5)


def test_eq9d(scenario):
    sc = scenario()
    t = [0.0, 0.25, 0.5, 0.7, 1.0]
    # C/2·2^(−λt): 1/2, 1/4, 1/8, then the fair share 1/11 once 2^(−λt)/2 < 1/11
    assert policies.share("confucius", sc, t).tolist() == pytest.approx(
        [0.5, 0.25, 0.125, 1 / 11, 1 / 11])
    assert policies.ramp_end("confucius", sc) == pytest.approx(0.25 * 2.4594316, rel=1e-6)


def test_paper002_curve_and_ticks_follow_the_motivating_example(scenario):
    # One old flow and 9 new ones: share 1/2, 1/3, 1/5, 1/9 after successive ticks, then 1/10.
    sc = scenario(flows=9)
    assert policies.share("confucius-002", sc, [0, 0.25, 0.5, 0.75]).tolist() == pytest.approx(
        [1 / 2, 1 / 3, 1 / 5, 1 / 9])
    ticks = policies.share("confucius-ticks", sc, [0.1, 0.3, 0.6, 0.8, 1.1, 5.0]).tolist()
    assert ticks == pytest.approx([1 / 2, 1 / 3, 1 / 5, 1 / 9, 1 / 10, 1 / 10])
    assert policies.ramp_end("confucius-ticks", sc) == pytest.approx(1.0)


def test_fct_of_constant_shares_is_eq15_and_eq20(scenario):
    sc = scenario()
    assert policies.fct("fq", sc) == pytest.approx(bounds.fct_fq(10, 122880, 20e6))
    assert policies.fct("cbq", sc) == pytest.approx(bounds.fct_cbq(10, 122880, 20e6))
    # FIFO: N·B / (C·(1 − 0.0788644)) = 1.2288e6 / 1.842271e7 = 0.0667005
    assert policies.fct("fifo", sc) == pytest.approx(0.0667005, rel=1e-5)


def test_fct_of_long_flows_matches_the_exact_integrals(scenario):
    sc = scenario(flow_size=8e6)                # flows outlast the ramp
    fq = policies.fct("fq", sc)
    assert policies.fct("confucius", sc) - fq == pytest.approx(
        bounds.fct_degradation_confucius_exact(10, 4.0), rel=1e-7)
    assert policies.fct("confucius-002", sc) - fq == pytest.approx(
        bounds.fct_degradation_confucius002_exact(10, 4.0), rel=1e-7)


def test_fct_of_ticks_by_hand(scenario):
    # N = 9, C = 1 Mbit/s. Web share 1/2 for 0.25 s (125 kbit), 2/3 for the next 0.25 s
    # (166.7 kbit). N·B = 200 kbit -> T = 0.25 + 75 kbit / (2/3 Mbit/s) = 0.3625 s.
    sc = scenario(flows=9, capacity=1e6, flow_size=200e3 / 9)
    assert policies.fct("confucius-ticks", sc) == pytest.approx(0.3625, rel=1e-9)


def test_fct_of_short_flows_inside_the_ramp(scenario):
    # N·B = 0.1 s of link, done before the ramp ends (0.615 s): the root of
    # ∫0^T (1 − 2^(−4t)/2) dt = T − (1 − 2^(−4T))/(8·ln 2) = 0.1 is T = 0.166762 s
    # (bisection on that closed form by hand: 0.1667 -> 0.10000).
    sc = scenario(capacity=1e6, flow_size=1e4)
    assert policies.fct("confucius", sc) == pytest.approx(0.166762, rel=1e-5)


def test_unknown_policy_is_refused(scenario):
    with pytest.raises(ModelInputError, match="unknown policy"):
        policies.share("wfq", scenario(), 0.0)
    with pytest.raises(ModelInputError, match="unknown policy"):
        policies.fct("wfq", scenario())


@pytest.mark.parametrize("field, value", [
    ("flows", 0), ("flows", 2.5), ("capacity", -1e6), ("capacity", 0), ("flow_size", 0),
    ("initial_burst", -1), ("q0", -0.001), ("tau", float("nan")), ("k", 0), ("lam", -4),
])
def test_impossible_scenarios_are_refused(field, value):
    base = dict(flows=10, capacity=20e6, flow_size=1e5, initial_burst=1e5, q0=0.005,
                tau=0.04, k=1000.0, lam=4.0)
    with pytest.raises(ModelInputError):
        FluidScenario(**{**base, field: value})
