# SPDX-License-Identifier: MIT
"""Figures of the models: paper 000 Fig. 19 (the Confucius bound against k, τ, q0), paper 002
Fig. 9 (available bandwidth per policy), q(t) per policy, and the model curves of paper 003
Figs. 2–6. Each function writes one PNG into `out` and returns its path."""

from dataclasses import replace
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402  (the backend must be chosen first)
import numpy as np  # noqa: E402

from . import bounds, fluid, percca, policies, presets  # noqa: E402
from .aggressiveness import AggressivenessParams  # noqa: E402
from .fluid_scenario import FluidScenario  # noqa: E402
from .validate import ModelInputError  # noqa: E402

MS = 1e3  # seconds -> milliseconds for axes


def _save(fig, out: Path, name: str) -> Path:
    out.mkdir(parents=True, exist_ok=True)
    path = out / name
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def fluid_timeseries(runs: list, sc: FluidScenario, out: Path) -> Path:
    """q(t), s(t)/C and r(t)/C of each solved policy."""
    fig, axes = plt.subplots(3, 1, figsize=(8, 9), sharex=True)
    for run in runs:
        axes[0].plot(run.t, run.q * MS, label=run.policy)
        axes[1].plot(run.t, run.s / sc.capacity, label=run.policy)
        axes[2].plot(run.t, run.r / sc.capacity, label=run.policy)
    axes[0].set_ylabel("queueing delay q(t) [ms]")
    axes[1].set_ylabel("sending rate s(t) / C")
    axes[2].set_ylabel("available bandwidth r(t) / C")
    axes[2].set_xlabel("time since the burst [s]")
    axes[0].set_title(f"Fluid model: N={sc.flows}, k={sc.k:.4g} s^-2, τ={sc.tau * MS:g} ms, "
                      f"q0={sc.q0 * MS:g} ms, 1/λ={MS / sc.lam:g} ms")
    axes[0].legend()
    return _save(fig, out, "fluid_timeseries.png")


def available_bandwidth(sc: FluidScenario, out: Path) -> Path:
    """Paper 002 Fig. 9: r(t)/C per policy; the shaded area is what Confucius gives the
    real-time flow beyond FQ, which bounds the new flows' FCT degradation."""
    end = max(policies.ramp_end(p, sc) for p in policies.POLICIES) + 2 / sc.lam
    t = np.linspace(0, end, 2000)
    fig, ax = plt.subplots(figsize=(8, 5))
    for policy in policies.POLICIES:
        if policy == "fifo" and policies.fifo_share(sc) == 0:
            continue  # q0 = 0: the real-time flow holds no buffer, r = 0
        ax.plot(t, policies.share(policy, sc, t), label=policy,
                drawstyle="steps-post" if policy == "confucius-ticks" else "default")
    fq = policies.share("fq", sc, t)
    ax.fill_between(t, fq, policies.share("confucius-002", sc, t), alpha=0.2,
                    label="extra real-time share (002)")
    ax.set_xlabel("time since the burst [s]")
    ax.set_ylabel("real-time flow's available bandwidth r(t) / C")
    ax.set_title(f"Available bandwidth, N={sc.flows} new flows, 1/λ={MS / sc.lam:g} ms")
    ax.legend()
    return _save(fig, out, "fig9_available_bandwidth.png")


def _numeric_q_max(sc: FluidScenario, gain: str) -> float:
    return fluid.solve("confucius", sc, gain=gain).q_max


def bound_sweeps(sc: FluidScenario, out: Path, points: int = 15) -> list:
    """Paper 000 Fig. 19 (a)–(c): Confucius' q_max against k, τ and q0: Table 1 (Eq. 30), the
    unsimplified series (Eq. 29) and the numerical solution of the model."""
    if points < 2:
        raise ModelInputError(f"a sweep needs at least 2 points, got {points}")
    sweeps = [
        ("k", "k [ms^-2]", np.geomspace(sc.k / 10, sc.k * 10, points), 1e-6,
         "fig19a_k.png"),
        ("tau", "τ [ms]", np.linspace(0.005, 0.2, points), MS, "fig19b_tau.png"),
        ("q0", "q0 [ms]", np.linspace(0.0, 0.1, points), MS, "fig19c_q0.png"),
    ]
    paths = []
    for field, label, values, scale, name in sweeps:
        cases = [replace(sc, **{field: v}) for v in values]
        fig, ax = plt.subplots(figsize=(6, 4.5))
        ax.plot(values * scale, [bounds.q_max_confucius(c.k, c.q0, c.tau, c.lam) * MS
                                 for c in cases], label="Table 1 (Eq. 30)")
        ax.plot(values * scale, [bounds.q_max_confucius_series(c.k, c.q0, c.tau, c.lam) * MS
                                 for c in cases], label="series (Eq. 29)")
        for gain in fluid.GAINS:
            ax.plot(values * scale, [_numeric_q_max(c, gain) * MS for c in cases], "o-",
                    markersize=3, label=f"model, numerical ({gain} gain)")
        if field == "k":
            ax.set_xscale("log")
        ax.set_xlabel(label)
        ax.set_ylabel("Confucius q_max [ms]")
        ax.set_title(f"q_max vs {label.split(' ')[0]}")
        ax.legend(fontsize=8)
        paths.append(_save(fig, out, name))
    return paths


