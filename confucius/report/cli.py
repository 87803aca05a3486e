# SPDX-License-Identifier: MIT
"""`confucius report`: tables and figures from the lab's results database."""

from __future__ import annotations

import json
import math
import sys
from dataclasses import asdict
from pathlib import Path
from typing import List, Optional

import typer
from rich.console import Console
from rich.table import Table

from confucius.experiment import db_runs
from confucius.experiment.db import DEFAULT_DB, DatabaseError

from . import data, summary
from .data import ReportError

app = typer.Typer(no_args_is_help=True, add_completion=False,
                  help="Metrics, tables and plots from the lab's results database.")
# Wide enough for the comparison table when the output is a file or a pipe (make demo's log).
console = Console(width=None if Console().is_terminal else 170)
notes = Console(stderr=True, width=None if Console(stderr=True).is_terminal else 170)

_DB = typer.Option(DEFAULT_DB, "--db", help="Results database.")
_SCENARIO = typer.Option(None, "--scenario", help="Only this scenario (by name) \\[default: all].")
_MIN_START = typer.Option(None, "--min-start", min=0.0, max=1.0,
                          help="Leave out loads whose RT flow went into the page load below this "
                               "fraction of the link rate (its warm-up settled low).")
_MAX_HELD = typer.Option(None, "--max-held", help="Leave out loads whose paced RT sender (gcc) held more "
                                                  "than this many ms of media: it lacked the CPU.")
_COMMON = typer.Option(False, "--common", help="Only pages measured under every scheduler shown (the same "
                                               "pages for each controller).")
_PAGES_OF = typer.Option(None, "--pages-of", help="Only pages this other database measured too (same scenario, "
                                                  "controller, repetition and page): the lab beside the simulator.")


def _fail(message: str) -> None:
    console.print(f"[red]error:[/red] {message}")
    raise typer.Exit(2)


def _open(db: Path):
    try:
        return data.open_db(db)
    except (ReportError, DatabaseError) as err:
        _fail(str(err))


def _left_out(results: list[data.PageResult], kept: list[data.PageResult], why: str) -> list[data.PageResult]:
    """`kept`, after saying how many of `results` it leaves out and why."""
    console.print(f"left out {len(results) - len(kept)} of {len(results)} loads {why}")
    return kept


def _filtered(results: list[data.PageResult], max_held: Optional[float], min_start: Optional[float],
              common: bool, pages_of: Optional[Path]) -> list[data.PageResult]:
    """The loads the options keep, saying what each filter left out; `common` last, so that
    every scheduler keeps the same pages."""
    if pages_of is not None:
        other = {r.pair_key for r in _pages(pages_of, None)}
        results = _left_out(results, [r for r in results if r.pair_key in other], f"of pages {pages_of} lacks")
    if max_held is not None:
        results = _left_out(results, [r for r in results if not summary.starved(r, max_held)],
                            f"whose paced RT sender held more than {max_held:g} ms of media")
    if min_start is not None:
        results = _left_out(results, [r for r in results if not summary.started_low(r, min_start)],
                            f"whose RT flow started below {min_start:g} of the link rate")
    if common:
        results = _left_out(results, summary.common_loads(results), "of pages that not every scheduler met")
    return results


def _split_names(values: Optional[List[str]]) -> list[str]:
    """Names given as a repeatable option, each value possibly comma-separated."""
    return [n for value in values or [] for n in value.split(",")]


def _baselines(results: list[data.PageResult], names: list[str]) -> tuple[str, ...]:
    """The further baselines, each of which must have loads among those shown."""
    shown = {r.scheduler for r in results}
    for name in names:
        if name not in shown:
            _fail(f"--also-against {name}: no loads of {name} among those shown "
                  f"({', '.join(sorted(shown))})")
    return tuple(names)


def _table(title: str, columns: tuple[str, ...], left: tuple[str, ...], **options) -> Table:
    """A report's table: the columns named in `left` are text, the rest figures."""
    table = Table(title=title)
    for column in columns:
        table.add_column(column, justify="left" if column in left else "right", **options.get(column, {}))
    return table


def _chosen(results: list[data.PageResult], schedulers: Optional[List[str]]) -> tuple[list[data.PageResult], list[str]]:
    """The loads of the schedulers `-s` names (repeatable or comma-separated), and their
    order for the rows; every load and no order without it."""
    order = _split_names(schedulers)
    return ([r for r in results if r.scheduler in order] if order else results), order


def _pages(db: Path, scenario: Optional[str]) -> list[data.PageResult]:
    with _open(db) as database:
        results = data.page_results(database, scenario)
        if not results:
            known = ", ".join(database.scenario_names()) or "none"
            _fail(f"no valid page loads{f' for scenario {scenario}' if scenario else ''} in {db} "
                  f"(scenarios: {known})")
        _note_mixed(data.mixed_programs(database, results))
    return results


def _note_mixed(mixed: dict[tuple, dict[str, list[str]]]) -> None:
    """Name each row that pools runs of different programs (on stderr: stdout may be JSON)."""
    for cell, programs in mixed.items():
        named = "; ".join(f"{name} {', '.join(digests)}" for name, digests in programs.items())
        notes.print(f"[yellow]note:[/yellow] {' / '.join(cell)} pools runs of different programs (sha256 {named})")


def _ms(value: float) -> str:
    return summary.fmt(value, "{:.0f}")


