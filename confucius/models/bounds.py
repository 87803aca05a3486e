# SPDX-License-Identifier: MIT
"""Closed forms of the fluid model: paper 000 Appx. B (Eqs. 14–32) and Table 1 (= paper 002
Table I), plus a few exact results derived here from the same model to show where the papers'
approximations land.

All arguments and results are SI: seconds, bit/s, bits; k in s^-2, λ in s^-1. Equation
numbers are those of paper 000.
"""

import math

from .fluid_scenario import FluidScenario
from .validate import ModelInputError, non_negative, positive

LOG2_E = 1 / math.log(2)


def delay_term(k: float, q0: float, tau: float) -> float:
    """(2/3)·√(2/k) + q0 + τ: the bracket shared by Eqs. 14, 18 and 19."""
    return 2 / 3 * math.sqrt(2 / positive("k", k)) + q0 + tau


def q_max_fq(n: int, k: float, q0: float, tau: float) -> float:
    """FQ: q_max ≈ N·((2/3)√(2/k) + q0 + τ) (Eq. 14, Table 1)."""
    return n * delay_term(k, q0, tau)


def q_max_fifo(n: int, initial_burst: float, capacity: float, k: float, q0: float,
               tau: float) -> float:
    """FIFO: q_max ≈ (N·B0/(q0·C) + 1)·((2/3)√(2/k) + q0 + τ) (Eq. 18, Table 1).

    Unbounded (inf) when q0 = 0 and B0 > 0: the real-time flow then holds none of the buffer.
    """
    burst = n * initial_burst
    if burst == 0:
        return delay_term(k, q0, tau)
    if q0 == 0:
        return math.inf
    return (burst / (q0 * capacity) + 1) * delay_term(k, q0, tau)


def q_max_cbq(k: float, q0: float, tau: float) -> float:
    """CBQ/DRR with weights 1:1: q_max ≈ (2/3)√(2/k) + q0 + τ (Eq. 19, Table 1)."""
    return delay_term(k, q0, tau)


def q_max_confucius(k: float, q0: float, tau: float, lam: float) -> float:
    """Confucius: q_max ≲ 6q0 + 15τ + 8λ/k + (10q0 + 15τ)λ²/k (Eq. 30, Table 1)."""
    return 6 * q0 + 15 * tau + 8 * lam / k + (10 * q0 + 15 * tau) * lam ** 2 / k


def confucius_series_coefficients(k: float, q0: float, tau: float) -> tuple:
    """F0, F1, F2 of the expansion f(λ) = F0 + F1·λ + F2·λ² (Eq. 29), the 'unsimplified
    bound' that paper 000 plots in Fig. 19."""
    root = math.sqrt(positive("k", k))
    f0 = 2 * q0 + 6 * tau + 8 / (2 * root)
    f1 = 10 / (3 * k) + 2 * q0 * tau + 2 * tau ** 2 + 4 * q0 / root + 16 * tau / (3 * root)
    f2 = (4 * q0 / k + 6 * tau / k + q0 * tau ** 2 + tau ** 3 + 6 * q0 * tau / root
          + 11 * tau ** 2 / root)
    return f0, f1, f2


def q_max_confucius_series(k: float, q0: float, tau: float, lam: float) -> float:
    """f(λ) = F0 + F1·λ + F2·λ² (Eq. 29)."""
    f0, f1, f2 = confucius_series_coefficients(k, q0, tau)
    return f0 + f1 * lam + f2 * lam ** 2


def fct_constant_share(n: int, size: float, capacity: float, share: float) -> float:
    """Eq. 8 solved for a constant real-time share r = share·C: T = N·B / (C·(1 − share)).

    share = 1/(N+1) gives Eq. 15 (FQ), share = 1/2 gives Eq. 20 (CBQ).
    """
    if not 0 <= share < 1:
        raise ModelInputError(f"the real-time share must lie in [0, 1), got {share:g}")
    return n * size / (capacity * (1 - share))


def fct_fq(n: int, size: float, capacity: float) -> float:
    """T_FQ = (1 + 1/N)·N·B/C (Eq. 15)."""
    return fct_constant_share(n, size, capacity, 1 / (n + 1))


def fct_cbq(n: int, size: float, capacity: float) -> float:
    """T_DRR = 2·N·B/C (Eq. 20)."""
    return fct_constant_share(n, size, capacity, 0.5)


def fct_degradation_cbq(n: int, size: float, capacity: float) -> float:
    """T_DRR − T_FQ = (N − 1)·B/C (after Eq. 20, Table 1)."""
    return (n - 1) * size / capacity


def fct_degradation_confucius(n: int, lam: float) -> float:
    """T_Confucius − T_FQ as Eq. 31 prints it: (1/λ)·(1/2 − log2((N+1)/2)/N − 1/(2N)).

    Eq. 31 integrates 2^(−λt) as if it were e^(−λt), so the terms 1/2 − 1/(2N) lack a factor
    log2(e); `fct_degradation_confucius_exact` is the integral done exactly.
    """
    return (0.5 - math.log2((n + 1) / 2) / n - 1 / (2 * n)) / lam


