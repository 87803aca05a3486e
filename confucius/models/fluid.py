# SPDX-License-Identifier: MIT
"""Numerical solution of the fluid model (paper 000 Appx. B, Eqs. 4–9).

The real-time flow's CCA steers its sending rate s(t) by the queueing delay it saw one
feedback loop τ ago (Eq. 4); its queue p(t) fills at s − r (Eq. 5); its queueing delay is
q = p/r (Eq. 6); r(t) is the policy's available bandwidth (Eq. 9, `policies`):

    ds/dt = −k·g(t)·(q(t − τ) − q0),   dp/dt = s − r  (p >= 0),   q = p/r,   s >= 0,

with the flow in steady state before the burst: s = r = C, q = q0 for t <= 0. As in the
paper, r(t) follows Eq. 9 for ever; with `release` it returns to C once the new flows have
received their N·B bits.

Eq. 4 leaves the scale of k open (k is quoted in ms^-2, so s must be measured relative to
some rate). Two readings, `gain`:
- "served" (default): g(t) = r(t − τ), the rate the flow was served at when it measured the
  delay — ds/dt = −k·(p(t − τ) − q0·r(t − τ)). This is the reading under which the paper's
  own derivations follow (Eq. 10 for FQ, the particular solution of Eqs. 22–23 for
  Confucius), and it keeps Eq. 33 (period 2π/√k at r = C).
- "link": g = C, the literal reading with s in units of the link rate; a flow that gets a
  share ρ then reacts as if its k were k/ρ.

Method: Heun's method (explicit trapezoid, 2nd order) on a fixed grid whose step divides τ,
so the delayed values q(t − τ), r(t − τ) are grid values from the history buffer and need
no interpolation; the constraints p >= 0 and s >= 0 are applied after each stage. The model
has kinks (the queue empties, r jumps at t = 0 and at Confucius' ticks), where any
higher-order method falls back to low order anyway; `convergence` reruns with the step
halved so every result says how much the step matters.
"""

import math
from dataclasses import dataclass

import numpy as np

from . import policies
from .fluid_scenario import FluidScenario
from .validate import ModelInputError, positive, unknown

GAINS = ("served", "link")
# pace adaptive's defaults, the qdisc's (core/confucius_impl.h, cfc_config_default)
TARGET_S = 0.040
MAXHOLD_S = 2.0
GIVE_BACK_FLOOR = 0.25  # the least S a held tick gives back to (CFC_GIVE_BACK_FLOOR)
MAX_STEPS = 2_000_000  # a guard against a step/duration pair that would run for hours


@dataclass(frozen=True)
class FluidRun:
    """One solution: arrays on the time grid t (seconds), rates in bit/s, p in bits."""

    policy: str
    t: np.ndarray
    s: np.ndarray
    p: np.ndarray
    q: np.ndarray
    r: np.ndarray
    step: float
    holds: int = 0      # ticks a closed-loop pace held

    @property
    def q_max(self) -> float:
        """Eq. 7: the largest queueing delay seen after the burst."""
        return float(self.q.max())

    @property
    def t_at_q_max(self) -> float:
        return float(self.t[int(self.q.argmax())])

    def real_time_departures(self) -> np.ndarray:
        """The rate the real-time flow actually uses: r while it has a queue, else min(s, r)."""
        return np.where(self.p > 0, self.r, np.minimum(self.s, self.r))  # as `_departure`


def check_gain(gain: str) -> str:
    if gain not in GAINS:
        raise unknown("gain", gain, GAINS)
    return gain


def check_solvable(policy: str, sc: FluidScenario) -> None:
    policies.check_policy(policy, closed_loop=True)
    if policy == "fifo" and policies.fifo_share(sc) == 0:
        raise ModelInputError("FIFO needs q0 > 0: with an empty queue the real-time flow holds "
                              "none of the shared buffer, so Eq. 9b gives it no bandwidth")


def _lowest_share(policy: str, sc: FluidScenario) -> float:
    policy = policies.open_loop(policy)
    return float(policies.share(policy, sc, policies.ramp_end(policy, sc) + 1.0 / sc.lam))


def _oscillation_rate(policy: str, sc: FluidScenario, gain: str) -> float:
    """ω = √k_eff of the linearised loop: k for the 'served' gain, k/ρ for 'link'."""
    k_eff = sc.k if gain == "served" else sc.k / _lowest_share(policy, sc)
    return math.sqrt(k_eff)