def print_summary(rows: list[summary.SummaryRow], title: str, baseline: str,
                  also: tuple[str, ...] = ()) -> None:
    table = Table(title=title)
    columns = ("scheduler", "RT", "loads", "stall s", "w/ stall", "max ms", "p99 ms", "lost",
               "RT Mb/s", "PLT s", "ΔPLT s", "ΔPLT", *(f"ΔPLT {name}" for name in also), "PLT>2s",
               "JFI", "held ms", "rewarm")
    for column in columns:
        table.add_column(column, justify="left" if column in ("scheduler", "RT") else "right")
    for r in rows:
        table.add_row(r.scheduler, r.controller, str(r.loads), summary.fmt(r.stall_s, "{:.3f}"),
                      summary.fmt(r.stall_share, "{:.0%}"), _ms(r.max_delay_ms), _ms(r.p99_delay_ms),
                      summary.fmt(r.lost_share, "{:.1%}"), summary.fmt(r.rt_mbps, "{:.1f}"),
                      summary.fmt(r.plt_s, "{:.2f}"), summary.fmt(r.degradation_s, "{:+.2f}"),
                      summary.fmt(r.degradation, "{:+.1%}"),
                      *(summary.fmt(r.also[name], "{:+.1%}") for name in also),
                      summary.fmt(r.long_plt_share, "{:.0%}"),
                      summary.fmt(r.jfi, "{:.2f}"), _ms(r.sender_backlog_ms), str(r.rewarmed))
    console.print(table)
    against = "".join(f"; ΔPLT {name}: the same against {name}'s total" for name in also)
    console.print(f"stall: mean stall duration per load (frame delay > 190 ms); w/ stall: loads with any; "
                  f"max: mean of each load's largest frame delay; p99: over all frames of the loads; lost: "
                  f"frames that never arrived whole; RT: RT goodput; ΔPLT: PLT − PLT under {baseline} for "
                  f"the same pages (s, and relative to {baseline}'s total){against}; held: the RT sender's "
                  f"largest backlog per load (ms at its target; for GCC, large means the sender lacked CPU); "
                  f"rewarm: loads whose RT flow settled low and was warmed up again.")


def _target_value(value: float, unit: str) -> str:
    return {"×": "{:.2f}×", "%": "{:.1%}", "±%": "{:+.1%}"}[unit].format(value)


def print_targets(checks: list[summary.TargetCheck]) -> None:
    """The issue's targets for confucius, per controller: measured, 95 % interval over pages,
    met or not."""
    for controller in sorted({c.controller for c in checks}):
        lines = [f"{c.name}: {_target_value(c.value, c.unit)} "
                 f"(95% CI {_target_value(c.low, c.unit)}–{_target_value(c.high, c.unit)}; "
                 f"target ≤ {_target_value(c.bound, c.unit)}) {'met' if c.met else 'missed'}"
                 for c in checks if c.controller == controller]
        console.print(f"[bold]confucius, RT {controller}[/bold]: " + "; ".join(lines))


@app.command("summary")
def summary_command(
    db: Path = _DB, scenario: Optional[str] = _SCENARIO,
    baseline: str = typer.Option(summary.BASELINE, help="Scheduler PLT degradation is measured against."),
    also_against: Optional[List[str]] = typer.Option(
        None, "--also-against", help="Further schedulers to give the PLT degradation against (a column each)."),
    schedulers: Optional[List[str]] = typer.Option(None, "--schedulers", "-s", help="Row order (and filter)."),
    targets: bool = typer.Option(False, help="Also check the issue's targets for confucius."),
    json_out: Optional[Path] = typer.Option(None, "--json", help="Also write the rows as JSON."),
    max_held: Optional[float] = _MAX_HELD, min_start: Optional[float] = _MIN_START, common: bool = _COMMON,
    pages_of: Optional[Path] = _PAGES_OF,
):
    """Per scheduler and RT controller: stall, frame delay, RT throughput, PLT, degradation, JFI
    (one table per scenario)."""
    results, order = _chosen(_pages(db, scenario), schedulers)
    results = _filtered(results, max_held, min_start, common, pages_of)
    also = _baselines(results, _split_names(also_against))
    by_scenario: dict[str, list[data.PageResult]] = {}
    for r in results:
        by_scenario.setdefault(r.scenario, []).append(r)
    written = []
    with _open(db) as database:
        for name, mine in sorted(by_scenario.items()):
            rows = summary.ordered(summary.summarize(mine, baseline, also), order)
            print_summary(rows, f"{name}: page loads (means per load; p99 over all frames)", baseline, also)
            counted = data.counts(database, name)
            console.print(f"runs {counted['runs']}, page measurements {counted['pages']} (invalid ones are not "
                          f"counted: failed loads, or the VM did not get the CPU)")
            if targets:
                print_targets(summary.target_checks(mine, baseline))
            written += [{"scenario": name, **asdict(r)} for r in rows]
    if json_out:
        json_out.write_text(json.dumps(written, indent=1, default=str) + "\n")


@app.command("stalls")
def stalls_command(
    db: Path = _DB, scenario: Optional[str] = _SCENARIO,
    schedulers: Optional[List[str]] = typer.Option(None, "--schedulers", "-s", help="Row order (and filter)."),
    common: bool = _COMMON,
):
    """Where the RT flow's stalls happened, per scheduler and controller: while the page
    loaded or after its last byte, and how much of the late frames' delay the RT flow's
    queue in the qdisc explains (schedulers that expose their flows)."""
    from . import stalls

    results, order = _chosen(_pages(db, scenario), schedulers)
    results = _filtered(results, None, None, common, None)
    with _open(db) as database:
        rows = summary.ordered(stalls.stall_rows(database, results), order)
    table = _table("stalls: while the page loaded, and after it (first RT flow; means per load)",
                   ("scheduler", "RT", "loads", "during s", "after s", "loads during", "loads after", "in qdisc"),
                   ("scheduler", "RT"))
    for r in rows:
        table.add_row(r.scheduler, r.controller, str(r.loads), summary.fmt(r.during_s, "{:.3f}"),
                      summary.fmt(r.after_s, "{:.3f}"), str(r.loads_during), str(r.loads_after),
                      summary.fmt(r.queue_share, "{:.0%}"))
    console.print(table)
    console.print("during/after: stall (frame delay > 190 ms) of the frames captured before / after the page's "
                  "last byte; in qdisc: for the loads that stalled while the page loaded, the median of the RT "
                  "flow's largest head-of-line wait in the qdisc over its largest late frame's delay (the rest "
                  "waited in the sender or on the path; – where the scheduler exposes no flows).")


