# SPDX-License-Identifier: MIT
"""Per-CCA queueing results (confucius/percca) from the database: MinThr against the
classifier's F1 per policy, several seeds per point, beside the models' predictions
(paper 003 Figs. 2-5), as rows for a table and as one figure."""

from __future__ import annotations

import json
import math
import statistics
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from confucius import provenance
from confucius.experiment import db_percca
from confucius.experiment.db import Database
from confucius.models.percca import lowest_f1
from confucius.percca import models, runner, stored
from confucius.percca import mix_scenario
from confucius.percca.classifier import Classifier
from confucius.percca.mix_scenario import Point

from .data import ReportError

MODELS = ("simple", "advanced")
POLICY_COLOURS = {"shared": "C1", "per-cca": "C0", "per-class": "C2"}


@dataclass(frozen=True)
class PointRow:
    scenario: str
    policy: str
    classifier: str
    f1_target: float | None
    f1_drawn: float              # mean over the seeds
    runs: int
    min_thr: float               # mean over the seeds
    min_thr_low: float
    min_thr_high: float
    jfi: float
    link_share: float            # measured total over the link rate
    model_simple: float | None
    model_advanced: float | None
    drawn_simple: float          # the models on each run's own draw, mean over the seeds
    drawn_advanced: float


def _mean(values) -> float:
    values = [v for v in values if v is not None]
    return statistics.fmean(values) if values else math.nan


def _points(db: Database, scenario: str | None) -> dict[tuple[str, str, str], list]:
    """The successful runs of each point, (scenario, policy, classifier): its seeds."""
    runs = db_percca.successful_runs(db, scenario)
    groups: dict[tuple[str, str, str], list] = {}
    for r in runs:
        groups.setdefault((r["name"], r["policy"], r["classifier"]), []).append(r)
    return groups


def mixed_programs(db: Database, scenario: str | None) -> dict[tuple[str, str, str], dict[str, list[str]]]:
    """Per point whose runs record a program with more than one digest (runs added with
    `--again`, or stored before resumes compared programs): those programs' digests."""
    found = {point: provenance.mixed_programs(json.loads(r["versions"] or "{}") for r in runs)
             for point, runs in _points(db, scenario).items()}
    return {point: programs for point, programs in found.items() if programs}


def point_rows(db: Database, scenario: str | None) -> list[PointRow]:
    groups = _points(db, scenario)
    scenarios = stored.scenarios(db, {name for name, _, _ in groups})
    rows = []
    for (name, policy, label), members in groups.items():
        thr = [m["min_thr"] for m in members]
        drawn = {which: _mean(stored.predicted_on_draw(db, scenarios[name], m, which) for m in members) for which in MODELS}
        rows.append(PointRow(
            scenario=name, policy=policy, classifier=label, f1_target=members[0]["f1_target"],
            f1_drawn=_mean(m["f1_drawn"] for m in members), runs=len(members), min_thr=_mean(thr),
            min_thr_low=min(thr), min_thr_high=max(thr), jfi=_mean(m["jfi"] for m in members),
            link_share=_mean(m["total_bps"] / m["rate_bps"] for m in members),
            model_simple=members[0]["model_simple"], model_advanced=members[0]["model_advanced"],
            drawn_simple=drawn["simple"], drawn_advanced=drawn["advanced"]))
    return rows


def _x(row: PointRow) -> float:
    """Where a point sits on the F1 axis: its target, else the F1 its draws realised."""
    return row.f1_target if row.f1_target is not None else row.f1_drawn


def axis(sc: mix_scenario.Scenario):
    """The figure's x axis for a scenario, (label, position of a row): the classifiers'
    interval when all are published ones (paper 003 Fig. 4), else F1."""
    intervals = {c.label: c.interval_s for c in sc.classifiers if c.kind == "published"}
    if intervals and len(intervals) == len(sc.classifiers):
        return "classifier interval (s)", lambda row: intervals[row.classifier]
    return "classifier F1", _x


