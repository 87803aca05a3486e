# SPDX-License-Identifier: MIT
"""`confucius percca`: per-CCA queueing experiments on the lab's kernel (paper 003)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Optional

import typer

from confucius.experiment.scenario import ScenarioError

from confucius.experiment.db import Database, DatabaseError

from . import fit as percca_fit
from . import runner
from . import mix_scenario

app = typer.Typer(no_args_is_help=True, add_completion=False,
                  help="Per-CCA queue isolation: bulk CCA mixes, classifiers, queues (paper 003).")

_ENGINE = typer.Option(None, "--engine", help="qemu, uml or ns3 (the simulator, `make sim`) "
                       "\\[default: the scenario's, else uml].")


def _load(path: Path, engine: Optional[str]) -> mix_scenario.Scenario:
    try:
        return mix_scenario.load(path, engine=engine)
    except ScenarioError as err:
        typer.echo(f"error: {err}", err=True)
        raise typer.Exit(2)


def _seeds(text: str, sc: mix_scenario.Scenario) -> list[int]:
    try:
        chosen = [int(part) for part in text.split(",")]
    except ValueError:
        chosen = []
    if not chosen or any(s not in sc.seeds for s in chosen):
        typer.echo(f"error: --seeds: give some of the scenario's seeds {list(sc.seeds)}, got {text!r}", err=True)
        raise typer.Exit(2)
    return chosen


@app.command("plan")
def plan_command(scenario: Path, engine: Optional[str] = _ENGINE):
    """Check a scenario and list its runs, each flow's class drawn and its queue."""
    sc = _load(scenario, engine)
    typer.echo(f"{sc.name}: {', '.join(f'{n} {c}' for c, n in sc.flows)}; {sc.rate_bps / 1e6:g} Mbit/s, "
               f"RTT {sc.rtt_s * 1e3:g} ms, buffer {sc.buffer} packets; {sc.warmup_s:g} s warm-up + "
               f"{sc.duration_s:g} s; engine {sc.engine}")
    for point in sc.points():
        flows = runner.flows_of(sc, point)
        wrong = sum(f.cca != f.classified_as for f in flows)
        per_queue = [sum(f.queue == q for f in flows) for q in range(runner.queue_count(sc, point))]
        weights = runner.point_weights(sc, point)
        typer.echo(f"  {point.key}: {wrong} of {len(flows)} flows misclassified; flows per queue {per_queue}"
                   + (f"; weights {':'.join(map(str, weights))}" if weights else ""))


@app.command("run")
def run_command(scenario: Path, engine: Optional[str] = _ENGINE,
                db: Path = typer.Option(runner.DEFAULT_DB, "--db", help="Results database."),
                results: Path = typer.Option(runner.DEFAULT_RESULTS, "--results", help="Raw results root."),
                again: bool = typer.Option(False, "--again", help="Run points already measured again."),
                seeds: Optional[str] = typer.Option(None, "--seeds", help="Only these of the scenario's seeds (1,2)."),
                policy: Optional[str] = typer.Option(None, "--policy", help="Only this policy's points."),
                echo: bool = typer.Option(False, help="Print the guest's console.")):
    """Run every point of a scenario not yet in the database (one boot or simulation each)."""
    sc = _load(scenario, engine)
    chosen = _seeds(seeds, sc) if seeds else None
    if policy is not None and policy not in sc.policies:
        typer.echo(f"error: --policy: give one of the scenario's policies {list(sc.policies)}, got {policy!r}", err=True)
        raise typer.Exit(2)
    try:
        outcomes = runner.run_scenario(sc, db, results, resume=not again, seeds=chosen, policy=policy, echo=echo,
                                       progress=lambda line: typer.echo(line))
    except DatabaseError as err:
        typer.echo(f"error: {err}", err=True)
        raise typer.Exit(2)
    failed = [p.key for p, _, error in outcomes if error]
    if failed:
        typer.echo(f"{len(failed)} of {len(outcomes)} runs failed: {', '.join(failed)}", err=True)
        raise typer.Exit(1)


def _fit_report(fit: percca_fit.Fit, checks: list[percca_fit.Check], unchecked: list[str],
                written: Path | None) -> dict:
    by_scenario = {}
    for c in checks:
        by_scenario.setdefault(c.scenario, []).append(c)
    errors = {name: {which: vars(percca_fit.error(group, which)) for which in ("fitted", "paper003")}
              for name, group in [("all", checks), *by_scenario.items()]}
    return {"params": fit.params.to_json(), "written": str(written) if written else None,
            "pairs": [vars(f) for f in fit.pairs], "g": fit.g,
            "samples": [dict(zip(("cca_i", "cca_j", "x_i", "thr_i", "thr_j"), s)) for s in fit.samples],
            "validation": [vars(c) for c in checks], "unchecked": unchecked, "error": errors}