@app.command("timeline")
def timeline_command(
    out: Path = typer.Option(..., help="PNG file to write."),
    db: Path = _DB, scenario: Optional[str] = _SCENARIO,
    page: Optional[str] = typer.Option(None, help="Page (e.g. amazon) \\[default: the first measured]."),
    controller: Optional[str] = typer.Option(None, help="RT controller \\[default: the first measured]."),
    repetition: int = typer.Option(0, help="Which repetition."),
    before: float = typer.Option(3.0, help="Seconds shown before the load starts."),
):
    """Frame delay around one page load, one line per scheduler (paper 000 Fig. 2), over the
    RT flow's target rate and, for confucius, its weight share and queue in the qdisc."""
    from . import plots

    results = _pages(db, scenario)
    page = page or results[0].page_key
    controller = controller or results[0].controller
    chosen = [r for r in results if r.page_key == page and r.controller == controller and r.repetition == repetition]
    if not chosen:
        _fail(f"no valid load of page {page} with RT {controller} (repetition {repetition})")
    with _open(db) as database:
        series = [(r, data.frames_of_page(database, r, before), data.rt_view(database, r, before)) for r in chosen]
    path = plots.timeline(series, out, f"{page}, RT flow {controller}: frame delay around the page load",
                          before_s=before)
    console.print(f"wrote {path}")


@app.command("plots")
def plots_command(
    out: Path = typer.Option(..., help="Folder for the PNG files."),
    db: Path = _DB, scenario: Optional[str] = _SCENARIO,
    max_held: Optional[float] = _MAX_HELD, min_start: Optional[float] = _MIN_START, common: bool = _COMMON,
    pages_of: Optional[Path] = _PAGES_OF,
):
    """Trade-off (Fig. 10), CDFs (Fig. 12) and, for sweep pages, the sweeps (Figs. 14, 15, 25)."""
    from . import plots, sweeps

    results = _filtered(_pages(db, scenario), max_held, min_start, common, pages_of)
    made = [plots.tradeoff(results, out / "tradeoff.png")]
    made += [plots.cdfs(results, c, out / f"cdfs-{c}.png") for c in sorted({r.controller for r in results})]
    made += plots.sweeps(sweeps.sweep_points(results), out)
    for path in made:
        console.print(f"wrote {path}")


@app.command("papers")
def papers_command(
    db: Path = _DB, scenario: Optional[str] = _SCENARIO,
    schedulers: Optional[List[str]] = typer.Option(None, "--schedulers", "-s", help="Row order (and filter)."),
    out: Optional[Path] = typer.Option(None, help="Folder for the figures: per scenario Fig. 10 (tradeoff), "
                                                  "Fig. 11 (counts) and Fig. 12 (CDFs, one per controller)."),
    as_json: bool = typer.Option(False, "--json", help="The table as JSON."),
    common: bool = _COMMON,
):
    """The papers' evaluation (paper 000 §7.2, 002 §V-B): each figure they give for 1000
    websites (stall and PLT against FQ-CoDel and FQ, loads per 1000 with a stall or a PLT
    over 2 s, tails of stall and delay) beside ours; with --out, their Fig. 10-12 redrawn."""
    from . import papers

    results, order = _chosen(_pages(db, scenario), schedulers)
    if common:
        results = summary.common_loads(results)
    _show(papers.paper_rows(results, order), f"no valid page loads{' of ' + ', '.join(order) if order else ''} in {db}", as_json,
          summary.rows_json, _print_papers)
    if out is not None:
        for path in _paper_figures(results, out):
            print(f"wrote {path}", file=sys.stderr if as_json else sys.stdout)  # stdout stays JSON


def _paper_figures(results: list[data.PageResult], out: Path) -> list[Path]:
    """Per scenario: the trade-off (Fig. 10), the counts (Fig. 11) and the CDFs (Fig. 12)."""
    from . import plots

    made = []
    for name in sorted({r.scenario for r in results}):
        mine = [r for r in results if r.scenario == name]
        made += [plots.tradeoff(mine, out / f"{name}-fig10-tradeoff.png"),
                 plots.site_counts(mine, out / f"{name}-fig11-counts.png")]
        made += [plots.cdfs(mine, c, out / f"{name}-fig12-cdfs-{c}.png") for c in sorted({r.controller for r in mine})]
    return made


@app.command("promise")
def promise_command(
    db: Path = _DB,
    scenario: Optional[str] = typer.Option(None, "--scenario", help="Only this scenario, or every point of the "
                                                                     "grid of this name (NAME-...) \\[default: all]."),
    schedulers: Optional[List[str]] = typer.Option(None, "--schedulers", "-s", help="Row order (and filter); "
                                                                                     "fq_codel and fq are always read."),
    as_json: bool = typer.Option(False, "--json", help="The table as JSON."),
    common: bool = _COMMON,
    out: Optional[Path] = typer.Option(None, help="PNG file: each scheduler's stall removed against fq_codel "
                                                  "over its PLT against fq, a panel per scenario and controller."),
):
    """Both halves of the promise (issue 47), per scenario, controller and scheduler: the
    stall removed against fq_codel and fq, the PLT against fq and the pages with no penalty,
    with 95 % intervals over pages, and whether the targets hold (>= 60 %, >= 50 %, <= +8 %,
    >= half); the mean largest frame delay beside (seed 002 Fig. 4)."""
    from . import promise

    results = _pages_of_grid(db, scenario)
    order = _split_names(schedulers)
    if order:
        results = [r for r in results if r.scheduler in {*order, promise.CODEL, promise.FQ}]
    if common:
        results = summary.common_loads(results)
    rows = promise.promise_rows(results, order)
    _show(rows, f"no scenario in {db} has loads under fq_codel, fq and another scheduler", as_json,
          summary.rows_json, _print_promise)
    if out is not None:
        from .plots import promise_plane

        drawn = promise_plane(rows, out, promise.STALL_REMOVED_VS_CODEL, promise.PLT_VS_FQ)
        print(f"wrote {drawn}", file=sys.stderr if as_json else sys.stdout)