def fct_confucius(n: int, size: float, capacity: float, lam: float) -> float:
    """T_Confucius = (N+1)·B/C + (1/λ)·(1/2 − log2((N+1)/2)/N − 1/(2N)) (Eq. 31)."""
    return fct_fq(n, size, capacity) + fct_degradation_confucius(n, lam)


def fct_degradation_bound_confucius(lam: float) -> float:
    """T_Confucius − T_FQ ≲ log2(e)/λ (Eq. 32, Table 1)."""
    return LOG2_E / positive("lambda", lam)


def fct_degradation_confucius_exact(n: int, lam: float) -> float:
    """Derived here: Eq. 8 integrated exactly with r(t) of Eq. 9d, for flows that outlast
    Confucius' ramp (t1 = log2((N+1)/2)/λ):
    T − T_FQ = (1/λ)·(log2(e)·(N−1)/(2N) − log2((N+1)/2)/N)  ≤ log2(e)/(2λ).
    """
    return (LOG2_E * (n - 1) / (2 * n) - math.log2((n + 1) / 2) / n) / lam


def fct_degradation_confucius002_exact(n: int, lam: float) -> float:
    """Derived here: Eq. 8 integrated exactly with paper 002's curve r = C/(1 + 2^(λt)) until
    the new flows reach weight 1 (t1 = log2(N)/λ), for flows that outlast that ramp:
    T − T_FQ = (1/λ)·(log2 N − ((N+1)/N)·log2((N+1)/2))  → 1/λ as N grows.
    """
    return (math.log2(n) - (n + 1) / n * math.log2((n + 1) / 2)) / lam


def first_peak_constant_share(share: float, k_eff: float, q0: float, tau: float) -> tuple:
    """Derived here: the first peak of q(t) in the fluid model for a constant real-time share
    ρ = r/C (FQ, CBQ, FIFO), by integrating the model exactly over its first 2τ.

    While t < 2τ the CCA reacts to the queue of t − τ < τ, which grows linearly, so
    s(t) = C − k·(C − r)·(q0·u + u²/2) with u = t − τ; the peak is where s = r,
    u* = √(q0² + 2/k) − q0, and
    q_max = q0/ρ + ((1 − ρ)/ρ)·(τ + u* − k·(q0·u*²/2 + u*³/6)).
    Returns (q_max, exact): exact is True when u* ≤ τ, i.e. the peak indeed falls inside
    the first 2τ. With q0 = 0 this is Eq. 14 (ρ = 1/(N+1)) and Eq. 19 (ρ = 1/2) exactly;
    so Eqs. 14 and 19 are exact when τ ≥ √(2/k), and approximations otherwise.
    `k_eff` is k for the 'served' gain and k/ρ for the 'link' gain (see `fluid`).
    """
    if not 0 < share < 1:
        raise ModelInputError(f"the real-time share must lie in (0, 1), got {share:g}")
    k_eff, q0, tau = positive("k", k_eff), non_negative("q0", q0), non_negative("tau", tau)
    u = math.sqrt(q0 ** 2 + 2 / k_eff) - q0
    rise = tau + u - k_eff * (q0 * u ** 2 / 2 + u ** 3 / 6)
    return q0 / share + (1 - share) / share * rise, u <= tau


def peak_without_delay(share: float, k_eff: float, q0: float) -> float:
    """Derived here: with τ = 0 the model is a harmonic oscillator and, for a constant
    share ρ, q_max = q0 + ((1 − ρ)/ρ)·√(q0² + 1/k) exactly. Eq. 14's (2/3)√2 ≈ 0.943 in
    place of 1 is the Taylor expansion's error in this regime (τ√k ≪ 1)."""
    if not 0 < share < 1:
        raise ModelInputError(f"the real-time share must lie in (0, 1), got {share:g}")
    return q0 + (1 - share) / share * math.sqrt(q0 ** 2 + 1 / positive("k", k_eff))


def table1(sc: FluidScenario) -> dict:
    """Table 1 of paper 000 (Table I of paper 002): policy -> (q_max, T_P − T_FQ)."""
    n, c = sc.flows, sc.capacity
    return {
        "fq": (q_max_fq(n, sc.k, sc.q0, sc.tau), 0.0),
        "fifo": (q_max_fifo(n, sc.initial_burst, c, sc.k, sc.q0, sc.tau), 0.0),
        "cbq": (q_max_cbq(sc.k, sc.q0, sc.tau), fct_degradation_cbq(n, sc.flow_size, c)),
        "confucius": (q_max_confucius(sc.k, sc.q0, sc.tau, sc.lam),
                      fct_degradation_bound_confucius(sc.lam)),
    }
