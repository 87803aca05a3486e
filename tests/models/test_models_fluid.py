# SPDX-License-Identifier: MIT
"""The numerical solution of the fluid model against the closed forms, in their regime."""

import math
import re
from pathlib import Path

import numpy as np
import pytest

from confucius.models import bounds, fluid, policies
from confucius.models.validate import ModelInputError


def test_the_models_pace_defaults_are_the_qdiscs():
    """fluid.py keeps pace adaptive's defaults as Python numbers: they must be the core's
    (CFC_DEFAULT_*, which cfc_config_default sets), or the model and the qdisc answer
    different questions."""
    header = (Path(__file__).resolve().parents[2] / "core" / "confucius.h").read_text()

    def default_s(name: str) -> float:
        return int(re.search(rf"^#define CFC_DEFAULT_{name}_NS\s+(\d+)ull", header, re.M).group(1)) / 1e9

    assert (fluid.TARGET_S, fluid.MAXHOLD_S) == (default_s("TARGET"), default_s("MAXHOLD"))
    assert "#define CFC_GIVE_BACK_FLOOR\t(CFC_W_ONE >> 2)" in header and fluid.GIVE_BACK_FLOOR == 0.25


def test_fq_and_cbq_match_eq14_and_eq19_where_they_are_exact(scenario):
    # q0 = 0 and τ = 50 ms >= √(2/k) = 44.7 ms: the first peak lies inside 2τ, where the
    # paper's quadratic s(t) (Eq. 12) is the model's exact solution.
    sc = scenario(q0=0.0, tau=0.05)
    fq = fluid.solve("fq", sc, duration=1.0).q_max
    cbq = fluid.solve("cbq", sc, duration=1.0).q_max
    assert fq == pytest.approx(bounds.q_max_fq(10, sc.k, 0.0, 0.05), rel=5e-3)
    assert cbq == pytest.approx(bounds.q_max_cbq(sc.k, 0.0, 0.05), rel=5e-3)


@pytest.mark.parametrize("policy", ["fq", "cbq", "fifo"])
def test_constant_shares_match_the_derived_first_peak_with_q0(scenario, policy):
    sc = scenario(q0=0.005, tau=0.06)
    share = float(policies.share(policy, sc, 0.0))
    expected, exact = bounds.first_peak_constant_share(share, sc.k, sc.q0, sc.tau)
    assert exact
    assert fluid.solve(policy, sc, duration=1.0).q_max == pytest.approx(expected, rel=5e-3)


def test_link_gain_reacts_as_if_k_were_k_over_the_share(scenario):
    sc = scenario(q0=0.0, tau=0.05)
    expected, exact = bounds.first_peak_constant_share(1 / 11, sc.k * 11, 0.0, 0.05)
    assert exact
    assert fluid.solve("fq", sc, gain="link", duration=1.0).q_max == pytest.approx(
        expected, rel=5e-3)


def test_without_delay_the_model_is_an_oscillator_and_eq14_is_5_7_percent_low(scenario):
    sc = scenario(q0=0.0, tau=0.0)
    run = fluid.solve("fq", sc, duration=0.3)
    exact = bounds.peak_without_delay(1 / 11, sc.k, 0.0)
    assert run.q_max == pytest.approx(exact, rel=5e-3)
    # The peak is a quarter of the period 2π/√k of Eq. 33 after the burst.
    assert run.t_at_q_max == pytest.approx(math.pi / 2 / math.sqrt(sc.k), rel=0.02)
    assert 1 - bounds.q_max_fq(10, sc.k, 0.0, 0.0) / run.q_max == pytest.approx(0.057, abs=0.003)


def test_confucius_lies_between_cbq_and_fq_and_tends_to_them(scenario):
    sc = scenario(q0=0.0)
    slow = fluid.solve("confucius", scenario(q0=0.0, lam=1e-3), duration=1.0).q_max
    fast = fluid.solve("confucius", scenario(q0=0.0, lam=1e3), duration=1.0).q_max
    cbq = fluid.solve("cbq", sc, duration=1.0).q_max
    fq = fluid.solve("fq", sc, duration=1.0).q_max
    assert slow == pytest.approx(cbq, rel=0.01)
    assert fast == pytest.approx(fq, rel=0.02)
    assert cbq < fluid.solve("confucius", sc, duration=1.0).q_max < fq


def test_eq30_bounds_the_model_when_tau_is_small_against_1_over_sqrt_k(scenario):
    # The paper's regime τ·√k << 1: Table 1's value stays above the model's q_max there
    # (by a factor 1.15–3.7 on this grid; outside that regime it can fall below).
    for k, tau, q0, n in [(1000, 0.001, 0.0, 2), (1000, 0.005, 0.005, 10),
                          (3000, 0.005, 0.02, 50), (100, 0.02, 0.0, 10)]:
        sc = scenario(k=k, tau=tau, q0=q0, flows=n)
        assert fluid.solve("confucius", sc, duration=2.0).q_max < \
            bounds.q_max_confucius(k, q0, tau, 4.0)