def _pages_of_grid(db: Path, scenario: Optional[str]) -> list[data.PageResult]:
    """The loads of a scenario by its name, or, when none is named so, of every point of
    the grid of that name (scenarios named NAME-...)."""
    if scenario is None:
        return _pages(db, None)
    with _open(db) as database:
        names = list(dict.fromkeys(row["name"] for row in database.scenario_texts()))   # as first stored
    if scenario in names:
        return _pages(db, scenario)
    points = [n for n in names if n.startswith(f"{scenario}-")]
    if not points:
        _fail(f"no scenario {scenario} (nor a grid of that name) in {db} (scenarios: {', '.join(names) or 'none'})")
    return _pages_of_names(db, points)


def _pages_of_names(db: Path, names: list[str]) -> list[data.PageResult]:
    """The loads of these scenarios (a grid's points, some perhaps not measured yet)."""
    with _open(db) as database:
        results = [r for name in names for r in data.page_results(database, name)]
        if not results:
            _fail(f"no valid page loads of {', '.join(names[:3])}{' ...' if len(names) > 3 else ''} in {db}")
        _note_mixed(data.mixed_programs(database, results))
    return results


def _print_promise(rows) -> None:
    from .promise import NO_PENALTY, PLT_VS_FQ, STALL_REMOVED_VS_CODEL, STALL_REMOVED_VS_FQ

    def share(e, signed=False):
        if math.isnan(e.value):
            return "–"
        pattern = "{:+.1f}" if signed else "{:.0f}"
        interval = "" if math.isnan(e.low) else f" ({pattern.format(e.low * 100)}…{pattern.format(e.high * 100)})"
        return f"{pattern.format(e.value * 100)}%{interval}"

    table = _table("Both halves of the promise: the stall removed against fq_codel and fq, the pages against fq",
                   ("scenario", "RT", "scheduler", "loads", "stall s / fq_codel / fq", "removed vs fq_codel",
                    "removed vs fq", "PLT vs fq", "no penalty", "median ΔPLT ms", "max delay ms", "stall", "PLT"),
                   ("scenario", "RT", "scheduler"), scenario={"no_wrap": True}, scheduler={"no_wrap": True})
    for r in rows:
        table.add_row(r.scenario, r.controller, r.scheduler, str(r.loads),
                      f"{r.stall_s:.3f} / {r.codel_stall_s:.3f} / {r.fq_stall_s:.3f}",
                      share(r.removed_vs_codel), share(r.removed_vs_fq), share(r.plt_vs_fq, signed=True),
                      share(r.no_penalty), f"{r.median_penalty_ms:+.0f}", f"{r.max_delay_ms:.0f}",
                      "yes" if r.stall_half else "no",
                      "yes" if r.plt_half else "no")
    console.print(table)
    console.print(f"stall: mean per load (frame delay > 190 ms) over the pages both measured; removed: 1 − Σstall / "
                  f"Σthe baseline's (– where the baseline never stalled); PLT vs fq: ΣPLT / Σfq's − 1; no penalty: "
                  f"pages no slower than under fq; median ΔPLT: the median page's PLT minus fq's; 95 % intervals over pages. The halves hold at removed >= "
                  f"{STALL_REMOVED_VS_CODEL:.0%} (fq_codel) and {STALL_REMOVED_VS_FQ:.0%} (fq), or no stall where "
                  f"the baseline had none; PLT <= {PLT_VS_FQ:+.0%} with >= {NO_PENALTY:.0%} of pages without a penalty.")


@app.command("delay-map")
def delay_map_command(
    scenario: Path = typer.Argument(..., help="The grid's scenario file (its points' capacities and RT caps)."),
    db: Path = _DB,
    schedulers: Optional[List[str]] = typer.Option(None, "--schedulers", "-s", help="Only these schedulers."),
    out: Optional[Path] = typer.Option(None, help="PNG file for the heat maps, one per scheduler and controller."),
    as_json: bool = typer.Option(False, "--json", help="The table as JSON."),
):
    """Seed 002 Fig. 4: per point of a grid of links and RT caps, controller and scheduler,
    the video's largest frame delay while a page loads (the mean over loads and the largest),
    over the capacity and the cap's share of it."""
    from confucius.experiment import grid
    from confucius.experiment.scenario import ScenarioError

    from . import delay_map

    try:
        points = grid.load_points(scenario)
    except ScenarioError as err:
        _fail(str(err))
    results, _ = _chosen(_pages_of_names(db, [p.name for p in points]), schedulers)
    try:
        cells = delay_map.delay_cells(points, results)
    except ReportError as err:
        _fail(str(err))
    _show(cells, f"no loads of {scenario}'s points in {db}", as_json, summary.rows_json, _print_delay_map)
    if out is not None:
        print(f"wrote {delay_map.draw(cells, out)}", file=sys.stderr if as_json else sys.stdout)


def _print_delay_map(cells) -> None:
    table = _table("The video's largest frame delay while a page loads, over capacity and cap (seed 002 Fig. 4)",
                   ("scenario", "RT", "scheduler", "capacity Mbit/s", "cap Mbit/s", "cap/capacity", "loads",
                    "max delay ms", "largest ms", "stall s"), ("scenario", "RT", "scheduler"))
    for c in cells:
        table.add_row(c.scenario, c.controller, c.scheduler, f"{c.link_bps / 1e6:g}", f"{c.rt_max_bps / 1e6:g}",
                      f"{c.share:.2f}", str(c.loads), f"{c.max_delay_ms:.0f}", f"{c.worst_ms:.0f}", f"{c.stall_s:.3f}")
    console.print(table)
    console.print("max delay: mean of each load's largest frame delay; largest: the largest of them; stall: mean "
                  "per load (frame delay > 190 ms)")


@app.command("sweeps")
def sweeps_command(
    db: Path = _DB,
    scenario: Optional[str] = _SCENARIO,
    schedulers: Optional[List[str]] = typer.Option(None, "--schedulers", "-s", help="Row order (and filter)."),
    out: Optional[Path] = typer.Option(None, help="Folder for the PNG files, one per scenario, controller and sweep."),
    as_json: bool = typer.Option(False, "--json", help="The table as JSON."),
):
    """Paper 000 Figs. 14, 15 and 25: pages of N Web flows of one size each, per controller,
    scheduler and point of the sweep, the RT flow's stall, the PLT against fq (95 % interval
    over pages) and the JFI of the page's flows and the RT flow."""
    from . import plots, sweeps

    results, order = _chosen(_pages(db, scenario), schedulers)
    points = sweeps.sweep_points(results, order)
    _show(points, f"no sweep pages (flows-N-size-B) in {db}", as_json, summary.rows_json, _print_sweeps)
    if out is not None:
        for path in plots.sweeps(points, out):
            print(f"wrote {path}", file=sys.stderr if as_json else sys.stdout)