def _f1_grid(params: AggressivenessParams, points: int) -> np.ndarray:
    low = np.ceil(percca.lowest_f1(params.training_g()) * 100) / 100
    return np.linspace(max(low, 0.01), 1.0, points)


def _curve(params, counts, f1s, model, arrange=lambda a: a, optimise=False) -> list:
    g = params.training_g()
    return [percca.evaluate(arrange(percca.flow_distribution(f1, g, counts)), params, counts,
                            "", model, optimise).min_thr for f1 in f1s]


def _min_thr_figure(params, counts, title, name, out, curves, points) -> Path:
    f1s = _f1_grid(params, points)
    fig, ax = plt.subplots(figsize=(6, 4.5))
    for label, kwargs in curves:
        ax.plot(f1s, _curve(params, counts, f1s, **kwargs), label=label)
    ax.set_xlabel("classifier accuracy F1")
    ax.set_ylabel("MinThr (normalised minimum CCA throughput)")
    ax.set_ylim(0, 1.05)
    ax.set_title(title)
    ax.legend(fontsize=8)
    return _save(fig, out, name)


def _base_curves() -> list:
    return [("shared buffer, advanced", dict(model="advanced", arrange=percca.shared_buffer)),
            ("shared buffer, simple", dict(model="simple", arrange=percca.shared_buffer)),
            ("per-CCA, simple model", dict(model="simple")),
            ("per-CCA, advanced model", dict(model="advanced"))]


def percca_figures(params: AggressivenessParams, out: Path, points: int = 60) -> list:
    """Model curves of paper 003 Figs. 2, 3a, 3b, 5, 6 (MinThr against F1) and 4a, 4b
    (MinThr against the classifiers' interval)."""
    order = params.ccas

    def counts(scenario):
        chosen = presets.scenario(scenario)
        return [chosen.get(c, 0) for c in order]

    paths = [
        _min_thr_figure(params, counts("equal"), "Fig. 2: 50 flows per CCA", "fig2.png",
                        out, _base_curves(), points),
        _min_thr_figure(params, counts("few-sharks"), "Fig. 3a: 130 Reno, 10 CUBIC, 10 BBR",
                        "fig3a.png", out, _base_curves(), points),
        _min_thr_figure(params, counts("many-sharks"), "Fig. 3b: 10 Reno, 10 CUBIC, 130 BBR",
                        "fig3b.png", out, _base_curves(), points),
    ]
    merged = [[params.index("reno"), params.index("cubic")], [params.index("bbr")]]
    paths.append(_min_thr_figure(
        params, counts("equal"), "Fig. 5: per-CCA-class queues (Reno+CUBIC | BBR)",
        "fig5.png", out,
        [("shared buffer, advanced", dict(model="advanced", arrange=percca.shared_buffer)),
         ("per-class, simple", dict(model="simple",
                                    arrange=lambda a: percca.merge_queues(a, merged))),
         ("per-class, advanced", dict(model="advanced",
                                      arrange=lambda a: percca.merge_queues(a, merged))),
         ("per-CCA, advanced", dict(model="advanced"))], points))
    paths.append(_min_thr_figure(
        params, counts("equal"), "Fig. 6: optimised service rates", "fig6.png", out,
        [("shared buffer, advanced", dict(model="advanced", arrange=percca.shared_buffer)),
         ("per-CCA, advanced, rates ∝ flows", dict(model="advanced")),
         ("per-CCA, advanced, optimised rates", dict(model="advanced", optimise=True))],
        points))
    for classifier, name in (("deepcci", "fig4a.png"), ("dragonfly", "fig4b.png")):
        paths.append(_classifier_figure(params, counts("equal"), classifier, name, out))
    return paths


def _classifier_figure(params, counts, classifier, name, out) -> Path:
    intervals = sorted(presets.CLASSIFIERS[classifier])
    shared = percca.shared_buffer(percca.flow_distribution(1.0, params.training_g(), counts))
    fig, ax = plt.subplots(figsize=(6, 4.5))
    for model in percca.MODELS:
        values = []
        for interval in intervals:
            acc = presets.classifier_accuracy(classifier, interval)
            a = percca.flow_distribution_from_accuracy([acc[c] for c in params.ccas], counts)
            values.append(percca.evaluate(a, params, counts, "", model).min_thr)
        ax.plot(intervals, values, "o-", label=f"per-CCA, {model} model")
        ax.axhline(percca.evaluate(shared, params, counts, "", model).min_thr, linestyle="--",
                   color="grey" if model == "simple" else "black",
                   label=f"shared buffer, {model} model")
    ax.set_xlabel("classification interval [s]")
    ax.set_ylabel("MinThr")
    ax.set_ylim(0, 1.05)
    ax.set_title(f"Fig. 4: {classifier} accuracy (paper 003 Table I)")
    ax.legend(fontsize=8)
    return _save(fig, out, name)
