# SPDX-License-Identifier: MIT
"""Per-CCA queueing models of paper 003 §II and the service-rate optimisation of §III-F.

K CCAs with N_i flows each are mapped by a classifier to Q queues. Everything is in
fractions: A sums to 1, service rates c_j sum to 1 (times the link capacity), throughputs
are fractions of the link.

- Flow distribution A (Eqs. 7–13): a_ij, the probability that a flow uses CCA i and is
  classified as j. From one F1 and the training aggressiveness g (misclassification falls as
  1/√g_i, Eq. 7), or from per-CCA accuracies (paper 003 §III-D, Table I).
- Packet shares (Eq. 14): p_ij = g_i·a_ij / Σ_i g_i·a_ij, with g_i the training
  aggressiveness (simple model) or the queue's own g_i(k) = Σ_j x_j^k·g_ij(x_i^k) (advanced
  model, Eq. 16).
- Throughput (Eq. 15): Thr_i = Σ_j p_ij·c_j, with c_j proportional to the queue's flows or
  optimised: for one flow distribution (`optimal_rates`, the paper's §III-F), or as whole
  weights for many (`best_weighting`, e.g. a classifier's possible draws).
- MinThr (Eq. 17): min_i avgThr_i / fairShare, where avgThr_i = Thr_i/N_i and fairShare is
  the mean of avgThr_i over the CCAs that have flows (confucius.metrics.min_thr, the same
  definition the lab's measurements use).
"""

from dataclasses import dataclass
from itertools import combinations
from math import comb

import numpy as np
from scipy.optimize import linprog

from confucius import metrics

from .aggressiveness import AggressivenessParams
from .validate import ModelInputError, f1_score, flow_count, positive

MODELS = ("simple", "advanced")


def check_counts(counts) -> np.ndarray:
    counts = np.array([flow_count("flow count", n) for n in counts], dtype=float)
    if counts.sum() == 0:
        raise ModelInputError("the flow counts sum to zero: give at least one flow")
    return counts


def lowest_f1(g) -> float:
    """The smallest F1 for which Eq. 12 has no negative entry (below it, the model would
    misclassify more flows of some CCA than exist)."""
    inv = 1 / np.sqrt(np.asarray(g, dtype=float))
    k = len(inv)
    return float(1 - inv.sum() / (k * inv.max()))


def homogeneous_distribution(f1: float, g) -> np.ndarray:
    """A' for equal flow counts (Eqs. 9, 11): off-diagonal γ/√g_i, rows summing to 1/K, with
    γ = (1 − F1) / ((K − 1)·Σ 1/√g_i), so that the diagonal sums to F1 (Eq. 10)."""
    f1 = f1_score("F1", f1)
    inv = 1 / np.sqrt(np.array([positive("g", x) for x in g]))
    k = len(inv)
    gamma = (1 - f1) / ((k - 1) * inv.sum())
    a = np.repeat((gamma * inv)[:, None], k, axis=1)
    np.fill_diagonal(a, 1 / k - (k - 1) * gamma * inv)
    if a.min() < -1e-12:
        raise ModelInputError(f"F1 = {f1:g} is below what these aggressiveness values allow "
                              f"(F1 >= {lowest_f1(g):.4f}): Eq. 12 would give a negative "
                              "share of correctly classified flows")
    return np.clip(a, 0, None)


def flow_distribution(f1: float, g, counts) -> np.ndarray:
    """A for any flow counts: a_ij = (N_i/N)·K·a'_ij (Eq. 13)."""
    counts = check_counts(counts)
    if len(counts) != len(g):
        raise ModelInputError(f"{len(counts)} flow counts for {len(g)} CCAs")
    k = len(counts)
    return (counts / counts.sum() * k)[:, None] * homogeneous_distribution(f1, g)


def flow_distribution_from_accuracy(accuracy, counts) -> np.ndarray:
    """A from per-CCA classifier accuracies (paper 003 §III-D): a flow of CCA i is classified
    correctly with probability F1_i, and otherwise as any other CCA alike."""
    counts = check_counts(counts)
    acc = np.array([f1_score("per-CCA F1", x) for x in accuracy])
    if len(acc) != len(counts):
        raise ModelInputError(f"{len(acc)} accuracies for {len(counts)} CCAs")
    k = len(counts)
    q = np.repeat(((1 - acc) / (k - 1))[:, None], k, axis=1)
    np.fill_diagonal(q, acc)
    return (counts / counts.sum())[:, None] * q