def _interval_text(low: float, high: float, spec: str) -> str:
    """An interval as a table shows it; empty where there is none (a single page)."""
    return "" if math.isnan(low) else f"{low:{spec}} – {high:{spec}}"


def _print_sweeps(points) -> None:
    table = _table("Pages of N Web flows of one size (paper 000 Figs. 14, 15, 25)",
                   ("scenario", "RT", "sweep", "scheduler", "flows", "bytes each", "loads", "stall s", "w/ stall",
                    "PLT s", "PLT vs fq", "95% CI", "JFI"), ("scenario", "RT", "sweep", "scheduler"))
    for p in points:
        interval = _interval_text(p.plt_vs_fq_low, p.plt_vs_fq_high, "+.0%")
        table.add_row(p.scenario, p.controller, p.swept, p.scheduler, str(p.flows), str(p.size_bytes), str(p.loads),
                      f"{p.stall_s:.3f}", f"{p.stalled_share:.0%}", f"{p.plt_s:.2f}", f"{p.plt_vs_fq:+.0%}", interval,
                      f"{p.jfi:.2f}")
    console.print(table)
    console.print("sweep: flows (the number swept at the scenario's most common size) or sizes (the size swept at its "
                  "most common number); stall: mean per load (frame delay > 190 ms); PLT vs fq: Σ PLT / Σ fq's over "
                  "the same pages; JFI: of the page's connections while active and the RT flow's over the load")


@app.command("rt-flows")
def rt_flows_command(
    db: Path = _DB,
    scenario: Optional[str] = _SCENARIO,
    schedulers: Optional[List[str]] = typer.Option(None, "--schedulers", "-s", help="Row order (and filter)."),
    out: Optional[Path] = typer.Option(None, help="PNG file: stall per flow and PLT against fq over the flows."),
    as_json: bool = typer.Option(False, "--json", help="The table as JSON."),
):
    """Seed 000 Fig. 29: per controller, number of RT flows side by side and scheduler, the
    stall per RT flow, the loads with a stall and the pages' load time against fq (95 %
    interval over pages)."""
    from . import plots, rt_flows

    results, order = _chosen(_pages(db, scenario), schedulers)
    cells = rt_flows.flow_count_cells(results, order)
    _show(cells, f"no page loads in {db}", as_json, summary.rows_json, _print_rt_flows)
    if out is not None:
        print(f"wrote {plots.flow_counts(cells, out)}", file=sys.stderr if as_json else sys.stdout)


def _print_rt_flows(cells) -> None:
    table = _table("Page loads beside 1 to N RT flows (seed 000 Fig. 29)",
                   ("scenario", "RT", "flows", "scheduler", "loads", "stall/flow s", "w/ stall", "max ms", "PLT s",
                    "PLT vs fq", "95% CI"), ("scenario", "RT", "scheduler"))
    for c in cells:
        interval = _interval_text(c.plt_vs_fq_low, c.plt_vs_fq_high, "+.1%")
        table.add_row(c.scenario, c.controller, str(c.flows), c.scheduler, str(c.loads), f"{c.stall_per_flow_s:.3f}",
                      f"{c.stalled_share:.0%}", f"{c.max_delay_ms:.0f}", f"{c.plt_s:.2f}", f"{c.plt_vs_fq:+.1%}",
                      interval)
    console.print(table)
    console.print("stall/flow: each load's stall (frame delay > 190 ms) summed over its RT flows, over their number; "
                  "w/ stall: loads where any flow stalled; max: mean of each load's largest frame delay; PLT vs fq: "
                  "Σ PLT / Σ fq's over the same pages with as many flows")


# `report seeds`, the command's first name, which docs/RESULTS.md and scenarios/seeds-eval.toml still use.
app.command("seeds", help="The same as `confucius report papers`.")(papers_command)


def _print_papers(rows) -> None:
    from .papers import formatted

    for (scenario, controller) in dict.fromkeys((r.scenario, r.controller) for r in rows):
        table = Table(title=f"{scenario}, RT flow {controller}: the papers' figures (1000 websites) beside ours")
        for column in ("quantity", "scheduler", "measured", "95% CI", "loads", "paper", "where in the papers"):
            table.add_column(column, justify="right" if column in ("measured", "95% CI", "loads") else "left",
                             no_wrap=column in ("measured", "95% CI", "paper"))
        for r in rows:
            if (r.scenario, r.controller) != (scenario, controller):
                continue
            interval = "" if math.isnan(r.low) else f"{formatted(r.low, r.unit)} – {formatted(r.high, r.unit)}"
            table.add_row(r.quantity, r.scheduler, formatted(r.measured, r.unit), interval, str(r.loads), r.paper,
                          r.source)
        console.print(table)
    console.print("The papers' figures are Copa on their cellular traces C1 (GCC \"similar\"); the reductions "
                  "against fq_codel span their traces and CCAs. Their Confucius is the fixed schedule "
                  "(confucius-fixed here). Per 1000: the share of the loads measured, scaled; loads: the loads "
                  "(or page pairs) each figure is over.")


