# SPDX-License-Identifier: MIT
"""The evaluation's figures from measured data (matplotlib, files only).

- `timeline`: frame delay around one page load, one line per scheduler (paper 000 Fig. 2),
  and under it the RT flow's target rate and, where the qdisc exposes its flows, its weight
  share, queue growth, queue and head-of-line wait;
- `tradeoff`: mean stall duration against mean PLT per scheduler (Fig. 10);
- `site_counts`: loads per 1000 that stall the RT flow, and with PLT > 2 s (Fig. 11);
- `cdfs`: per-load stall, PLT degradation against FQ, max frame delay, all frame delays (Fig. 12);
- `sweeps`: stall, PLT against fq (with Table 1's theory) and JFI over the number and size
  of Web flows (Figs. 14, 15 and 25, sweeps.py);
- `promise_plane`: each scheduler's stall removed against FQ-CoDel over its PLT against fq,
  one panel per scenario and controller, the issue's targets shaded (Fig. 10's trade in
  the promise's own terms, promise.py);
- `heat_maps`: a value over two axes, one map per panel (seed 002 Fig. 4, delay_map.py);
- `four_cca`: four flows with four CCAs — delay and throughput over time, Confucius's
  classes over time, JFI per scheduler (Fig. 13, §7.4).
"""

from __future__ import annotations

import math
from pathlib import Path

from confucius import metrics
from confucius.experiment.schedulers import SCHEDULERS

from .data import PageResult, RtView, TimedRun
from .summary import BASELINE

THRESHOLD_MS = metrics.STALL_THRESHOLD_S * 1e3


def _pyplot():
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    return plt


def _save(fig, out: Path) -> Path:
    out.parent.mkdir(parents=True, exist_ok=True)
    if fig.get_layout_engine() is None:   # a figure laid out as it draws (_panels) needs no second pass
        fig.tight_layout()
    fig.savefig(out, dpi=130)
    _pyplot().close(fig)
    return out


def _panels(count: int, columns: int, width: float, height: float):
    """A figure of `count` panels, at most `columns` a row, each `width` × `height` inches,
    laid out as it draws (room for a shared colour bar); the grid's unused panels hidden.
    The figure and its panels in order."""
    columns = max(1, min(count, columns))
    rows = max(1, math.ceil(count / columns))
    fig, axes = _pyplot().subplots(rows, columns, figsize=(width * columns, height * rows), squeeze=False,
                                   layout="constrained")
    for ax in axes.flat[count:]:
        ax.set_visible(False)
    return fig, axes


def _plain_numbers():
    from matplotlib.ticker import FuncFormatter
    return FuncFormatter(lambda value, _: f"{value:g}")


def _no_labels():
    from matplotlib.ticker import NullFormatter
    return NullFormatter()


def _colour(scheduler_base: str) -> str:
    """Confucius red, label-based schedulers green, the others blue (as paper 000 Fig. 10)."""
    if SCHEDULERS[scheduler_base].kind == "confucius":
        return "tab:red"
    return "tab:green" if SCHEDULERS[scheduler_base].rt_weight is not None else "tab:blue"


def _by(results: list[PageResult], attribute: str) -> dict[str, list[PageResult]]:
    groups: dict[str, list[PageResult]] = {}
    for r in results:
        groups.setdefault(getattr(r, attribute), []).append(r)
    return groups


# --------------------------------------------------------------------------- Fig. 2

