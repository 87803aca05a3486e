# SPDX-License-Identifier: MIT
"""The models' MinThr for a per-CCA scenario's point (confucius.models.percca, paper 003
§II), so that every run is stored beside the prediction it is compared with."""

from __future__ import annotations

import math

import numpy as np

from confucius.models import percca as model
from confucius.models.aggressiveness import AggressivenessParams
from confucius.models.validate import ModelInputError

from . import classifier as cls
from .classifier import Classifier, expected_distribution


def _subset_params(params: AggressivenessParams, ccas: list[str]) -> AggressivenessParams:
    """The parameters restricted to (and ordered as) the scenario's CCAs."""
    relative = {pair: fit for pair, fit in params.relative.items() if set(pair) <= set(ccas)}
    return AggressivenessParams(tuple(ccas), {c: params.g[c] for c in ccas if c in params.g}, relative)


def queue_distribution(a: np.ndarray, policy: str, groups: list[list[int]]) -> np.ndarray:
    if policy == "shared":
        return model.shared_buffer(a)
    return model.merge_queues(a, groups) if policy == "per-class" else a


def drawn_distribution(ccas: list[str], flows: list[tuple[str, str]]) -> np.ndarray:
    """A of one draw: the share of all flows that use CCA i and were classified as j,
    from each flow's (cca, classified_as)."""
    a = np.zeros((len(ccas), len(ccas)))
    for cca, classified in flows:
        a[ccas.index(cca), ccas.index(classified)] += 1
    return a / a.sum()


def predicted_min_thr(ccas: list[str], counts: list[int], policy: str, groups: list[list[int]],
                      classifier: Classifier | None, weights: tuple[int, ...],
                      params: AggressivenessParams, which: str) -> float:
    """MinThr that model `which` (simple | advanced) predicts for the classifier's expected
    flow distribution (Eq. 13); NaN where the parameters lack what it needs (e.g. an
    unfitted CCA)."""
    try:
        a = expected_distribution(classifier or Classifier("ideal"), ccas, counts,
                                  _subset_params(params, ccas))
    except (ModelInputError, KeyError):
        return math.nan
    return predicted_for_distribution(ccas, counts, policy, groups, a, weights, params, which)


def predicted_for_distribution(ccas: list[str], counts: list[int], policy: str,
                               groups: list[list[int]], a: np.ndarray, weights: tuple[int, ...],
                               params: AggressivenessParams, which: str) -> float:
    """MinThr that model `which` predicts for the flow distribution `a` (e.g. one run's
    draw: with 15 flows a draw is far from its expectation); NaN as above."""
    try:
        sub = _subset_params(params, ccas)
        queues = queue_distribution(a, policy, groups)
        if not weights or policy == "shared":
            return model.evaluate(queues, sub, counts, policy, which).min_thr
        g = (model.simple_aggressiveness(queues, sub) if which == "simple"
             else model.advanced_aggressiveness(queues, sub))
        rates = np.asarray(weights, dtype=float) / sum(weights)
        return model.min_thr(model.throughputs(model.packet_shares(queues, g), rates), counts)
    except (ModelInputError, KeyError):
        return math.nan


# Whole-number class weights for the qdisc: optimal rates in hundredths of the link; a queue
# the optimum leaves without service keeps weight 1 (the qdisc reads 0 as "by active flows").
WEIGHT_SCALE = 100


def optimised_weights(ccas: list[str], counts: list[int], policy: str, groups: list[list[int]],
                      classifier: Classifier, params: AggressivenessParams) -> tuple[int, ...]:
    """The service rates the advanced model's optimiser picks (§III-F) for the classifier's
    expected flow distribution (what an operator knowing the classifier's F1 can compute),
    as class weights."""
    sub = _subset_params(params, ccas)
    a = expected_distribution(classifier, ccas, counts, sub)
    queues = queue_distribution(a, policy, groups)
    shares = model.packet_shares(queues, model.advanced_aggressiveness(queues, sub))
    rates, _ = model.optimal_rates(shares, counts)
    return tuple(max(1, round(r * WEIGHT_SCALE)) for r in rates)


def check_optimiser(service: str, ccas: list[str], counts: list[int], policy: str,
                    groups: list[list[int]], classifier: Classifier,
                    params: AggressivenessParams) -> None:
    """Raise ModelInputError (or KeyError) where `service`'s optimiser cannot run at this
    point with these parameters: paper 003's (`optimised`) solves its LP for the expected
    distribution; the draws' (`optimised-draws`) needs the advanced model's MinThr for every
    weighting, tried here on the expected distribution."""
    if service == "optimised":
        optimised_weights(ccas, counts, policy, groups, classifier, params)
        return
    sub = _subset_params(params, ccas)
    queues = queue_distribution(expected_distribution(classifier, ccas, counts, sub), policy, groups)
    model.best_weighting([queues], sub, counts)


def optimised_weights_over_draws(ccas: list[str], counts: list[int], policy: str, groups: list[list[int]],
                                 classifier: Classifier, params: AggressivenessParams,
                                 flows: list[tuple[str, str]], seed: int) -> tuple[int, ...]:
    """The class weights with the advanced model's highest mean MinThr over the draws the
    classifier could have made with the flows per class of this draw (each flow's (cca,
    classified_as)): what an operator who knows the classifier and sees its classes can
    compute. Paper 003's optimum (`optimised_weights`) serves the expected distribution, which
    a draw of a few flows per CCA is far from. The hundredths go to the queues with flows;
    an empty queue, which any weight leaves unserved, keeps weight 1."""
    sub = _subset_params(params, ccas)
    index = {cca: i for i, cca in enumerate(ccas)}
    tables = cls.posterior_tables(cls.conditional(classifier, ccas, sub),
                                  [index[c] for c, _ in flows], [index[j] for _, j in flows], seed)
    distinct, frequencies = np.unique(tables, axis=0, return_counts=True)
    queues = [queue_distribution(t, policy, groups) for t in distinct]
    used = queues[0].sum(axis=0) > 0
    best, _ = model.best_weighting([q[:, used] for q in queues], sub, counts, frequencies, WEIGHT_SCALE)
    weights = np.ones(len(used), dtype=int)
    weights[used] = best
    return tuple(int(w) for w in weights)