@app.command("four-cca")
def four_cca_command(
    out: Path = typer.Option(..., help="PNG file to write."),
    db: Path = _DB, scenario: str = typer.Option(..., help="The four-CCA scenario's name."),
    detail: str = typer.Option("confucius-class", help="Scheduler whose flows and classes are drawn."),
    disturbed: bool = typer.Option(False, help="Also use completed runs whose RT sender paused (marked)."),
):
    """Four flows with four CCAs: per scheduler JFI and RT delays; classes over time (§7.4)."""
    from confucius import metrics

    from . import plots

    with _open(db) as database:
        runs = data.timed_runs(database, scenario, disturbed)
    if not runs:
        _fail(f"no {'completed' if disturbed else 'valid'} runs of scenario {scenario} in {db}"
              f"{'' if disturbed else ' (--disturbed also takes runs whose RT sender paused)'}")
    table = Table(title=f"{scenario}: four flows, four CCAs (measured span after warm-up)")
    for column in ("scheduler", "flows", "throughput (Mbit/s)", "JFI", "RT delay p50 / p99 (ms)"):
        table.add_column(column)
    for run in runs:
        rates = run.throughputs_bps()
        delays = {label: metrics.delivered_delays(metrics.in_window(frames, run.start_ns, run.end_ns))
                  for label, frames in run.rt.items()}
        name = run.scheduler if run.valid else f"{run.scheduler} (disturbed: {run.sender_max_gap_ms:.0f} ms pause)"
        table.add_row(name, ", ".join(rates), ", ".join(f"{v / 1e6:.1f}" for v in rates.values()),
                      summary.fmt(metrics.jfi(list(rates.values())), "{:.2f}"),
                      "; ".join(f"{label} {_ms(metrics.nearest_rank(d, 50))} / {_ms(metrics.nearest_rank(d, 99))}"
                                for label, d in delays.items()))
    console.print(table)
    console.print(f"wrote {plots.four_cca(runs, out, detail)}")


@app.command("steps")
def steps_command(db: Path = _DB, scenario: str = typer.Option("steps", help="The step scenario's name.")):
    """How each RT controller follows a fall of capacity: time to its first rate decrease,
    time until its queueing delay is back under 50 ms, largest frame delay."""
    from . import steps

    with _open(db) as database:
        try:
            rows = steps.step_rows(database, scenario)
        except ReportError as err:
            _fail(str(err))
    if not rows:
        _fail(f"no valid runs of scenario {scenario} with a fall of capacity in {db}")
    table = Table(title=f"{scenario}: response to a fall of capacity (times from the step)")
    for column in ("scheduler", "controller", "step (Mbit/s)", "first decrease (ms)",
                   "delay < 50 ms after (s)", "peak delay (ms)"):
        table.add_column(column)
    for row in rows:
        r = row.response
        table.add_row(row.scheduler, row.controller, f"{row.step.from_bps / 1e6:g} -> {row.step.to_bps / 1e6:g}",
                      summary.fmt(r.first_decrease_s * 1e3, "{:.0f}"), summary.fmt(r.settled_s, "{:.2f}"),
                      _ms(r.peak_delay_ms))
    console.print(table)


def _engine_label(run) -> str:
    """The engine, its time mode and, when the run had one, its seed: "uml (inf-cpu, seed 7)"."""
    seed = "" if run["seed"] is None else f", seed {run['seed']}"
    return f"{run['engine']} ({run['time_mode']}{seed})"


@app.command("runs")
def runs_command(db: Path = _DB, scenario: Optional[str] = _SCENARIO,
                 last: int = typer.Option(30, help="How many of the latest runs.")):
    """The runs in the database: engine (with its seed), status, valid page loads, duration, host load and
    steal, error."""
    with _open(db) as database:
        rows = db_runs.recent_runs(database, scenario, last)
    table = Table(title=f"runs in {db}")
    for column in ("id", "scenario", "engine", "scheduler", "RT", "rep", "status", "valid pages", "s", "host load",
                   "steal", "error"):
        table.add_column(column)
    for r in reversed(rows):
        load = json.loads(r["host_load"]) if r["host_load"] else {}
        table.add_row(str(r["id"]), r["name"], _engine_label(r), r["scheduler"], r["controller"], str(r["repetition"]), r["status"],
                      f"{r['valid']}/{r['pages']}", f"{r['duration_s'] or 0:.0f}",
                      " → ".join(f"{load[k][0]:.1f}" for k in ("before", "after") if k in load),
                      f"{load['steal']:.0%}" if "steal" in load else "", (r["error"] or "").split("\n")[0][:60])
    console.print(table)


@app.command("percca")
def percca_command(
    db: Path = _DB, scenario: Optional[str] = _SCENARIO,
    out: Optional[Path] = typer.Option(None, help="PNG: MinThr against F1 with the models' curves."),
    as_json: bool = typer.Option(False, "--json", help="The table as JSON."),
):
    """Per-CCA queueing (paper 003): MinThr against the classifier's F1, per policy, over the
    seeds of each point, beside the simple and advanced models."""
    from . import percca

    with _open(db) as database:
        rows = percca.point_rows(database, scenario)
        _note_mixed(percca.mixed_programs(database, scenario))
        _show(rows, f"no per-CCA runs{f' of scenario {scenario}' if scenario else ''} in {db} "
              "(run `confucius percca run SCENARIO`)", as_json, summary.rows_json, _print_percca)
        if out is not None:
            console.print(f"wrote {percca.plot(database, rows, out)}")


@app.command("flent")
def flent_command(
    db: Path = _DB, scenario: Optional[str] = _SCENARIO,
    as_json: bool = typer.Option(False, "--json", help="The table as JSON."),
    plots: Optional[Path] = typer.Option(None, "--plots", help="Also draw Flent's own plots of the tests "
                                         "into this folder, the schedulers side by side."),
):
    """Flent's tests (a scenario with a flent table): per scheduler and test, latency under load
    (median and 99th percentile), the bulk flows' own RTT and throughput per direction."""
    from . import flent_table

    with _open(db) as database:
        found = flent_table.rows(database, scenario)
    _show(found, f"no valid Flent tests{f' of scenario {scenario}' if scenario else ''} in {db} "
          "(run `confucius lab run scenarios/flent.toml`)", as_json, summary.rows_json, _print_flent)
    if plots is not None:
        try:
            drawn = flent_table.plots(found, plots)
        except flent_table.PlotError as err:
            _fail(str(err))
        console.print(f"wrote {len(drawn)} Flent plots into {plots}")


