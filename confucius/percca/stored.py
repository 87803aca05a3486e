# SPDX-License-Identifier: MIT
"""Per-CCA runs as the database keeps them: each scenario as it was run, the measured
throughputs `percca-fit` reads, and a model's MinThr on one run's own draw. The report, the
fit and the validation of the fitted models read the runs through here."""

from __future__ import annotations

import json
import math
import statistics
from pathlib import Path

from confucius.experiment import db_percca
from confucius.experiment.db import Database
from confucius.models.aggressiveness import AggressivenessParams

from . import models
from . import mix_scenario


def scenarios(db: Database, names: set[str]) -> dict[str, mix_scenario.Scenario]:
    """Each scenario of `names` as it was last stored (its text), parsed again."""
    found = {}
    for r in db.scenario_texts():
        if r["name"] in names:
            found[r["name"]] = mix_scenario.parse(r["text"], Path(r["path"] or "scenario.toml"))
    return found


def fit_inputs(db: Database, names: list[str]) -> tuple[list[dict], list[dict]]:
    """What `confucius model percca-fit` reads, from shared-buffer runs of the scenarios
    `names`: `shared` rows (cca, thr: avgThr_i) from runs whose CCAs have equal flow counts,
    and `pairs` rows (cca_i, cca_j, x_i, thr_i, thr_j) from runs with exactly two CCAs."""
    runs = db_percca.shared_buffer_runs(db, names)
    shared, pairs = [], []
    for run in runs:
        counts = {c: n for c, n in json.loads(run["flows"]).items() if n > 0}
        avg = db_percca.per_flow_throughputs(db, run["id"])
        if len(counts) == 2:
            (i, n_i), (j, n_j) = sorted(counts.items())
            pairs.append({"cca_i": i, "cca_j": j, "x_i": n_i / (n_i + n_j), "thr_i": avg[i], "thr_j": avg[j]})
        if len(set(counts.values())) == 1:
            shared += [{"cca": c, "thr": avg[c]} for c in sorted(counts)]
    return shared, pairs


def fit_measurements(db: Database, names: list[str]) -> tuple[list[tuple], dict[str, float]]:
    """`fit_inputs` as `confucius.models.fitting` takes them: pair samples (cca_i, cca_j, x_i,
    thr_i, thr_j) and each CCA's per-flow throughput in the equal mixes, averaged over runs."""
    shared, pairs = fit_inputs(db, names)
    per_cca: dict[str, list[float]] = {}
    for r in shared:
        per_cca.setdefault(r["cca"], []).append(r["thr"])
    return ([(r["cca_i"], r["cca_j"], r["x_i"], r["thr_i"], r["thr_j"]) for r in pairs],
            {c: statistics.fmean(v) for c, v in per_cca.items()})


def run_weights(run) -> tuple[int, ...]:
    """The class weights a run installed (given or optimised), none when served by flows."""
    return tuple(json.loads(run["weights"])) if run["weights"] else ()


def predicted_on_draw(db: Database, sc: mix_scenario.Scenario, run, which: str,
                      params: AggressivenessParams | None = None) -> float | None:
    """Model `which`'s MinThr for the run's own draw (its flows' CCAs and classes) and its
    weights, with `params` (default: the scenario's); None where the model cannot say."""
    flows = db_percca.drawn_classes(db, run["id"])
    if not flows:
        return None
    a = models.drawn_distribution(sc.ccas, flows)
    value = models.predicted_for_distribution(sc.ccas, sc.counts, run["policy"], sc.groups(run["policy"]),
                                              a, run_weights(run), params or sc.params, which)
    return None if math.isnan(value) else value