@pytest.mark.parametrize("policy", policies.POLICIES)
def test_halving_the_default_step_moves_q_max_by_less_than_1_percent(scenario, policy):
    check = fluid.convergence(policy, scenario(), duration=2.0)
    assert check.relative_change < 0.01


@pytest.mark.parametrize("policy", ["fq", "confucius-ticks"])
def test_link_gain_converges_too(scenario, policy):
    assert fluid.convergence(policy, scenario(), gain="link", duration=2.0
                             ).relative_change < 0.01


def test_state_obeys_the_model_constraints(scenario):
    run = fluid.solve("confucius", scenario(), duration=3.0)
    assert run.s.min() >= 0 and run.p.min() >= 0
    np.testing.assert_allclose(run.q, run.p / run.r)
    # Before the CCA hears of the burst (t < τ) it keeps sending at C.
    assert np.all(run.s[run.t < scenario().tau] == scenario().capacity)
    # Eq. 5: the queue is the integral of s − r while it is not empty (to the step's accuracy).
    busy = np.flatnonzero(run.p[1:60] > 0)[-1] + 1
    growth = np.sum((run.s[:busy] - run.r[:busy] + run.s[1:busy + 1] - run.r[1:busy + 1])
                    / 2 * run.step)
    assert run.p[busy] - run.p[0] == pytest.approx(growth, rel=2e-3)


def test_work_conserving_fct_and_release(scenario):
    sc = scenario()
    kept = fluid.solve("cbq", sc, duration=2.0)
    released = fluid.solve("cbq", sc, duration=2.0, release=True)
    eq8 = policies.fct("cbq", sc)
    wc = fluid.fct_work_conserving(kept, sc)
    assert wc <= eq8 + kept.step
    assert np.all(released.r[released.t > wc + 2 * released.step] == sc.capacity)
    assert np.all(kept.r == sc.capacity / 2)


def test_fct_beyond_the_horizon_is_none(scenario):
    sc = scenario(flow_size=1e9)
    assert fluid.fct_work_conserving(fluid.solve("fq", sc, duration=0.5), sc) is None


def test_fifo_without_own_queue_cannot_be_solved(scenario):
    with pytest.raises(ModelInputError, match="FIFO needs q0 > 0"):
        fluid.solve("fifo", scenario(q0=0.0))


@pytest.mark.parametrize("options", [dict(gain="cell"), dict(duration=-1.0), dict(step=0.0),
                                     dict(duration=1e4, step=1e-6)])
def test_bad_solver_options_are_refused(scenario, options):
    with pytest.raises(ModelInputError):
        fluid.solve("fq", scenario(), **options)


def test_adaptive_pace_follows_the_ticks_while_the_queue_keeps_low(scenario):
    # A responsive CCA (the fixture's) whose queue falls under 20 ms before each tick: no
    # tick is held and r(t) is the qdisc's fixed schedule's.
    sc = scenario(flow_size=2e6 * 8)
    ticks = fluid.solve("confucius-ticks", sc, duration=3.0)
    adaptive = fluid.solve("confucius-adaptive", sc, duration=3.0)
    assert adaptive.holds == 0
    # the same r(t) but at the ticks' own grid points (the open-loop schedule's floor(λt)
    # meets a tick one point late or early in floating point)
    assert np.count_nonzero(~np.isclose(adaptive.r, ticks.r)) <= 4
    assert adaptive.q_max == pytest.approx(ticks.q_max, rel=1e-3)
    assert fluid.fct_eq8(adaptive, sc) == pytest.approx(fluid.fct_eq8(ticks, sc), abs=2 * ticks.step)


def test_adaptive_pace_holds_for_a_slow_cca_at_most_maxhold(scenario):
    # A slow CCA (k = 4π²/(2 s)²: a 2 s period) keeps its queue above the target: ticks are held
    # and give share back, at most MAXHOLD_S of them, so the new flows finish later than
    # under the fixed ticks but by no more than twice MAXHOLD_S (each held tick and the
    # doubling it undoes) and the ticks back from the floor and to graduation.
    sc = scenario(k=(2 * math.pi / 2.0) ** 2, flow_size=2e6 * 8)
    ticks = fluid.solve("confucius-ticks", sc, duration=12.0)
    adaptive = fluid.solve("confucius-adaptive", sc, duration=12.0)
    interval = 1 / sc.lam
    assert adaptive.holds == round(fluid.MAXHOLD_S / interval)
    assert adaptive.r.max() == pytest.approx(sc.capacity / (1 + fluid.GIVE_BACK_FLOOR))
    t_ticks, t_adaptive = fluid.fct_eq8(ticks, sc), fluid.fct_eq8(adaptive, sc)
    assert t_ticks < t_adaptive <= t_ticks + 2 * fluid.MAXHOLD_S + 3 * interval + ticks.step
    assert adaptive.q_max <= ticks.q_max * (1 + 1e-9)
    assert adaptive.r.min() == pytest.approx(ticks.r.min())  # both end at the fair share