@app.command("bulk")
def bulk_command(
    db: Path = _DB, scenario: Optional[str] = _SCENARIO,
    as_json: bool = typer.Option(False, "--json", help="The table as JSON."),
):
    """A bulk TCP flow beside the RT flow and the page (scenarios with bulk flows): per
    scheduler, the video's stall, the PLT, and the bulk flows' own RTT and throughput while
    the page loads and outside."""
    from . import bulk_table

    with _open(db) as database:
        found = bulk_table.rows(database, scenario)
    _show(found, f"no valid loads beside bulk flows with RTT samples{f' of scenario {scenario}' if scenario else ''} "
          f"in {db} (run `confucius lab run scenarios/demo-bulk.toml`)", as_json, summary.rows_json, _print_bulk)


def _print_bulk(found) -> None:
    table = _table("A bulk flow's own RTT beside the RT flow and the page",
                   ("scenario", "scheduler", "controller", "loads", "stall s", "PLT s", "bulk RTT in page ms",
                    "bulk RTT outside ms", "bulk Mbit/s in page", "bulk Mbit/s outside"),
                   ("scenario", "scheduler", "controller"))
    for r in found:
        table.add_row(r.scenario, r.scheduler, r.controller, str(r.loads), summary.fmt(r.stall_s, "{:.3f}"),
                      summary.fmt(r.plt_s, "{:.2f}"), _median_p95(r.rtt_during_median_ms, r.rtt_during_p95_ms),
                      _median_p95(r.rtt_outside_median_ms, r.rtt_outside_p95_ms),
                      summary.fmt(r.mbps_during, "{:.2f}"), summary.fmt(r.mbps_outside, "{:.2f}"))
    console.print(table)
    console.print("stall and PLT: means over the latest valid loads; bulk RTT: median / p95 of the bulk flows' "
                  "own smoothed RTT, sampled on their sender (the server's tcp_info, every 0.2 s), in page = from "
                  "the page's first request to its last byte, outside = the rest of the flows' life in the run "
                  "(slow start and the RT flow's warm-up included); Mbit/s: mean of iperf3's 0.5 s intervals.")


@app.command("hosts")
def hosts_command(
    db: Path = _DB, scenario: Optional[str] = _SCENARIO,
    as_json: bool = typer.Option(False, "--json", help="The table as JSON."),
):
    """Each client host's share (scenarios with two client hosts): per scheduler, host 1's and
    host 2's Mbit/s while the video runs and while the page loads, the video's stall and
    largest frame delay, and the PLT."""
    from . import hosts_table

    with _open(db) as database:
        found = hosts_table.rows(database, scenario)
    _show(found, f"no valid loads with per-host counters{f' of scenario {scenario}' if scenario else ''} in {db} "
          "(run `confucius lab run scenarios/hosts.toml`)", as_json, summary.rows_json, _print_hosts)


def _print_hosts(found) -> None:
    table = _table("Each client host's share of the bottleneck",
                   ("scenario", "scheduler", "controller", "loads", "host 1 / 2 Mbit/s, video",
                    "host 1 / 2 Mbit/s, page", "stall s", "max delay ms", "PLT s"),
                   ("scenario", "scheduler", "controller"))
    for r in found:
        table.add_row(r.scenario, r.scheduler, r.controller, str(r.loads),
                      f"{summary.fmt(r.host1_video_mbps, '{:.2f}')} / {summary.fmt(r.host2_video_mbps, '{:.2f}')}",
                      f"{summary.fmt(r.host1_page_mbps, '{:.2f}')} / {summary.fmt(r.host2_page_mbps, '{:.2f}')}",
                      summary.fmt(r.stall_s, "{:.3f}"), summary.fmt(r.max_delay_ms, "{:.0f}"),
                      summary.fmt(r.plt_s, "{:.2f}"))
    console.print(table)
    console.print("Mbit/s: what each host's device received (its counters every 0.2 s), while the video runs (the "
                  "RT flow's span: warm-up, page, tail) and while the page loads (first request to last byte); "
                  "stall, largest frame delay and PLT: means over the latest valid loads.")


@app.command("engines")
def engines_command(
    db: Path = _DB,
    against: Path = typer.Option(..., "--against", help="The database to compare with (e.g. the lab's, when --db "
                                                        "is the simulator's)."),
    scenario: Optional[str] = _SCENARIO,
    as_json: bool = typer.Option(False, "--json", help="The table as JSON."),
):
    """The same pages in two databases (the simulator's and the lab's): per scheduler and
    controller, each one's mean PLT, stall and largest frame delay, and the ratio of their
    PLTs with its 95 % paired bootstrap interval."""
    from . import engines_table

    with _open(db) as database, _open(against) as other:
        try:
            found = engines_table.rows(database, other, scenario)
        except ReportError as err:
            _fail(str(err))
    _show(found, f"no page both {db} and {against} loaded validly"
          f"{f' in scenario {scenario}' if scenario else ''}", as_json, summary.rows_json, _print_engines)


def _print_engines(found) -> None:
    table = _table("The same pages in two databases: --db against --against",
                   ("scheduler", "controller", "pages", "PLT s", "PLT ratio (95 %)", "stall s", "max delay ms"),
                   ("scheduler", "controller"))
    for r in found:
        table.add_row(r.scheduler, r.controller, str(r.pages),
                      f"{summary.fmt(r.plt_s, '{:.2f}')} / {summary.fmt(r.other_plt_s, '{:.2f}')}",
                      f"{summary.fmt(r.plt_ratio, '{:.3f}')} ({summary.fmt(r.plt_ratio_low, '{:.3f}')}-"
                      f"{summary.fmt(r.plt_ratio_high, '{:.3f}')})",
                      f"{summary.fmt(r.stall_s, '{:.3f}')} / {summary.fmt(r.other_stall_s, '{:.3f}')}",
                      f"{summary.fmt(r.max_delay_ms, '{:.0f}')} / {summary.fmt(r.other_max_delay_ms, '{:.0f}')}")
    console.print(table)
    console.print("Pairs: --db / --against, means over the pages both loaded validly (same scheduler, controller, "
                  "repetition and page); PLT ratio: Σ PLT --db over Σ PLT --against.")


def _show(rows, missing: str, as_json: bool, to_json, print_table) -> None:
    """A report's rows as JSON or as its table; `missing` is the error when there are none."""
    if not rows:
        _fail(missing)
    if as_json:
        print(to_json(rows))
    else:
        print_table(rows)


