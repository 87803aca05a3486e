# SPDX-License-Identifier: MIT
"""`confucius sim`: the ns-3 simulator (sim/README.md) from the command line. Imports of
the parts happen inside each command, so that `confucius sim --help` stays light."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import List, Optional

import typer

app = typer.Typer(no_args_is_help=True, add_completion=False,
                  help="The ns-3 simulator: the core as an ns-3 queue disc, the lab's scenarios simulated.")

BOTTLENECK = Path(__file__).resolve().parents[2] / "build" / "sim" / "bottleneck"
DEFAULT_DB = Path("results") / "sim" / "sim.sqlite"

_SCENARIO = typer.Argument(..., help="The lab's scenario file (TOML; a \\[sim] table for the simulator's own keys; "
                                             "with a \\[grid], each of its points).")
_DB = typer.Option(DEFAULT_DB, "--db", help="Results database (the lab's schema).")
_SCHEDULERS = typer.Option(None, "--schedulers", "-s", help="Only these schedulers (repeatable or comma-separated).")
_CONTROLLERS = typer.Option(None, "--controllers", "-c", help="Only these RT controllers (repeatable or comma-separated).")
_BINARY = typer.Option(BOTTLENECK, help="The bottleneck program (make sim).")


def _fail(message: str) -> None:
    typer.secho(f"error: {message}", fg=typer.colors.RED, err=True)
    raise typer.Exit(2)


def _names(values: Optional[List[str]]) -> Optional[List[str]]:
    return [n for value in values for n in value.split(",") if n] if values else None


@app.command("episode")
def episode_command(
        schedulers: str = typer.Option("pfifo,fq_codel,confucius,confucius-fixed", help="Comma-separated."),
        controller: str = typer.Option("gcc", help="The video's controller: gcc, copa, fixed, or rtflow's "
                                                    "TCP mode: tcp-bbr, tcp-cubic, tcp-vegas."),
        rate: str = typer.Option("20mbit", help="Bottleneck rate."),
        trace: Path = typer.Option(None, help="A 'time_s Mbps' trace instead of a constant rate."),
        rtt: str = typer.Option("40ms", help="Round-trip propagation delay."),
        buffer: int = typer.Option(1000, help="The scheduler's limit, packets."),
        page: str = typer.Option("amazon", help="The page: 'amazon' (the demo's), a page file "
                                                "(confucius-web-page/1), or 'none' for --objects."),
        objects: int = typer.Option(9, help="With --page none: parallel TCP transfers."),
        object_size: str = typer.Option("250kb", help="With --page none: each transfer's size."),
        settle: str = typer.Option("10s", help="The video alone before the page."),
        http: str = typer.Option("h1", help="The page's HTTP versions: h1, h2, h3 (one multiplexed TCP "
                                            "connection per domain, as h2), or table3 (drawn per domain "
                                            "from paper 000's Table 3)."),
        as_json: bool = typer.Option(False, "--json", help="JSON instead of a table."),
        binary: Path = _BINARY) -> None:
    """Run the motivating example in ns-3 under each scheduler and print the video's metrics."""
    import tempfile

    from rich.console import Console

    from confucius import units
    from confucius.sim.bottleneck import SimError, named_page, write_sim_page
    from confucius.sim.episode import episode, print_episodes
    from confucius.web import protocols

    console = Console()
    try:
        link = [f"--rtt={units.parse_time(rtt)}s", f"--buffer={buffer}"]
        link.append(f"--trace={trace}" if trace else f"--rate={units.parse_rate(rate):.0f}bps")
        settle_s = units.parse_time(settle)
        with tempfile.TemporaryDirectory() as scratch:
            if http not in protocols.CHOICES:
                raise SimError(f"--http must be one of {', '.join(protocols.CHOICES)}, not {http!r}")
            if page == "none":
                if http != "h1":
                    raise SimError("--http is for a page; --page none loads parallel TCP transfers")
                load = ["--web=tcp", f"--web-flows={objects}",
                        f"--web-bytes={int(units.parse_size(object_size))}"]
            else:
                load = [f"--page={write_sim_page(named_page(page), Path(scratch) / 'page.txt', http)}"]
            episodes = [episode(name.strip(), controller, link, load, settle_s, binary)
                        for name in schedulers.split(",") if name.strip()]
    except (SimError, units.UnitError) as err:
        console.print(f"[red]error:[/red] {err}")
        raise typer.Exit(2)
    print_episodes(episodes, as_json, console)