def default_step(policy: str, sc: FluidScenario, gain: str = "served") -> float:
    """A step of 1/20 of 1/ω and 1/50 of 1/λ (halving it moves q_max by ~0.1 %, measured in
    the tests), made to divide τ."""
    target = min(0.05 / _oscillation_rate(policy, sc, gain), 0.02 / sc.lam)
    if sc.tau > 0:
        return sc.tau / math.ceil(sc.tau / target)
    return target


def default_duration(policy: str, sc: FluidScenario, gain: str = "served") -> float:
    """Long enough for the ramp and ten oscillation periods, and for the new flows to
    complete if that takes under a minute."""
    periods = 10 * 2 * math.pi / _oscillation_rate(policy, sc, gain)
    held = MAXHOLD_S if policy in policies.CLOSED_LOOP_POLICIES else 0.0
    policy = policies.open_loop(policy)
    wanted = max(2.0, policies.ramp_end(policy, sc) + held + periods)
    completion = 1.2 * policies.fct(policy, sc) + held
    return max(wanted, min(completion, 60.0))


def solve(policy: str, sc: FluidScenario, *, gain: str = "served", release: bool = False,
          duration: float | None = None, step: float | None = None) -> FluidRun:
    """Solve the model for one policy; see the module docstring for the equations."""
    check_solvable(policy, sc)
    check_gain(gain)
    duration = positive("duration", duration if duration is not None
                        else default_duration(policy, sc, gain))
    step = positive("step", step if step is not None else default_step(policy, sc, gain))
    if sc.tau > 0:
        # the delay must fall on the grid; never a longer step than asked for
        step = sc.tau / math.ceil(sc.tau / step - 1e-9)
    steps = math.ceil(duration / step)
    if steps > MAX_STEPS:
        raise ModelInputError(f"{steps} steps of {step:g} s over {duration:g} s is too many "
                              f"(limit {MAX_STEPS}): shorten --duration or lengthen --step")
    t = np.arange(steps + 1) * step
    r = (sc.capacity * policies.share(policies.open_loop(policy), sc, t)).tolist()
    web_total = sc.flows * sc.flow_size if release else math.inf
    pace = AdaptivePace(sc, step) if policy in policies.CLOSED_LOOP_POLICIES else None
    s, p, q = _integrate(r, step, round(sc.tau / step), sc, gain == "served", web_total, pace)
    return FluidRun(policy, t, np.array(s), np.array(p), np.array(q), np.array(r), step,
                    pace.holds if pace else 0)


class AdaptivePace:
    """The qdisc's `pace adaptive` on the model's grid (docs/ALGORITHM.md): the new flows'
    weight S starts at 1 at the burst and doubles every 1/λ, r = C/(1 + min(S, N)), but
    while the real-time flow's least queueing delay over the last quarter of the interval
    stood above `target` a tick halves S instead (down to GIVE_BACK_FLOOR), for at most
    `maxhold` in all; S stops at N, and the new flows are old at the next tick not held."""

    def __init__(self, sc: FluidScenario, h: float, target: float = TARGET_S,
                 maxhold: float = MAXHOLD_S):
        self.sc, self.h, self.target, self.maxhold = sc, h, target, maxhold
        self.window = max(1, round(1 / (4 * sc.lam * h)))
        self.next_tick = 1 / sc.lam
        self.weight, self.held, self.holds, self.graduated = 1.0, 0.0, 0, False

    def __call__(self, j: int, q: list, r: list) -> None:
        """At grid index j, once q is known up to j − 1: a tick due by t_j sets r from j on
        (the grid point where the open-loop floor(λt) steps, too)."""
        if self.graduated or r[j] == self.sc.capacity:  # fair shares for good, or released
            return
        if j * self.h < self.next_tick - 1e-12:
            return
        interval = 1 / self.sc.lam
        self.next_tick += interval
        if min(q[max(0, j - self.window):j]) > self.target and self.held + interval <= self.maxhold + 1e-12:
            self.held += interval
            self.holds += 1
            self.weight = max(self.weight / 2, GIVE_BACK_FLOOR)
        elif self.weight >= self.sc.flows:
            self.graduated = True
        else:
            self.weight = min(2 * self.weight, self.sc.flows)
        r[j:] = [self.sc.capacity / (1 + self.weight)] * (len(r) - j)