def timeline(series: list[tuple[PageResult, list, RtView]], out: Path, title: str, before_s: float = 3.0) -> Path:
    """`series`: (page result, its RT frames from before the load to the window's end, the
    RT flow as its sender and the qdisc saw it). Under the frame delay, on the same time
    axis: the sender's target rate, and for schedulers that expose their flows (confucius)
    the RT flow's weight share, its queue's growth, its queue and its head packet's wait."""
    plt = _pyplot()
    panels = [_target_panel]
    if any(view.qdisc for _, _, view in series):
        panels += [_share_panel, _growth_panel, _queue_panel, _sojourn_panel]
    fig, axes = plt.subplots(1 + len(panels), 1, sharex=True, squeeze=False, figsize=(9, 4.2 + 1.6 * len(panels)),
                             gridspec_kw={"height_ratios": [2.6] + [1] * len(panels)})
    axes = axes[:, 0]
    colours = {}
    for result, frames, view in series:
        colours[result.scheduler] = _frame_delay_panel(axes[0], result, frames).get_color()
        for ax, panel in zip(axes[1:], panels):
            panel(ax, result, view, colours[result.scheduler])
    # After every series: a limit set earlier stops the axis from following later series.
    for ax, panel in zip(axes[1:], panels):
        ax.set_ylim(*_PANEL_YLIM.get(panel, (None, None)))
    top = max([THRESHOLD_MS * 2] + [d for _, frames, _ in series for d in _delays(frames) if not math.isnan(d)])
    for result, frames, _ in series:
        lost = [_since(result, f.capture_ns) for f in frames if not f.complete]
        axes[0].plot(lost, [top] * len(lost), "x", color=colours[result.scheduler], markersize=4)
    axes[0].axhline(THRESHOLD_MS, color="black", linestyle="--", linewidth=1, label="stall threshold (190 ms)")
    axes[0].set_ylabel("frame delay (ms)")
    axes[0].set_title(title)
    axes[0].legend(fontsize=8, loc="upper right")
    axes[0].set_ylim(bottom=0)
    for ax in axes:
        ax.axvline(0, color="grey", linewidth=0.8)
        ax.grid(alpha=0.3)
    axes[-1].set_xlim(-before_s, None)
    axes[-1].set_xlabel("time since the page load started (s)")
    return _save(fig, out)


def _since(result: PageResult, time_ns: int) -> float:
    return (time_ns - result.load_start_ns) / 1e9


def _delays(frames: list) -> list[float]:
    return [f.delay_ms if f.complete else math.nan for f in frames]


def _frame_delay_panel(ax, result: PageResult, frames: list):
    label = (f"{result.scheduler}: stall {result.stall_s:.2f} s, max {metrics.max_delay_ms(frames):.0f} ms, "
             f"PLT {result.plt_s:.2f} s" if result.plt_s else f"{result.scheduler}")
    line, = ax.plot([_since(result, f.capture_ns) for f in frames], _delays(frames), linewidth=1.1, label=label)
    return line


def _target_panel(ax, result: PageResult, view: RtView, color: str) -> None:
    ax.plot([_since(result, t) for t, _ in view.targets], [bps / 1e6 for _, bps in view.targets],
            color=color, linewidth=1)
    ax.set_ylabel("sender's target\n(Mbit/s)", fontsize=8)


def _qdisc_line(ax, result: PageResult, view: RtView, color: str, value) -> None:
    ax.plot([_since(result, q.time_ns) for q in view.qdisc], [value(q) for q in view.qdisc], color=color, linewidth=1)


def _share_panel(ax, result: PageResult, view: RtView, color: str) -> None:
    _qdisc_line(ax, result, view, color, lambda q: q.weight_share)
    ax.set_ylabel("RT weight share\n(of backlogged)", fontsize=8)


def _growth_panel(ax, result: PageResult, view: RtView, color: str) -> None:
    growth = view.queue_growth_bps()
    ax.plot([_since(result, t) for t, _ in growth], [bps / 1e6 for _, bps in growth], color=color, linewidth=0.8)
    ax.axhline(0, color="black", linewidth=0.6)
    ax.set_ylabel("RT queue growth\n(arrivals − service,\nMbit/s)", fontsize=8)


def _queue_panel(ax, result: PageResult, view: RtView, color: str) -> None:
    _qdisc_line(ax, result, view, color, lambda q: q.bytes / 1e3)
    ax.set_ylabel("RT queue\n(KB)", fontsize=8)


def _sojourn_panel(ax, result: PageResult, view: RtView, color: str) -> None:
    _qdisc_line(ax, result, view, color, lambda q: q.sojourn_ms)
    ax.set_ylabel("RT head packet's\nwait (ms)", fontsize=8)


