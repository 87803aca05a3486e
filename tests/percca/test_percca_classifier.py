# SPDX-License-Identifier: MIT
"""The classifier's draw: over many seeded draws, the share of correctly classified flows
is the target F1 (paper 003 Eq. 10) and the misclassifications follow Eq. 7: spread alike
over the other CCAs, falling as 1/√g_i."""

import itertools
import math

import numpy as np
import pytest

from confucius.models.presets import PAPER003
from confucius.percca import classifier as cls
from confucius.percca.classifier import Classifier

CCAS = ["reno", "cubic", "bbr"]
DRAWS = 400
FLOWS_PER_CCA = 50


def draw_many(classifier, counts=(FLOWS_PER_CCA,) * 3):
    q = cls.conditional(classifier, CCAS, PAPER003)
    flow_ccas = [i for i, n in enumerate(counts) for _ in range(n)]
    confusion = np.zeros((3, 3))
    f1s = []
    for seed in range(DRAWS):
        classes = cls.draw(q, flow_ccas, seed)
        f1s.append(cls.realised_f1(flow_ccas, classes))
        for i, j in zip(flow_ccas, classes):
            confusion[i, j] += 1
    return q, np.array(f1s), confusion / confusion.sum(axis=1, keepdims=True)


@pytest.mark.parametrize("f1", [0.6, 0.83, 0.95])
def test_draws_reproduce_the_target_f1_and_eq7(f1):
    q, f1s, observed = draw_many(Classifier("f1", f1=f1))
    # 150 flows per draw: the mean over 400 draws has a standard error below 0.002.
    print(f"F1 {f1}: drawn {f1s.mean():.4f} ± {f1s.std():.4f} per draw")
    assert abs(f1s.mean() - f1) < 0.006
    g = np.array([PAPER003.g[c] for c in CCAS])
    for i in range(3):
        off = [observed[i, j] for j in range(3) if j != i]
        # Alike over the other CCAs (Eq. 7 is independent of j) ...
        assert off[0] == pytest.approx(off[1], abs=0.02)
        # ... and at the model's rate.
        assert np.mean(off) == pytest.approx(q[i, (i + 1) % 3], abs=0.015)
    # Misclassification falls as 1/√g: Reno's against BBR's is √(g_bbr/g_reno) = 4.9.
    ratio = (1 - observed[0, 0]) / (1 - observed[2, 2])
    assert ratio == pytest.approx(math.sqrt(g[2] / g[0]), rel=0.15)


def test_an_ideal_classifier_never_errs_and_a_seed_repeats_its_draw():
    _, f1s, observed = draw_many(Classifier("ideal"))
    assert (f1s == 1).all() and (np.diag(observed) == 1).all()
    q = cls.conditional(Classifier("f1", f1=0.7), CCAS, PAPER003)
    assert cls.draw(q, [0, 1, 2] * 20, 7) == cls.draw(q, [0, 1, 2] * 20, 7)
    assert cls.draw(q, [0, 1, 2] * 20, 7) != cls.draw(q, [0, 1, 2] * 20, 8)


def test_published_figures_are_per_cca_accuracies():
    _, _, observed = draw_many(Classifier("published", name="deepcci", interval_s=1.0))
    # paper 003 Table I: DeePCCI at 1 s, Reno 0.666, CUBIC 0.5833, BBR 0.95.
    assert np.diag(observed) == pytest.approx([0.666, 0.5833, 0.95], abs=0.015)


def test_the_models_on_a_draw_follow_where_its_bbr_flows_went():
    from confucius.percca import models
    groups = [[0], [1], [2]]
    ideal = models.drawn_distribution(CCAS, [(c, c) for c in CCAS for _ in range(5)])
    assert models.predicted_for_distribution(CCAS, [5, 5, 5], "per-cca", groups, ideal, (), PAPER003,
                                             "advanced") == pytest.approx(1.0)
    # One BBR flow in Reno's queue of five: Reno's share collapses, as Fig. 1(c)'s sharks.
    shark = models.drawn_distribution(CCAS, [(c, c) for c in CCAS for _ in range(5)][:-1] + [("bbr", "reno")])
    low = models.predicted_for_distribution(CCAS, [5, 5, 5], "per-cca", groups, shark, (), PAPER003, "advanced")
    assert low < 0.5


def _exact_posterior(q, flow_ccas, per_class):
    """The mean table over every assignment of classes to the flows that has `per_class`
    flows per class, each weighed by its probability Π q[cca, class]: the posterior the
    chain must sample, by enumeration."""
    rows = np.asarray(flow_ccas)
    total, mean = 0.0, np.zeros(q.shape)
    for classes in itertools.product(range(len(q)), repeat=len(rows)):
        if (np.bincount(classes, minlength=len(q)) == per_class).all():
            weight = np.prod(q[rows, classes])
            table = np.zeros(q.shape)
            np.add.at(table, (rows, classes), 1)
            total += weight
            mean += weight * table
    return mean / total


def test_posterior_tables_keep_the_counts_and_sample_the_conditioned_draw():
    q = cls.conditional(Classifier("f1", f1=0.6), CCAS, PAPER003)
    flow_ccas = [0, 0, 0, 1, 1, 2, 2]
    classes = [0, 1, 2, 2, 1, 2, 0]
    per_class = np.bincount(classes, minlength=3)
    tables = cls.posterior_tables(q, flow_ccas, classes, seed=7, samples=4000)
    assert (tables.sum(axis=1) == per_class).all() and (tables.sum(axis=2) == [3, 2, 2]).all()
    expected = _exact_posterior(q, flow_ccas, per_class)
    print(f"per class {per_class.tolist()}: chain\n{tables.mean(axis=0).round(3)}\nexact\n{expected.round(3)}")
    np.testing.assert_allclose(tables.mean(axis=0), expected, atol=0.05)
    # The chain forgets its start: begun from another assignment with the same counts.
    again = cls.posterior_tables(q, flow_ccas, [2, 0, 1, 0, 2, 1, 2], seed=8, samples=4000)
    np.testing.assert_allclose(again.mean(axis=0), expected, atol=0.05)


def test_an_ideal_classifiers_posterior_is_its_draw():
    flow_ccas = [0, 0, 1, 2, 2]
    tables = cls.posterior_tables(np.eye(3), flow_ccas, flow_ccas, seed=1, samples=10)
    assert (tables == np.diag([2, 1, 2])).all()