def merge_queues(a: np.ndarray, groups) -> np.ndarray:
    """Per-CCA-class queueing (paper 003 §III-E): the columns of the CCAs of one class are
    one queue. `groups` lists each class's CCA indices; together they cover every CCA once."""
    flat = sorted(i for group in groups for i in group)
    if flat != list(range(a.shape[1])):
        raise ModelInputError("the classes must name every CCA exactly once")
    return np.stack([a[:, list(group)].sum(axis=1) for group in groups], axis=1)


def shared_buffer(a: np.ndarray) -> np.ndarray:
    """One queue for everyone: the classifier does not matter."""
    return a.sum(axis=1, keepdims=True)


def queue_mix(a: np.ndarray) -> np.ndarray:
    """x_i^k: the proportion of queue k's flows that use CCA i (0 for an empty queue)."""
    totals = a.sum(axis=0)
    return np.divide(a, totals, out=np.zeros_like(a), where=totals > 0)


def simple_aggressiveness(a: np.ndarray, params: AggressivenessParams) -> np.ndarray:
    """The simple model (§II-D): every flow keeps its training aggressiveness g_i."""
    return np.repeat(np.array(params.training_g())[:, None], a.shape[1], axis=1)


def advanced_aggressiveness(a: np.ndarray, params: AggressivenessParams) -> np.ndarray:
    """g_i(k) = Σ_j x_j^k·g_ij(x_i^k) (Eq. 16), for every CCA i and queue k."""
    x = queue_mix(a)
    names = params.ccas
    g = np.ones_like(a)
    for k in range(a.shape[1]):
        present = [j for j in range(len(names)) if x[j, k] > 0]
        for i in present:
            g[i, k] = sum(x[j, k] * params.relative_aggressiveness(names[i], names[j], x[i, k])
                          for j in present)
    return g


def packet_shares(a: np.ndarray, g: np.ndarray) -> np.ndarray:
    """p_ij = g_i·a_ij / Σ_i g_i·a_ij (Eq. 14); an empty queue has no packets (0)."""
    weighted = g * a
    totals = weighted.sum(axis=0)
    return np.divide(weighted, totals, out=np.zeros_like(a), where=totals > 0)


def proportional_rates(a: np.ndarray) -> np.ndarray:
    """c_j proportional to the flows mapped to queue j (paper 003's default service)."""
    return a.sum(axis=0) / a.sum()


def throughputs(p: np.ndarray, rates: np.ndarray) -> np.ndarray:
    """Thr_i = Σ_j p_ij·c_j (Eq. 15)."""
    return p @ rates


def normalised_throughputs(thr: np.ndarray, counts) -> np.ndarray:
    """avgThr_i / fairShare (the ratio inside Eq. 17); NaN for CCAs without flows."""
    return np.array(metrics.normalised_throughputs(list(thr), list(check_counts(counts))))


def min_thr(thr: np.ndarray, counts) -> float:
    """MinThr = min_i avgThr_i / fairShare (Eq. 17)."""
    return float(metrics.min_thr(list(thr), list(check_counts(counts))))


def optimal_rates(p: np.ndarray, counts) -> tuple:
    """The service rates that maximise MinThr (§III-F), and that MinThr.

    The packet shares p do not depend on the rates, so every avgThr_i is linear in c and
    MinThr is a ratio of linear functions; with y = c / fairShare(c) (Charnes–Cooper) the
    problem is the linear programme: maximise t s.t. avgThr_i(y) >= t, fairShare(y) = 1,
    y >= 0. Solved exactly by scipy's HiGHS.
    """
    counts = check_counts(counts)
    has_flows = counts > 0
    per_flow = p[has_flows] / counts[has_flows][:, None]   # avgThr_i = per_flow @ c
    n_queues = p.shape[1]
    objective = np.zeros(n_queues + 1)
    objective[-1] = -1.0
    upper = np.hstack([-per_flow, np.ones((per_flow.shape[0], 1))])
    fair = np.append(per_flow.mean(axis=0), 0.0)[None, :]
    result = linprog(objective, A_ub=upper, b_ub=np.zeros(per_flow.shape[0]), A_eq=fair,
                     b_eq=[1.0], bounds=[(0, None)] * n_queues + [(None, None)],
                     method="highs")
    if result.status != 0:
        raise ModelInputError(f"the service-rate optimisation failed: {result.message}")
    y = result.x[:n_queues]
    rates = y / y.sum()
    return rates, min_thr(throughputs(p, rates), counts)