# The lower panels' y limits (the queue's growth goes below zero).
_PANEL_YLIM = {_target_panel: (0, None), _share_panel: (0, 1.05), _queue_panel: (0, None), _sojourn_panel: (0, None)}


# --------------------------------------------------------------------------- Fig. 10

def _pareto(points: list[tuple[float, float]]) -> list[tuple[float, float]]:
    """Points no other point beats on both axes (lower is better), by PLT."""
    front = []
    for x, y in sorted(points):
        if not front or y < front[-1][1]:
            front.append((x, y))
    return front


def tradeoff(results: list[PageResult], out: Path) -> Path:
    plt = _pyplot()
    controllers = sorted(_by(results, "controller"))
    fig, axes = plt.subplots(1, len(controllers), figsize=(4.6 * len(controllers), 4), squeeze=False)
    for ax, controller in zip(axes[0], controllers):
        unlabelled = []
        for scheduler, loads in sorted(_by([r for r in results if r.controller == controller], "scheduler").items()):
            base = loads[0].scheduler_base
            x, y = metrics.mean(r.plt_s for r in loads), metrics.mean(r.stall_s for r in loads) * 1e3
            ax.scatter([x], [y], color=_colour(base), s=36, zorder=3)
            ax.annotate(scheduler, (x, y), textcoords="offset points", xytext=(4, 4), fontsize=8)
            if SCHEDULERS[base].rt_weight is None and SCHEDULERS[base].kind != "confucius":
                unlabelled.append((x, y))
        front = _pareto(unlabelled)
        if len(front) > 1:
            ax.plot(*zip(*front), linestyle="--", color="tab:blue", linewidth=1)
        ax.set_title(f"RT flow: {controller}")
        ax.set_ylim(bottom=0)
        ax.set_xlabel("mean page load time (s)")
        ax.set_ylabel("mean stall duration per load (ms)")
        ax.grid(alpha=0.3)
    return _save(fig, out)


# --------------------------------------------------------------------------- Fig. 11 (paper 002: Fig. 12)

def site_counts(results: list[PageResult], out: Path) -> Path:
    """Per controller and scheduler, loads per 1000 that stall the RT flow and loads with
    PLT > 2 s (or failed), as bars (paper 000 Fig. 11)."""
    plt = _pyplot()
    controllers = sorted(_by(results, "controller"))
    fig, axes = plt.subplots(1, 2, figsize=(11, 4))
    panels = (("loads with a stall (per 1000)", lambda r: metrics.stalled(r.stall_s)),
              ("loads with PLT > 2 s (per 1000)", lambda r: metrics.long_plt(r.plt_s)))
    schedulers = sorted(_by(results, "scheduler"))
    width = 0.8 / max(len(schedulers), 1)
    for ax, (label, flag) in zip(axes, panels):
        for n, scheduler in enumerate(schedulers):
            loads = [r for r in results if r.scheduler == scheduler]
            counts = [metrics.per_thousand(flag(r) for r in loads if r.controller == c) for c in controllers]
            bars = ax.bar([i + n * width for i in range(len(controllers))], counts, width, label=scheduler)
            ax.bar_label(bars, fmt="%.0f", fontsize=7)
        ax.set_xticks([i + width * (len(schedulers) - 1) / 2 for i in range(len(controllers))],
                      [f"RT flow: {c}" for c in controllers])
        ax.set_ylabel(label)
        ax.grid(alpha=0.3, axis="y")
    axes[0].legend(fontsize=8)
    return _save(fig, out)


# --------------------------------------------------------------------------- Fig. 12

def _cdf(ax, values: list[float], label: str) -> None:
    values = sorted(v for v in values if v is not None and not math.isnan(v))
    if values:
        ax.step([values[0], *values], [0.0, *((i + 1) / len(values) for i in range(len(values)))],
                where="post", label=label)