def _integrate(r: list, h: float, lag: int, sc: FluidScenario, served: bool,
               web_total: float, pace: AdaptivePace | None = None) -> tuple:
    """Heun's method with a history buffer; `lag` = τ/h steps. Plain floats: this loop is
    the model's whole cost.

    Once the new flows have received `web_total` bits (counting what the real-time flow
    leaves unused, as a work-conserving scheduler does) the link returns to the real-time
    flow: r (a list, changed in place) becomes C from there on. A closed-loop `pace` sets
    r ahead of each step from the queue so far.
    """
    c, k, q0 = sc.capacity, sc.k, sc.q0
    n = len(r) - 1
    gain = r if served else [c] * (n + 1)
    web_done, web_rate = 0.0, c - _departure(s=c, p=q0 * c, r=r[0])
    s, p, q = [0.0] * (n + 1), [0.0] * (n + 1), [0.0] * (n + 1)
    s[0], p[0] = c, q0 * c
    q[0] = p[0] / r[0]

    def history(j: int) -> tuple:
        """q and the gain at grid index j; before the burst, the steady state."""
        return (q[j], gain[j]) if j >= 0 else (q0, c)

    for i in range(n):
        if pace:
            pace(i + 1, q, r)
        qd, gd = history(i - lag)
        ds1 = -k * gd * (qd - q0)
        dp1 = s[i] - r[i]
        if p[i] <= 0 and dp1 < 0:
            dp1 = 0.0
        s_pred = max(0.0, s[i] + h * ds1)
        p_pred = max(0.0, p[i] + h * dp1)
        if lag == 0:  # τ = 0: the end of the step is not in the history yet: use the predictor
            qd, gd = p_pred / r[i + 1], gain[i + 1]
        else:
            qd, gd = history(i + 1 - lag)
        ds2 = -k * gd * (qd - q0)
        dp2 = s_pred - r[i + 1]
        if p_pred <= 0 and dp2 < 0:
            dp2 = 0.0
        s[i + 1] = max(0.0, s[i] + h / 2 * (ds1 + ds2))
        p[i + 1] = max(0.0, p[i] + h / 2 * (dp1 + dp2))
        q[i + 1] = p[i + 1] / r[i + 1]
        next_web_rate = c - _departure(s[i + 1], p[i + 1], r[i + 1])
        web_done += h / 2 * (web_rate + next_web_rate)
        web_rate = next_web_rate
        if web_done >= web_total:
            r[i + 2:] = [c] * (n - i - 1)
            web_total = math.inf
    return s, p, q


def _departure(s: float, p: float, r: float) -> float:
    """The rate the real-time flow actually uses: r while it has a queue, else min(s, r)."""
    return r if p > 0 else min(s, r)


@dataclass(frozen=True)
class Convergence:
    run: FluidRun
    q_max_half_step: float

    @property
    def relative_change(self) -> float:
        """|q_max(h/2) − q_max(h)| / q_max(h/2): how much halving the step moves q_max."""
        return abs(self.q_max_half_step - self.run.q_max) / self.q_max_half_step


def convergence(policy: str, sc: FluidScenario, **options) -> Convergence:
    """Solve at the chosen step and at half of it."""
    run = solve(policy, sc, **options)
    halved = dict(options, step=run.step / 2, duration=run.t[-1])
    return Convergence(run, solve(policy, sc, **halved).q_max)


def _completion(run: FluidRun, sc: FluidScenario, real_time: np.ndarray) -> float | None:
    """The time T at which ∫0^T (C − real_time) = N·B; None if beyond the run."""
    web = sc.capacity - real_time
    done = np.concatenate(([0.0], np.cumsum((web[1:] + web[:-1]) / 2 * run.step)))
    total = sc.flows * sc.flow_size
    if done[-1] < total:
        return None
    return float(np.interp(total, done, run.t))


def fct_work_conserving(run: FluidRun, sc: FluidScenario) -> float | None:
    """Completion of the new flows when they also get what the real-time flow leaves unused
    (a work-conserving scheduler): ∫0^T (C − departures) = N·B. None if beyond the run."""
    return _completion(run, sc, run.real_time_departures())


def fct_eq8(run: FluidRun, sc: FluidScenario) -> float | None:
    """Eq. 8 on the run's own r(t): ∫0^T (C − r) = N·B (for a closed-loop policy, whose r
    exists only in a solution). None if beyond the run."""
    return _completion(run, sc, run.r)
