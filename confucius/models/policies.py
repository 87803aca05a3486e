# SPDX-License-Identifier: MIT
"""Available bandwidth r(t) of the real-time flow under each scheduling policy (paper 000
Eqs. 9a–9d, paper 002 §IV-D and Fig. 9), and the new flows' completion time from Eq. 8.

r(t) describes the time after the N new flows arrive (t >= 0); before, the real-time flow
has the whole link. Policies:

- fq:        C/(N+1)                                   (Eq. 9a)
- fifo:      C·C·q0/(C·q0 + N·B0)                      (Eq. 9b, its bound taken as equality)
- cbq:       C/2, one class each, weights 1:1 (= DRR)  (Eq. 9c)
- confucius: max(C/2·2^(−λt), C/(N+1))                 (Eq. 9d, paper 000)
- confucius-002:   C/(1 + min(2^(λt), N))              (paper 002 §IV-D, Fig. 9)
- confucius-ticks: C/(1 + min(2^⌊λt⌋, N))              (paper 002 Alg. 1: weights double once
                                                        per 1/λ, as the qdisc does it)

and one closed-loop policy, whose r(t) depends on the real-time flow's queue and so exists
only inside a solution of the fluid model (fluid.py):

- confucius-adaptive: as confucius-ticks, but a tick is held while the flow's queueing
                      delay stood above a target (the qdisc's `pace adaptive`)
"""

import math

import numpy as np
from scipy.integrate import quad
from scipy.optimize import brentq

from .fluid_scenario import FluidScenario
from .validate import unknown

POLICIES = ("fq", "fifo", "cbq", "confucius", "confucius-002", "confucius-ticks")
TABLE1_POLICIES = ("fq", "fifo", "cbq", "confucius")
CLOSED_LOOP_POLICIES = ("confucius-adaptive",)


def check_policy(policy: str, closed_loop: bool = False) -> str:
    known = POLICIES + (CLOSED_LOOP_POLICIES if closed_loop else ())
    if policy not in known:
        raise unknown("policy", policy, known)
    return policy


def open_loop(policy: str) -> str:
    """The open-loop schedule a policy follows when nothing holds it back."""
    return "confucius-ticks" if policy in CLOSED_LOOP_POLICIES else policy


def fifo_share(sc: FluidScenario) -> float:
    """Eq. 9b: the real-time flow's share of a FIFO is its share of the buffer."""
    own = sc.capacity * sc.q0
    burst = sc.flows * sc.initial_burst
    return own / (own + burst) if own + burst > 0 else 1.0


def share(policy: str, sc: FluidScenario, t) -> np.ndarray:
    """r(t)/C for t >= 0 (array in, array out)."""
    t = np.asarray(t, dtype=float)
    n = sc.flows
    if policy == "fq":
        return np.full_like(t, 1 / (n + 1))
    if policy == "fifo":
        return np.full_like(t, fifo_share(sc))
    if policy == "cbq":
        return np.full_like(t, 0.5)
    if policy == "confucius":
        return np.maximum(0.5 * np.exp2(-sc.lam * t), 1 / (n + 1))
    if policy == "confucius-002":
        return 1 / (1 + np.minimum(np.exp2(sc.lam * t), n))
    if policy == "confucius-ticks":
        return 1 / (1 + np.minimum(np.exp2(np.floor(sc.lam * t)), n))
    raise unknown("policy", policy, POLICIES)


def ramp_end(policy: str, sc: FluidScenario) -> float:
    """The time after which r(t) stays constant (0 for the constant-share policies)."""
    n, lam = sc.flows, sc.lam
    if policy == "confucius":
        return math.log2((n + 1) / 2) / lam
    if policy == "confucius-002":
        return math.log2(n) / lam
    if policy == "confucius-ticks":
        return math.ceil(math.log2(n)) / lam
    check_policy(policy)
    return 0.0


def _kinks(policy: str, sc: FluidScenario, end: float) -> list:
    """Points inside [0, end] where r(t) jumps or bends, for the quadrature."""
    if policy == "confucius-ticks":
        return [i / sc.lam for i in range(1, math.ceil(end * sc.lam) + 1) if i / sc.lam < end]
    return []


def web_service(policy: str, sc: FluidScenario, t: float) -> float:
    """∫0^t (C − r(t')) dt': bits delivered to the new flows by time t (left side of Eq. 8)."""
    if t <= 0:
        return 0.0
    def web_share(x):
        return 1.0 - float(share(policy, sc, x))
    points = _kinks(policy, sc, t)
    area, _ = quad(web_share, 0.0, t, points=points or None, limit=200 + 2 * len(points))
    return sc.capacity * area


def fct(policy: str, sc: FluidScenario) -> float:
    """Completion time T of the N new flows: the root of ∫0^T (C − r) dt = N·B (Eq. 8)."""
    total = sc.flows * sc.flow_size
    end = ramp_end(policy, sc)
    done_by_end = web_service(policy, sc, end)
    if done_by_end >= total:
        return brentq(lambda t: web_service(policy, sc, t) - total, 0.0, end, xtol=1e-12)
    final_web_rate = sc.capacity * (1.0 - float(share(policy, sc, end)))
    return end + (total - done_by_end) / final_web_rate