def plot(db: Database, rows: list[PointRow], out: Path) -> Path:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    if not rows:
        raise ReportError("no per-CCA runs to plot")
    names = sorted({r.scenario for r in rows})
    scenarios = stored.scenarios(db, set(names))
    fig, axes = plt.subplots(1, len(names), figsize=(6 * len(names), 4.5), squeeze=False)
    for ax, name in zip(axes[0], names):
        sc = scenarios[name]
        label, x = axis(sc)
        mine = [r for r in rows if r.scenario == name]
        for policy in sorted({r.policy for r in mine}):
            colour = POLICY_COLOURS[policy]
            if policy == "shared":
                for r in (r for r in mine if r.policy == policy):
                    ax.axhspan(r.min_thr_low, r.min_thr_high, color=colour, alpha=0.15)
                    ax.axhline(r.min_thr, color=colour, label=f"shared FIFO, lab ({r.runs} runs)")
                _model_curves(ax, sc, policy, colour)
                continue
            points = sorted((r for r in mine if r.policy == policy), key=x)
            ax.errorbar([x(r) for r in points], [r.min_thr for r in points],
                        yerr=[[r.min_thr - r.min_thr_low for r in points],
                              [r.min_thr_high - r.min_thr for r in points]],
                        fmt="o", color=colour, capsize=3, label=f"{policy}, lab (mean, min-max)")
            if all(c.kind in ("f1", "ideal") for c in sc.classifiers):
                _model_curves(ax, sc, policy, colour)
            else:
                _model_points(ax, points, x, policy, colour)
        ax.set_xlabel(label)
        ax.set_ylabel("MinThr (of the fair share)")
        counts = ", ".join(f"{n} {c}" for c, n in sc.flows)
        ax.set_title(f"{name}: {counts}\n{sc.rate_bps / 1e6:g} Mbit/s, {sc.rtt_s * 1e3:g} ms, "
                     f"{sc.buffer} packets, {sc.qdisc}", fontsize=9)
        ax.set_ylim(0, 1.05)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7, loc="best")
    fig.tight_layout()
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=130)
    plt.close(fig)
    return out


def _weights_at(sc: mix_scenario.Scenario, policy: str, f1: float) -> tuple[int, ...]:
    return runner.point_weights(sc, Point(policy, Classifier("f1", f1=f1), 0))


def _model_curves(ax, sc: mix_scenario.Scenario, policy: str, colour: str) -> None:
    """The models' MinThr against F1 for the classifier's expected draw (a level for the
    shared FIFO); none where the weights follow each run's draw."""
    if runner.weights_follow_the_draw(sc, policy):
        return
    groups = sc.groups(policy)
    if policy == "shared":
        for which, style in zip(MODELS, (":", "--")):
            y = models.predicted_min_thr(sc.ccas, sc.counts, policy, groups, None, (), sc.params, which)
            if not math.isnan(y):
                ax.axhline(y, linestyle=style, color=colour, label=f"{policy}, {which} model")
        return
    try:
        low = lowest_f1([sc.params.g[c] for c in sc.ccas])
    except KeyError:
        return
    f1s = np.linspace(max(low, 0.34), 1.0, 60)
    for which, style in zip(MODELS, (":", "--")):
        values = [models.predicted_min_thr(sc.ccas, sc.counts, policy, groups, Classifier("f1", f1=f),
                                           _weights_at(sc, policy, f), sc.params, which) for f in f1s]
        if not all(math.isnan(v) for v in values):
            ax.plot(f1s, values, style, color=colour, label=f"{policy}, {which} model")


def _model_points(ax, points: list[PointRow], x, policy: str, colour: str) -> None:
    """The models' MinThr at each point, for classifiers that no F1 curve describes (per-CCA
    accuracies, published ones): stored with the runs, for the classifier's expected draw."""
    for which, style in zip(MODELS, (":", "--")):
        values = [getattr(r, f"model_{which}") for r in points]
        if any(v is not None for v in values):
            ax.plot([x(r) for r in points], [math.nan if v is None else v for v in values], style,
                    marker="x", color=colour, label=f"{policy}, {which} model")
