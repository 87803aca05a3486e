# SPDX-License-Identifier: MIT
"""The CCA classifier of a per-CCA run: the conditional probabilities q_ij that a flow of
CCA i is classified as CCA j (paper 003 Eq. 1), and a seeded draw of every flow's class.

- ideal: q = I.
- f1: paper 003's model of current and future classifiers. Misclassification falls as
  1/√g_i (Eq. 7) and is spread alike over the other CCAs; for equal flow counts the
  share of correctly classified flows is F1 (Eqs. 8–12), so q = K·A' with A' from
  `confucius.models.percca.homogeneous_distribution` (the models' one definition).
- accuracy: per-CCA F1_i on the diagonal, the rest spread alike (paper 003 §III-D).
- published: a classifier's per-CCA F1 from paper 003 Table I (DeePCCI, Dragonfly at
  1/5/10 s), used as per-CCA accuracies, as the paper does.

Each flow's class is drawn independently from its CCA's row (the paper's Mininet method,
§III-A), from numpy's PCG64 seeded by the run's seed, so a run is reproducible.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from confucius.models import percca as model
from confucius.models import presets
from confucius.models.aggressiveness import AggressivenessParams

KINDS = ("ideal", "f1", "accuracy", "published")


@dataclass(frozen=True)
class Classifier:
    """One classifier setting: `kind` with its F1, accuracies or published name/interval."""
    kind: str
    f1: float | None = None
    accuracy: tuple[tuple[str, float], ...] = ()
    name: str | None = None
    interval_s: float | None = None

    @property
    def label(self) -> str:
        if self.kind == "f1":
            return f"f1={self.f1:g}"
        if self.kind == "published":
            return f"{self.name}@{self.interval_s:g}s"
        if self.kind == "accuracy":
            return "accuracy=" + ",".join(f"{c}:{a:g}" for c, a in self.accuracy)
        return self.kind

    def to_json(self) -> dict:
        return {"kind": self.kind, "f1": self.f1, "accuracy": dict(self.accuracy),
                "name": self.name, "interval_s": self.interval_s}


def training_g(params: AggressivenessParams, ccas: list[str]) -> list[float]:
    """g_i of the scenario's CCAs, in their order."""
    return [params.g[cca] for cca in ccas]


def per_cca_accuracy(classifier: Classifier, ccas: list[str]) -> list[float]:
    table = (presets.classifier_accuracy(classifier.name, classifier.interval_s)
             if classifier.kind == "published" else dict(classifier.accuracy))
    return [table[cca] for cca in ccas]


def conditional(classifier: Classifier, ccas: list[str], params: AggressivenessParams) -> np.ndarray:
    """q_ij, rows summing to 1, for the CCAs `ccas` in this order."""
    k = len(ccas)
    ones = [1] * k
    if classifier.kind == "ideal":
        return np.eye(k)
    if classifier.kind == "f1":
        return k * model.flow_distribution(classifier.f1, training_g(params, ccas), ones)
    return k * model.flow_distribution_from_accuracy(per_cca_accuracy(classifier, ccas), ones)


def expected_distribution(classifier: Classifier, ccas: list[str], counts: list[int],
                          params: AggressivenessParams) -> np.ndarray:
    """A (Eq. 13): the share of flows of CCA i classified as j that the draw aims at."""
    counts = np.asarray(counts, dtype=float)
    return (counts / counts.sum())[:, None] * conditional(classifier, ccas, params)


def draw(q: np.ndarray, flow_ccas: list[int], seed: int) -> list[int]:
    """The class (CCA index) each flow is classified as, flow f of CCA flow_ccas[f]."""
    rows = np.asarray(flow_ccas)
    cumulative = np.cumsum(q / q.sum(axis=1, keepdims=True), axis=1)[rows]
    uniform = np.random.default_rng(seed).random(len(rows))[:, None]
    # The first class whose cumulative probability exceeds the uniform draw.
    return (uniform >= cumulative).sum(axis=1).clip(max=len(q) - 1).tolist()


def posterior_tables(q: np.ndarray, flow_ccas: list[int], classes: list[int], seed: int,
                     samples: int = 200) -> np.ndarray:
    """Tables of flows per (CCA, class) that the classifier `q` could have drawn for these
    flows of these CCAs, given how many it put in each class: what an operator who knows the
    flow mix sees, without knowing which flow uses which CCA. Samples of the draw's
    distribution conditioned on those counts, by a Metropolis chain whose proposals swap two
    flows' classes (a swap keeps every class's count), started from the draw `classes`, with
    20 proposals per flow before the first sample and 2 between samples, so that the
    samples depend on the counts and not on the start. Swaps reach every table with those
    counts while q has no cycle of zeros (none of the classifiers the scenarios accept has)."""
    rows = np.asarray(flow_ccas)
    state = np.array(classes)
    flows, k = len(rows), len(q)
    burn, thin = 20 * flows, 2 * flows
    # The point's seed, as its draw's: the measured runs' weights repeat (the burn-in
    # forgets what the two share).
    rng = np.random.default_rng(seed)
    pairs = rng.integers(flows, size=(burn + samples * thin, 2))
    uniform = rng.random(len(pairs))
    tables = np.zeros((samples, k, k), dtype=int)
    for step, ((f, g), u) in enumerate(zip(pairs.tolist(), uniform.tolist())):
        a, b = state[f], state[g]
        if rows[f] != rows[g] and a != b:
            moved = q[rows[f], b] * q[rows[g], a]
            if moved > 0 and u * q[rows[f], a] * q[rows[g], b] < moved:
                state[f], state[g] = b, a
        if step >= burn and (step - burn) % thin == thin - 1:
            np.add.at(tables[(step - burn) // thin], (rows, state), 1)
    return tables


def realised_f1(flow_ccas: list[int], classes: list[int]) -> float:
    """The share of flows classified as their own CCA: the diagonal of the drawn A, the
    paper's F1 (Eq. 10) for this one draw."""
    return sum(i == j for i, j in zip(flow_ccas, classes)) / len(flow_ccas)