def _print_flent(found) -> None:
    table = _table("Flent: latency under load and throughput per direction",
                   ("scenario", "test", "scheduler", "runs", "latency", "median ms", "p99 ms", "UDP median ms",
                    "UDP p99 ms", "bulk RTT down ms", "bulk RTT up ms", "down Mbit/s", "up Mbit/s"),
                   ("scenario", "test", "scheduler", "latency"))
    for r in found:
        table.add_row(r.scenario, r.test, r.scheduler, str(r.runs), r.latency,
                      summary.fmt(r.latency_median_ms, "{:.1f}"), summary.fmt(r.latency_p99_ms, "{:.1f}"),
                      summary.fmt(r.udp_median_ms, "{:.1f}"), summary.fmt(r.udp_p99_ms, "{:.1f}"),
                      _median_p95(r.down_rtt_median_ms, r.down_rtt_p95_ms), _median_p95(r.up_rtt_median_ms, r.up_rtt_p95_ms),
                      summary.fmt(r.download_mbps, "{:.2f}"), summary.fmt(r.upload_mbps, "{:.2f}"))
    console.print(table)
    console.print(f"engine: {', '.join(sorted({r.engine for r in found}))}. latency: Ping (ms) ICMP is the "
                  "round trip, VoIP::delay the one-way delay of voip's 20 ms stream; both and UDP (irtt's "
                  "round trips) over every sample in the load window (Flent's delay to delay + length); "
                  "bulk RTT: median / p95 of the bulk TCP flows' own smoothed RTT (their senders' tcp_info, "
                  "every step in the window; uploads from Flent's socket stats, downloads from the server's "
                  "sockets); Mbit/s: Flent's TCP download sum / TCP upload sum, each flow's throughput as "
                  "netperf reported it at its end, summed per direction.")
    if (servers := _flent_servers_table(found)) is not None:
        console.print(servers)
        console.print("rtt_fair: per server (an address of the server's namespace at that RTT) its download's and "
                      "upload's Mbit/s and share of the direction, their own RTT (median / p95) and its ping's "
                      "median; JFI: Jain's index over the servers' throughput. Its row above pools every "
                      "server's ping and flows.")


def _flent_servers_table(found) -> Table | None:
    """rtt_fair's servers, one line each per scenario, test and scheduler; None without any."""
    with_servers = [r for r in found if r.servers]
    if not with_servers:
        return None
    table = _table("Flent rtt_fair: each server's share, its flows' own RTT and its ping",
                   ("scenario", "test", "scheduler", "server RTT ms", "down Mbit/s", "down share", "up Mbit/s",
                    "up share", "bulk RTT down ms", "bulk RTT up ms", "ping median ms", "JFI down / up"),
                   ("scenario", "test", "scheduler"))
    for r in with_servers:
        for n, s in enumerate(r.servers):
            table.add_row(r.scenario, r.test, r.scheduler, f"{s.rtt_ms:g}", summary.fmt(s.download_mbps, "{:.2f}"),
                          summary.fmt(s.download_share, "{:.0%}"), summary.fmt(s.upload_mbps, "{:.2f}"),
                          summary.fmt(s.upload_share, "{:.0%}"), _median_p95(s.down_rtt_median_ms, s.down_rtt_p95_ms),
                          _median_p95(s.up_rtt_median_ms, s.up_rtt_p95_ms), summary.fmt(s.ping_median_ms, "{:.1f}"),
                          "" if n else f"{summary.fmt(r.download_jfi, '{:.3f}')} / {summary.fmt(r.upload_jfi, '{:.3f}')}")
    return table


def _median_p95(median: float, p95: float) -> str:
    return summary.fmt(median, "{:.1f}") + ("" if math.isnan(median) else f" / {p95:.1f}")


@app.command("percca-fit-inputs")
def percca_fit_inputs_command(
    scenarios: List[str] = typer.Argument(..., help="Scenarios of shared-buffer runs (by name)."),
    out_dir: Path = typer.Option(..., "--out-dir", help="Where shared.csv and pairs.csv go."),
    db: Path = _DB,
):
    """Per-flow throughputs of shared-buffer per-CCA runs as the CSV files `confucius model
    percca-fit --shared --pairs` reads (g_i from equal mixes, g_ij from two-CCA mixes)."""
    import csv

    from confucius.percca import stored

    with _open(db) as database:
        shared, pairs = stored.fit_inputs(database, scenarios)
    if not shared and not pairs:
        _fail(f"no shared-buffer runs of {', '.join(scenarios)} in {db}")
    out_dir.mkdir(parents=True, exist_ok=True)
    for name, rows, columns in (("shared.csv", shared, ("cca", "thr")),
                                ("pairs.csv", pairs, ("cca_i", "cca_j", "x_i", "thr_i", "thr_j"))):
        if rows:
            with open(out_dir / name, "w", newline="") as f:
                writer = csv.DictWriter(f, fieldnames=columns)
                writer.writeheader()
                writer.writerows(rows)
            console.print(f"wrote {out_dir / name} ({len(rows)} rows)")


def _print_percca(rows) -> None:
    table = Table(title="per-CCA queueing: MinThr (share of the fair share of the most starved CCA)")
    for column in ("scenario", "policy", "classifier", "F1 drawn", "runs", "MinThr mean",
                   "min-max", "JFI", "link use", "simple model", "advanced model",
                   "simple on draws", "advanced on draws"):
        table.add_column(column)
    for r in rows:
        table.add_row(r.scenario, r.policy, r.classifier, f"{r.f1_drawn:.3f}", str(r.runs),
                      f"{r.min_thr:.3f}", f"{r.min_thr_low:.3f}-{r.min_thr_high:.3f}", f"{r.jfi:.3f}",
                      f"{r.link_share:.0%}", summary.fmt(r.model_simple, "{:.3f}"),
                      summary.fmt(r.model_advanced, "{:.3f}"), summary.fmt(r.drawn_simple, "{:.3f}"),
                      summary.fmt(r.drawn_advanced, "{:.3f}"))
    console.print(table)