def _number(value, pattern: str = "{:.3f}") -> str:
    return "-" if value is None else pattern.format(value)


def _print_fit(report: dict) -> None:
    typer.echo("relative aggressiveness g_ij(x_i) = w·e^(m·x_i), shared FIFO pairs:")
    for f in report["pairs"]:
        typer.echo(f"  {f['i']} against {f['j']}: w = {f['w']:.4g}, m = {f['m']:.4g} "
                   f"(R² {f['r_squared']:.3f}, {f['samples']} runs)")
    for s in report["samples"]:
        typer.echo(f"    x_{s['cca_i']} = {s['x_i']:.3f}: {s['cca_i']} {s['thr_i'] / 1e6:.2f} Mbit/s, "
                   f"{s['cca_j']} {s['thr_j'] / 1e6:.2f} Mbit/s per flow")
    if report["g"]:
        typer.echo("training aggressiveness (Eq. 6): " +
                   ", ".join(f"g_{c} = {v:.4f}" for c, v in report["g"].items()))
    if report["written"]:
        typer.echo(f"wrote {report['written']}")
    if not report["validation"]:
        return
    typer.echo("advanced model on each run's draw against the lab (MinThr):")
    for c in report["validation"]:
        typer.echo(f"  {c['scenario']} {c['point']}: lab {c['measured']:.3f}, fitted {_number(c['fitted'])}, "
                   f"paper 003 {_number(c['paper003'])}")
    for name, errors in report["error"].items():
        typer.echo(f"  {name}: " + "; ".join(
            f"{which} |model - lab| mean {_number(e['mean'])}, worst {_number(e['worst'])} ({e['runs']} runs)"
            for which, e in errors.items()))


@app.command("fit")
def fit_command(fit_file: Path, engine: Optional[str] = _ENGINE,
                db: Path = typer.Option(runner.DEFAULT_DB, "--db", help="Results database."),
                results: Path = typer.Option(runner.DEFAULT_RESULTS, "--results", help="Raw results root."),
                run: bool = typer.Option(False, "--run", help="First run the fit file's mixes not yet stored."),
                write: Optional[Path] = typer.Option(None, "--write", help="The fitted parameters as JSON "
                                                     "(what scenarios' `params` and `model percca --params` read)."),
                as_json: bool = typer.Option(False, "--json", help="Print JSON only.")):
    """Fit g_i and g_ij(x) = w·e^(m·x) from the fit file's shared-buffer runs, then check the
    fitted advanced model against the independent runs it names."""
    try:
        plan = percca_fit.load(fit_file, engine=engine)
    except ScenarioError as err:
        typer.echo(f"error: {err}", err=True)
        raise typer.Exit(2)
    if run:
        for sc in plan.mixes:
            outcomes = runner.run_scenario(sc, db, results, progress=lambda line, n=sc.name: typer.echo(
                f"{n} {line}", err=as_json))
            if any(error for _, _, error in outcomes):
                typer.echo(f"error: runs of {sc.name} failed; see {results / sc.name}", err=True)
                raise typer.Exit(1)
    if not db.is_file():
        typer.echo(f"error: no database {db}", err=True)
        raise typer.Exit(2)
    try:
        with Database(db) as database:
            fitted = percca_fit.fit_database(database, plan.mix_names)
            if write is not None:   # before the validation: its runs may use these parameters
                write.parent.mkdir(parents=True, exist_ok=True)
                write.write_text(json.dumps(fitted.params.to_json(), indent=2) + "\n")
            checks = percca_fit.validate(database, list(plan.validate), fitted.params) if plan.validate else []
    except percca_fit.FitError as err:
        typer.echo(f"error: {err}", err=True)
        raise typer.Exit(2)
    unchecked = percca_fit.unchecked(plan.validate, checks)
    report = _fit_report(fitted, checks, unchecked, write)
    if unchecked:
        typer.echo(f"note: the fit is not checked against {', '.join(unchecked)}: no successful runs "
                   "in the database (confucius percca run SCENARIO)", err=True)
    if as_json:
        typer.echo(json.dumps(report, indent=1, default=_plain))
    else:
        _print_fit(report)


def _plain(value):
    """NaN-free JSON: numpy numbers as Python numbers."""
    return value.item() if hasattr(value, "item") else str(value)