def _simulate(path: Path, db: Path, schedulers, controllers, binary: Path, resume: bool, attempts: int,
              execute=None):
    """Load the scenario (each point of its grid), simulate, store; say what was skipped
    and what failed. The scenarios and their reports."""
    from confucius.experiment.grid import load_points
    from confucius.experiment.scenario import ScenarioError
    from confucius.sim.bottleneck import NS3_CCAS

    try:
        scenarios = load_points(path, ccas=NS3_CCAS)
    except ScenarioError as err:
        _fail(str(err))
    return [(scenario, _simulate_one(scenario, db, schedulers, controllers, binary, resume, attempts, execute))
            for scenario in scenarios]


def _simulate_one(scenario, db: Path, schedulers, controllers, binary: Path, resume: bool, attempts: int,
                  execute):
    """One scenario simulated and stored; its report, after saying what it skipped and what failed."""
    from confucius.cluster import ClusterError
    from confucius.experiment.db import DatabaseError
    from confucius.experiment.scenario import ScenarioError
    from confucius.sim import sweep
    from confucius.sim.bottleneck import SimError
    from confucius.sim.plan import PlanError, differences

    try:
        report = sweep.sweep(scenario, db, binary=binary, schedulers=_names(schedulers),
                             controllers=_names(controllers), resume=resume, attempts=attempts,
                             progress=sys.stderr.isatty(), execute=execute)
    except (ScenarioError, PlanError, SimError, DatabaseError, ClusterError) as err:
        _fail(str(err))
    except KeyboardInterrupt:
        typer.echo(f"interrupted: the runs that finished are in {db} (`confucius sim sweep` resumes from them)",
                   err=True)
        raise typer.Exit(130)
    for note in differences(scenario):
        typer.echo(f"note: {note}", err=True)
    for skip in report.skipped:
        typer.echo(f"skipped {skip.scheduler} / {skip.controller}: {skip.why}", err=True)
    typer.echo(f"{scenario.name}: {report.tasks} simulated runs ({report.failed} failed), {report.pages} pages; "
               f"database {db}", err=True)
    for error in report.errors:
        typer.echo(f"failed: {error}", err=True)
    return report


def _all_failed(reports) -> bool:
    tasks = sum(r.tasks for _, r in reports)
    return bool(tasks) and sum(r.failed for _, r in reports) == tasks


@app.command("run")
def run_command(scenario: Path = _SCENARIO, db: Path = _DB, schedulers: Optional[List[str]] = _SCHEDULERS,
                controllers: Optional[List[str]] = _CONTROLLERS, binary: Path = _BINARY):
    """Simulate SCENARIO afresh, here, into the database; then print `confucius report summary`'s table."""
    from confucius.report.cli import summary_command
    from confucius.report.summary import BASELINE

    reports = _simulate(scenario, db, schedulers, controllers, binary, resume=False, attempts=1)
    for loaded, report in reports:
        if report.pages:
            order = ",".join(c.name for c in loaded.schedulers)   # the scenario's order, as `make demo` prints it
            summary_command(db=db, scenario=loaded.name, baseline=BASELINE, also_against=None,
                            schedulers=[order], targets=False, json_out=None, max_held=None, min_start=None,
                            common=False, pages_of=None)
    if _all_failed(reports):
        raise typer.Exit(1)