def cdfs(results: list[PageResult], controller: str, out: Path) -> Path:
    plt = _pyplot()
    mine = [r for r in results if r.controller == controller]
    baseline = {r.pair_key: r.plt_s for r in mine if r.scheduler == BASELINE}
    fig, axes = plt.subplots(1, 4, figsize=(17, 3.8))
    for scheduler, loads in sorted(_by(mine, "scheduler").items()):
        _cdf(axes[0], [r.stall_s * 1e3 for r in loads], scheduler)
        _cdf(axes[1], [r.plt_s - baseline[r.pair_key] for r in loads
                       if r.plt_s is not None and baseline.get(r.pair_key) is not None], scheduler)
        _cdf(axes[2], [r.max_delay_ms for r in loads], scheduler)
        _cdf(axes[3], [d for r in loads for d in r.delays_ms], scheduler)
    labels = ("stall duration per load (ms)", f"PLT - PLT under {BASELINE} (s)",
              "max frame delay per load (ms)", "frame delay during loads (ms)")
    for ax, label in zip(axes, labels):
        ax.set_xlabel(label)
        ax.set_ylabel("CDF")
        ax.grid(alpha=0.3)
    for ax in (axes[2], axes[3]):
        ax.axvline(THRESHOLD_MS, color="black", linestyle="--", linewidth=0.8)
    axes[3].set_xscale("log")
    axes[3].xaxis.set_major_formatter(_plain_numbers())
    axes[3].xaxis.set_minor_formatter(_no_labels())
    axes[0].legend(fontsize=8)
    fig.suptitle(f"RT flow: {controller}")
    return _save(fig, out)


# --------------------------------------------------------------------------- Fig. 14/15

def sweeps(points, out_dir: Path) -> list[Path]:
    """Per scenario, controller and sweep with two points or more (sweeps.SweepPoint): the
    stall, the PLT against fq (s) and the JFI over the number or the size of the Web flows
    (paper 000 Figs. 14, 15 and 25), a line per scheduler, and the seed's theory for the
    PLT dashed (Table 1's bound on the papers' schedule)."""
    from .sweeps import theory_degradation_s

    groups: dict[tuple[str, str, str], list] = {}
    for p in points:
        groups.setdefault((p.scenario, p.controller, p.swept), []).append(p)
    made = []
    for (scenario, controller, swept), found in groups.items():
        def x(p):
            return p.flows if swept == "flows" else p.size_bytes

        xs_all = sorted({x(p) for p in found})
        if len(xs_all) < 2:
            continue
        fixed = f"{found[0].size_bytes} B each" if swept == "flows" else f"{found[0].flows} flows"
        fig, axes = _pyplot().subplots(1, 3, figsize=(14, 3.8))
        for scheduler in dict.fromkeys(p.scheduler for p in found):
            line = sorted((p for p in found if p.scheduler == scheduler), key=x)
            axes[0].plot([x(p) for p in line], [p.stall_s * 1e3 for p in line], marker="o", label=scheduler)
            axes[1].plot([x(p) for p in line], [p.degradation_s for p in line], marker="o", label=scheduler)
            axes[2].plot([x(p) for p in line], [p.jfi for p in line], marker="o", label=scheduler)
        axes[1].axhline(theory_degradation_s(), color="k", linestyle="--", linewidth=1,
                        label="Table 1: log2(e)/λ, the papers' schedule")
        axes[0].set_ylabel("stall duration (ms, mean per load)")
        axes[1].set_ylabel(f"PLT − PLT under {BASELINE} (s)")
        axes[2].set_ylabel("JFI of the page's flows and the RT flow")
        for ax in axes:
            ax.set_xlabel(f"number of Web flows ({fixed})" if swept == "flows"
                          else f"size of each Web flow (bytes, {fixed})")
            ax.grid(alpha=0.3)
            if swept == "sizes":
                ax.set_xscale("log")
        axes[0].legend(fontsize=8)
        axes[1].legend(fontsize=7, handles=axes[1].get_lines()[-1:])
        fig.suptitle(f"{scenario}, RT flow {controller} — paper 000 Fig. {14 if swept == 'flows' else 15}"
                     f"{' and 25' if swept == 'flows' else ''}")
        made.append(_save(fig, out_dir / f"{scenario}-{swept}-{controller}.png"))
    return made


