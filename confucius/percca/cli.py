# SPDX-License-Identifier: MIT
"""`confucius percca`: per-CCA queueing experiments on the lab's kernel (seed 003)."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from confucius.lab.scenario import ScenarioError

from . import runner
from . import scenario as percca_scenario

app = typer.Typer(no_args_is_help=True, add_completion=False,
                  help="Per-CCA queue isolation: bulk CCA mixes, classifiers, queues (seed 003).")

_ENGINE = typer.Option(None, "--engine", help="qemu or uml [default: the scenario's, else uml].")


def _load(path: Path, engine: Optional[str]) -> percca_scenario.Scenario:
    try:
        return percca_scenario.load(path, engine=engine)
    except ScenarioError as err:
        typer.echo(f"error: {err}", err=True)
        raise typer.Exit(2)


def _seeds(text: str, sc: percca_scenario.Scenario) -> list[int]:
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
        typer.echo(f"  {point.key}: {wrong} of {len(flows)} flows misclassified; flows per queue {per_queue}")


@app.command("run")
def run_command(scenario: Path, engine: Optional[str] = _ENGINE,
                db: Path = typer.Option(runner.DEFAULT_DB, "--db", help="Results database."),
                results: Path = typer.Option(runner.DEFAULT_RESULTS, "--results", help="Raw results root."),
                again: bool = typer.Option(False, "--again", help="Run points already measured again."),
                seeds: Optional[str] = typer.Option(None, "--seeds", help="Only these of the scenario's seeds (1,2)."),
                echo: bool = typer.Option(False, help="Print the guest's console.")):
    """Run every point of a scenario not yet in the database (one boot each)."""
    sc = _load(scenario, engine)
    chosen = _seeds(seeds, sc) if seeds else None
    outcomes = runner.run_scenario(sc, db, results, resume=not again, seeds=chosen, echo=echo,
                                   progress=lambda line: typer.echo(line))
    failed = [p.key for p, _, error in outcomes if error]
    if failed:
        typer.echo(f"{len(failed)} of {len(outcomes)} runs failed: {', '.join(failed)}", err=True)
        raise typer.Exit(1)