@app.command("sweep")
def sweep_command(scenario: Path = _SCENARIO, db: Path = _DB, schedulers: Optional[List[str]] = _SCHEDULERS,
                  controllers: Optional[List[str]] = _CONTROLLERS, binary: Path = _BINARY,
                  scheduler: Optional[str] = typer.Option(None, "--scheduler",
                                                          help="A Dask scheduler's address (tcp://host:8786) "
                                                               "\\[default: a local cluster]."),
                  workers: int = typer.Option(2, min=1, help="Workers of the local cluster (one core each)."),
                  attempts: int = typer.Option(3, min=1, help="Tries per page (failed ones are redone).")):
    """Simulate SCENARIO's cells as tasks on Dask distributed, resuming: pages already in the
    database are skipped, a failed task is stored with its error and the others go on."""
    from confucius.sim import sweep

    reports = _simulate(scenario, db, schedulers, controllers, binary, resume=True, attempts=attempts,
                        execute=lambda tasks, scenario, produced: sweep.on_dask(tasks, scenario, produced, binary,
                                                                               scheduler, workers))
    if _all_failed(reports):
        raise typer.Exit(1)


def _cells_of(scenario: Path, compute) -> tuple:
    """SCENARIO loaded and `compute(loaded)`'s cells, or the reason on stderr and exit 2."""
    from confucius.experiment.db import DatabaseError
    from confucius.experiment.scenario import ScenarioError, load
    from confucius.report.data import ReportError
    from confucius.sim.bottleneck import NS3_CCAS, SimError

    try:
        loaded = load(scenario, ccas=NS3_CCAS)
        return loaded, compute(loaded)
    except (ScenarioError, SimError, DatabaseError, ReportError) as err:
        _fail(str(err))


def _print_cells(cells: list, as_json: bool, title: str, columns: tuple[str, ...], row, legend: str) -> None:
    """The cells as JSON, or as a table of `row(cell)` under `columns` with its legend."""
    import json
    from dataclasses import asdict

    from rich.console import Console
    from rich.table import Table

    console = Console()
    if as_json:
        console.print_json(json.dumps([asdict(c) for c in cells]))
        return
    table = Table(title=title)
    for name in columns:
        table.add_column(name, justify="right")
    for c in cells:
        table.add_row(*row(c))
    console.print(table)
    console.print(legend)


@app.command("alone")
def alone_command(scenario: Path = _SCENARIO, db: Path = _DB, schedulers: Optional[List[str]] = _SCHEDULERS,
                  controllers: Optional[List[str]] = _CONTROLLERS, binary: Path = _BINARY,
                  as_json: bool = typer.Option(False, "--json", help="JSON instead of a table.")):
    """How much of the stall the pages caused: SCENARIO's simulated loads in the database beside
    the video alone over the same windows (each cell's episode again without its page)."""
    from confucius.sim.alone import compare

    loaded, cells = _cells_of(scenario, lambda loaded: compare(loaded, db, binary, _names(schedulers),
                                                               _names(controllers)))
    _print_cells(cells, as_json, f"{loaded.name}: the video's stall with each page and alone over the same window",
                 ("scheduler", "RT", "loads", "stall s", "alone s", "w/ stall", "alone w/ stall"),
                 lambda c: (c.scheduler, c.controller, str(c.loads), f"{c.stall_s:.3f}", f"{c.alone_stall_s:.3f}",
                            str(c.stalled), str(c.alone_stalled)),
                 "stall s: mean per load (frame delay > 190 ms) over the load's window; alone s: the same "
                 "window of the same episode without its page; w/ stall: loads with any stall")


@app.command("traces")
def traces_command(scenario: Path = _SCENARIO, db: Path = _DB,
                   as_json: bool = typer.Option(False, "--json", help="JSON instead of a table.")):
    """SCENARIO's simulated loads on its set of traces, per trace each load drew: loads,
    stall and PLT per controller and scheduler."""
    from confucius.sim.traces import by_trace

    loaded, cells = _cells_of(scenario, lambda loaded: by_trace(loaded, db))
    _print_cells(cells, as_json, f"{loaded.name}: the loads per trace they drew",
                 ("trace", "RT", "scheduler", "loads", "stall s", "w/ stall", "PLT s"),
                 lambda c: (c.trace, c.controller, c.scheduler, str(c.loads), f"{c.stall_s:.3f}", str(c.stalled),
                            f"{c.plt_s:.2f}"),
                 "stall s: mean per load (frame delay > 190 ms) over the load's window; w/ stall: loads with "
                 "any stall; PLT s: mean over the loads that finished")