# --------------------------------------------------------------------------- Fig. 13

def four_cca(runs: list[TimedRun], out: Path, detail: str = "confucius-class") -> Path:
    plt = _pyplot()
    shown = next((r for r in runs if r.scheduler == detail), runs[0])
    fig, axes = plt.subplots(1, 3, figsize=(17, 4))
    for label, frames in shown.rt.items():
        t = [(f.capture_ns - shown.start_ns) / 1e9 for f in frames]
        axes[0].plot(t, [f.delay_ms if f.complete else math.nan for f in frames], linewidth=0.8,
                     label=f"{label} frame delay")
    axes[0].axhline(THRESHOLD_MS, color="black", linestyle="--", linewidth=0.8)
    axes[0].set_xlabel("time (s)")
    axes[0].set_ylabel("frame delay (ms)")
    axes[0].set_title(f"{shown.scheduler}: RT flows' frame delay")
    axes[0].legend(fontsize=8)
    if shown.classes:
        t = [(time - shown.start_ns) / 1e9 for time, _ in shown.classes]
        width = max(len(c) for _, c in shown.classes)
        stacks = [[c[i] if i < len(c) else 0 for _, c in shown.classes] for i in range(width)]
        axes[1].stackplot(t, stacks, labels=[f"class {i + 1}" for i in range(width)], step="post")
        axes[1].legend(fontsize=8)
    axes[1].set_xlabel("time (s)")
    axes[1].set_ylabel("flows in each class")
    axes[1].set_title(f"{shown.scheduler}: occupancy classes")
    names = [r.scheduler for r in runs]
    jfis = [metrics.jfi(list(r.throughputs_bps().values())) for r in runs]
    axes[2].bar(names, jfis, color=["tab:red" if "confucius" in n else "tab:blue" for n in names])
    axes[2].set_ylim(0, 1.05)
    axes[2].set_ylabel("JFI of the four flows' throughputs")
    axes[2].tick_params(axis="x", rotation=30)
    axes[2].set_title("fairness")
    return _save(fig, out)


# --------------------------------------------------------------------------- seed 002 Fig. 4

def heat_maps(panels: dict[str, dict[tuple[float, float], float]], out: Path, across: str, up: str,
              what: str) -> Path:
    """One map per panel of {(x, y): value}, every panel on the same axes and colour scale
    (logarithmic: delays span tens of ms to seconds), each square labelled with its value;
    squares without a value are left blank."""
    import numpy as np
    from matplotlib.colors import LogNorm

    xs = sorted({x for cells in panels.values() for x, _ in cells})
    ys = sorted({y for cells in panels.values() for _, y in cells})
    values = [v for cells in panels.values() for v in cells.values() if v > 0]
    norm = LogNorm(vmin=min(values, default=1), vmax=max(values, default=10))
    fig, axes = _panels(len(panels), 3, 4.2, 3.6)
    for ax, (title, cells) in zip(axes.flat, panels.items()):
        grid = np.array([[cells.get((x, y), math.nan) for x in xs] for y in ys])
        image = ax.imshow(grid, origin="lower", cmap="magma_r", norm=norm, aspect="auto")
        for (row, column), value in np.ndenumerate(grid):
            if not math.isnan(value):
                ax.text(column, row, f"{value:.0f}", ha="center", va="center", fontsize=7,
                        color="white" if norm(value) > 0.6 else "black")
        ax.set_xticks(range(len(xs)), [f"{x:g}" for x in xs])
        ax.set_yticks(range(len(ys)), [f"{y:g}" for y in ys])
        ax.set_xlabel(across)
        ax.set_ylabel(up)
        ax.set_title(title, fontsize=9)
    bar = fig.colorbar(image, ax=axes.ravel().tolist(), label=what, shrink=0.8)
    bar.ax.yaxis.set_major_formatter(_plain_numbers())
    bar.ax.yaxis.set_minor_formatter(_plain_numbers())
    return _save(fig, out)


# --------------------------------------------------------------------------- the promise's plane