def weight_grid(queues: int, largest_total: int = 100, most: int = 5000) -> np.ndarray:
    """Every whole-number weighting of `queues` queues, each weight at least 1, that sums to
    the largest total up to `largest_total` with at most `most` weightings (one per row):
    all hundredths for up to three queues."""
    total = next((t for t in range(largest_total, queues - 1, -1) if comb(t - 1, queues - 1) <= most), None)
    if queues < 1 or total is None:
        raise ModelInputError(f"no whole weighting of {queues} queues up to {largest_total} "
                              f"in at most {most} rows")
    chosen = list(combinations(range(1, total), queues - 1))
    cuts = np.array(chosen, dtype=int).reshape(len(chosen), queues - 1)
    bounds = np.hstack([np.zeros((len(cuts), 1), int), cuts, np.full((len(cuts), 1), total)])
    return np.diff(bounds, axis=1)


def mean_min_thr(distributions, params: AggressivenessParams, counts, weightings: np.ndarray,
                 frequencies=None) -> np.ndarray:
    """The advanced model's MinThr of each weighting (a row of queue weights), averaged over
    the flow distributions (each K×Q, at any scale: e.g. one draw's flow counts), each
    counted as often as `frequencies` says (default once). An empty queue serves nobody
    whatever its weight; MinThr, a ratio to the mean, is the same whether the
    work-conserving link gives its time to the others or not."""
    counts = list(check_counts(counts))
    frequencies = np.ones(len(distributions)) if frequencies is None else np.asarray(frequencies, dtype=float)
    rates = weightings / weightings.sum(axis=1, keepdims=True)
    total = np.zeros(len(weightings))
    for a, frequency in zip(distributions, frequencies, strict=True):
        a = np.asarray(a, dtype=float) / np.sum(a)
        thr = throughputs(packet_shares(a, advanced_aggressiveness(a, params)), rates.T).T
        total += frequency * np.array([metrics.min_thr(row, counts) for row in thr.tolist()])
    return total / frequencies.sum()


def best_weighting(distributions, params: AggressivenessParams, counts, frequencies=None,
                   largest_total: int = 100) -> tuple[tuple[int, ...], float]:
    """The weighting of `weight_grid` with the highest mean MinThr over `distributions`
    (the advanced model, `mean_min_thr`), and that mean; the first of equals, so the choice
    is repeatable."""
    grid = weight_grid(np.shape(distributions[0])[1], largest_total)
    values = mean_min_thr(distributions, params, counts, grid, frequencies)
    if np.isnan(values).any():
        raise ModelInputError("the model gave no MinThr for some weighting")
    best = int(np.argmax(values))
    return tuple(int(w) for w in grid[best]), float(values[best])


@dataclass(frozen=True)
class Outcome:
    """The result of one queueing arrangement under one model."""

    arrangement: str
    model: str
    optimised: bool
    rates: np.ndarray          # service rate of each queue, fraction of the link
    normalised: np.ndarray     # avgThr_i / fairShare per CCA
    min_thr: float


def evaluate(a: np.ndarray, params: AggressivenessParams, counts, arrangement: str,
             model: str, optimise: bool = False) -> Outcome:
    """MinThr of the queues whose flow distribution is `a` (already merged as needed)."""
    if model not in MODELS:
        raise ModelInputError(f"unknown model {model!r}: choose from {', '.join(MODELS)}")
    g = simple_aggressiveness(a, params) if model == "simple" else \
        advanced_aggressiveness(a, params)
    p = packet_shares(a, g)
    if optimise:
        rates, _ = optimal_rates(p, counts)
    else:
        rates = proportional_rates(a)
    thr = throughputs(p, rates)
    return Outcome(arrangement, model, optimise, rates, normalised_throughputs(thr, counts), min_thr(thr, counts))