def flow_counts(cells, out: Path) -> Path:
    """Seed 000 Fig. 29's form, per scenario and controller family (rt_flows.FlowCountCell):
    the stall per RT flow (left) and the PLT against fq with its interval (right) over the
    number of RT flows, a line per scheduler."""
    families = list(dict.fromkeys((c.scenario, c.controller) for c in cells))
    fig, axes = _panels(2 * len(families), 2, 4.6, 3.4)
    for (scenario, controller), (stall_ax, plt_ax) in zip(families, axes.reshape(-1, 2)):
        mine = [c for c in cells if (c.scenario, c.controller) == (scenario, controller)]
        for scheduler in dict.fromkeys(c.scheduler for c in mine):
            line = sorted((c for c in mine if c.scheduler == scheduler), key=lambda c: c.flows)
            xs = [c.flows for c in line]
            stall_ax.plot(xs, [c.stall_per_flow_s * 1e3 for c in line], marker="o", label=scheduler)
            plt_ax.errorbar(xs, [c.plt_vs_fq * 100 for c in line],
                            yerr=[[(c.plt_vs_fq - c.plt_vs_fq_low) * 100 for c in line],
                                  [(c.plt_vs_fq_high - c.plt_vs_fq) * 100 for c in line]],
                            marker="o", capsize=2, label=scheduler)
        stall_ax.set_ylabel("stall per RT flow (ms, mean per load)")
        plt_ax.set_ylabel("PLT against fq (%)")
        for ax in (stall_ax, plt_ax):
            ax.set_xticks(sorted({c.flows for c in mine}))
            ax.set_xlabel(f"{controller} flows side by side")
            ax.set_title(f"{scenario}, {controller}", fontsize=9)
            ax.grid(alpha=0.3)
        stall_ax.legend(fontsize=7)
    return _save(fig, out)


def promise_plane(rows, out: Path, removed_target: float, plt_target: float) -> Path:
    """Per scenario and controller (promise.PromiseRow), a point per scheduler (the
    default red, the papers' schedule orange, others purple): the PLT against fq across,
    the share of FQ-CoDel's stall removed up, with both intervals; the corner where both
    targets hold shaded. Where fq_codel never stalled there is nothing to remove and the
    scheduler is left out of that panel."""
    panels: dict[tuple[str, str], list] = {}
    for r in rows:
        if not math.isnan(r.removed_vs_codel.value):
            panels.setdefault((r.scenario, r.controller), []).append(r)
    fig, axes = _panels(len(panels), 4, 4.3, 3.6)
    for ax, ((scenario, controller), found) in zip(axes.flat, panels.items()):
        ax.fill_between([-100, plt_target * 100], removed_target * 100, 105, color="tab:green", alpha=0.08)
        ax.axhline(removed_target * 100, color="tab:green", linestyle="--", linewidth=0.8)
        ax.axvline(plt_target * 100, color="tab:green", linestyle="--", linewidth=0.8)
        for r in found:
            x, y = r.plt_vs_fq.value * 100, r.removed_vs_codel.value * 100
            colour = {"confucius": "tab:red", "confucius-fixed": "tab:orange"}.get(r.scheduler, "tab:purple")
            ax.errorbar([x], [y], xerr=[[x - r.plt_vs_fq.low * 100], [r.plt_vs_fq.high * 100 - x]],
                        yerr=[[y - r.removed_vs_codel.low * 100], [r.removed_vs_codel.high * 100 - y]],
                        fmt="o", color=colour, markersize=4, elinewidth=0.6, capsize=2)
            ax.annotate(r.scheduler, (x, y), textcoords="offset points", xytext=(4, 3), fontsize=7)
        ax.set_xlim(left=min(-1.0, *(r.plt_vs_fq.value * 100 - 1 for r in found)))
        ax.set_ylim(top=105)
        ax.set_title(f"{scenario}, {controller}", fontsize=9)
        ax.set_xlabel("PLT against fq (%)")
        ax.set_ylabel("FQ-CoDel's stall removed (%)")
        ax.grid(alpha=0.3)
    return _save(fig, out)
