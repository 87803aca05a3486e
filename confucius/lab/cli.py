# SPDX-License-Identifier: MIT
"""`confucius lab`: the VM (`vm run`, `vm shell`, `vm info`) and, inside it, the topology."""

from __future__ import annotations

import inspect
import shutil
import sys
import time
import typing
from dataclasses import dataclass, field, fields
from datetime import datetime, timezone
from pathlib import Path
from typing import List, Optional

import typer

app = typer.Typer(no_args_is_help=True, add_completion=False,
                  help="Real-kernel laboratory: Debian's kernel under qemu, namespace topologies.")
vm_app = typer.Typer(no_args_is_help=True, add_completion=False,
                     help="Run scripts as root inside Debian's kernel under qemu.")
topology_app = typer.Typer(no_args_is_help=True, add_completion=False,
                           help="Server - router - client namespaces (run inside the VM).")
app.add_typer(vm_app, name="vm")
app.add_typer(topology_app, name="topology")

# Exit statuses of `vm run` when the script gave none, as timeout(1) and env(1) use them.
TIMED_OUT, DIED = 124, 125


def _fail(message: str) -> None:
    typer.secho(f"error: {message}", fg=typer.colors.RED, err=True)
    raise typer.Exit(2)


def _env(pairs: List[str]) -> dict:
    env = {}
    for pair in pairs:
        name, sep, value = pair.partition("=")
        if not sep or not name:
            _fail(f"--env takes NAME=VALUE, got {pair!r}")
        env[name] = value
    return env


def _default_results() -> Path:
    return Path("results") / "lab" / time.strftime("%Y%m%d-%H%M%S")


@vm_app.command("run")
def run_command(
    script: Optional[Path] = typer.Argument(None, help="Script file to run (bash unless it has a #! line)."),
    args: Optional[List[str]] = typer.Argument(None, help="Arguments for the script (after --)."),
    command: Optional[str] = typer.Option(None, "--command", "-c", help="Shell commands to run instead of a file."),
    results: Optional[Path] = typer.Option(None, help="Writable results folder ($RESULTS inside) "
                                           "(default: results/lab/<time>)."),
    timeout: float = typer.Option(600.0, help="Seconds before the VM is killed: wall-clock, boot included (qemu); the guest's (uml, inf-cpu)."),
    cpus: int = typer.Option(2, help="Virtual CPUs."),
    memory: str = typer.Option("2G", help="Guest memory (e.g. 512M, 2G)."),
    env: List[str] = typer.Option([], "--env", "-e", help="NAME=VALUE for the script (repeatable)."),
    module: Optional[List[Path]] = typer.Option(None, "--module", "-m",
                                                help="Kernel module to make loadable "
                                                "(repeatable; default: build/kernel/*.ko)."),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="Do not print the console as it runs."),
    engine: str = typer.Option("qemu", help="qemu (Debian's kernel, real time) or uml (User-Mode Linux, "
                                            "virtual time; modules default to build/kernel-uml/*.ko)."),
    time_mode: Optional[str] = typer.Option(None, help="uml only: inf-cpu (the default), basic or real "
                                                        "(the host's clock)."),
    kernel: str = typer.Option("lab", help="lab or 6.1 (Debian 12's; uml: make uml), 6.12 (qemu: make qemu-6.12; "
                                           "uml: make uml-6.12) or debug, KASAN, lockdep, "
                                           "kmemleak, UBSAN (qemu: make debug-kernel-x86, with "
                                           "DEBUG_ATOMIC_SLEEP, modules from build/kernel-x86-debug; "
                                           "uml: make uml-debug, modules from build/kernel-uml-debug)."),
    seed: Optional[int] = typer.Option(None, help="uml only: the seed of every random number in the guest "
                                                   "(the same seed repeats an inf-cpu run exactly)."),
):
    """Boot the VM, run SCRIPT as root inside, exit with its exit status."""
    from confucius.lab import uml, vm
    from confucius.experiment.engines import GENERATIONS

    kernel = GENERATIONS.get(kernel, kernel)  # a generation, as scenarios name it, or a flavour
    if (script is None) == (command is None):
        _fail("give either a SCRIPT file or --command")
    request = dict(args=args or [], results_dir=results or _default_results(), timeout=timeout,
                   memory=memory, env=_env(env), modules=module, echo=not quiet)
    try:
        if engine == "uml":
            result = uml.run(command if command is not None else script, **request,
                             time_mode=time_mode or uml.TIME_MODE, flavour=kernel, seed=seed)
        elif engine != "qemu":
            raise vm.LabError(f"unknown engine {engine!r}: qemu or uml")
        elif time_mode is not None:
            raise vm.LabError("--time-mode is for the uml engine (qemu's guest runs in real time)")
        elif seed is not None:
            raise vm.LabError("--seed is for the uml engine (a qemu guest in real time cannot repeat a run)")
        else:
            result = vm.run(command if command is not None else script, **request, cpus=cpus, flavour=kernel)
    except vm.LabError as err:
        _fail(str(err))
    if quiet:
        typer.echo(result.output)
    _summarise(result)
    raise typer.Exit(TIMED_OUT if result.timed_out else DIED if result.returncode is None
                     else result.returncode)


def _summarise(result) -> None:
    boot = f"{result.boot_time:.1f} s" if result.boot_time is not None else "did not finish"
    status = ("stalled (its clock stood still)" if result.stalled else
              "timed out" if result.timed_out else "died (no exit status)"
              if result.returncode is None else f"exit {result.returncode}")
    typer.echo(f"lab: kernel {result.kernel or '?'}, boot {boot}, {status} after "
               f"{result.duration:.1f} s; results in {result.results_dir}", err=True)
    for line in result.kernel_problems()[:10]:
        typer.secho(f"lab: kernel: {line}", fg=typer.colors.YELLOW, err=True)


@vm_app.command("shell")
def shell_command(
    results: Optional[Path] = typer.Option(None, help="Writable results folder ($RESULTS inside)."),
    timeout: float = typer.Option(3600.0, help="Seconds before the VM is killed."),
    cpus: int = typer.Option(2, help="Virtual CPUs."),
    memory: str = typer.Option("2G", help="Guest memory (e.g. 512M, 2G)."),
    module: Optional[List[Path]] = typer.Option(None, "--module", "-m", help="Kernel module to make loadable."),
):
    """An interactive root shell inside the VM (exit the shell to stop it; Ctrl-A x kills it)."""
    from confucius.lab import vm

    if not sys.stdin.isatty():
        _fail("vm shell needs a terminal; use `vm run` for scripts")
    size = shutil.get_terminal_size()  # a serial console cannot tell the guest its size
    try:
        vm.run(f"stty rows {size.lines} cols {size.columns}; exec bash -i", results_dir=results or _default_results(), timeout=timeout,
               cpus=cpus, memory=memory, modules=module, interactive=True)
    except vm.LabError as err:
        _fail(str(err))


@vm_app.command("info")
def info_command():
    """Build what the VM needs (cached in build/lab/) and show the kernel and accelerator."""
    from confucius.lab import vm

    try:
        vm.ensure_packages()
        kernel = vm.detect_kernel()
        typer.echo(f"kernel       {kernel.version} ({kernel.image})")
        typer.echo(f"vmlinux      {vm.vmlinux(kernel)}")
        typer.echo(f"initramfs    {vm.initramfs(kernel)}")
        typer.echo(f"accelerator  {vm.accelerator()}")
    except vm.LabError as err:
        _fail(str(err))


def _optional_rate(text: str) -> Optional[str]:
    return None if text.lower() == "none" else text


@topology_app.command("up")
def topology_up(
    qdisc: str = typer.Option("fq_codel", help="The qdisc under test, as a tc spec "
                              "(e.g. 'confucius bandwidth 20mbit')."),
    rate: str = typer.Option("20mbit", help="Bottleneck rate: an HTB class with the qdisc as "
                             "leaf; 'none' if the qdisc shapes by itself."),
    rtt: str = typer.Option("40ms", help="Round-trip propagation delay (netem, half each way)."),
    reverse_rate: Optional[str] = typer.Option(None, help="Client-to-server rate (default: unshaped)."),
    clients: int = typer.Option(1, help="Client hosts behind the bottleneck: 2 adds cli2 (198.19.0.3)."),
    nat: bool = typer.Option(False, help="The router masquerades towards the server (needs conntrack)."),
    show: bool = typer.Option(False, help="Only print the commands (a shell script)."),
):
    """Build srv - rtr - cli with the qdisc under test on the router's egress to the client."""
    from confucius.lab import topology

    try:
        topo = topology.Topology(qdisc=qdisc, rate=_optional_rate(rate), rtt=rtt,
                                 reverse_rate=reverse_rate, clients=clients, nat=nat)
        if show:
            typer.echo(topo.script(), nl=False)
        else:
            topo.up()
    except topology.TopologyError as err:
        _fail(str(err))


@topology_app.command("down")
def topology_down():
    """Remove the namespaces."""
    from confucius.lab import topology

    topology.down()


@topology_app.command("rate")
def topology_rate(rate: str = typer.Argument(..., help="New bottleneck rate, e.g. 10mbit.")):
    """Change the bottleneck's rate now."""
    from confucius.lab import topology

    try:
        topology.set_rate(rate)
    except topology.TopologyError as err:
        _fail(str(err))


@topology_app.command("trace")
def topology_trace(
    trace: Path = typer.Argument(..., help="Bandwidth trace: 'time_s Mbps' per line."),
    duration: Optional[float] = typer.Option(None, help="Seconds to follow (default: all of it)."),
    scale: float = typer.Option(1.0, help="Multiply the trace's rates by this."),
):
    """Follow a bandwidth trace with the bottleneck's rate (runs until the trace ends)."""
    from confucius.lab import topology

    try:
        changes = topology.follow_trace(trace, duration=duration, scale=scale)
    except (topology.TopologyError, OSError) as err:
        _fail(str(err))
    typer.echo(f"{changes} rate changes", err=True)


@topology_app.command("addresses")
def topology_addresses(count: int = typer.Argument(..., help="How many domain addresses.")):
    """Give the server COUNT more addresses (one per Web domain) and print them."""
    from confucius.lab import topology

    try:
        addresses = topology.domain_addresses(count)
        topology.add_server_addresses(addresses)
    except topology.TopologyError as err:
        _fail(str(err))
    typer.echo("\n".join(addresses))


# --------------------------------------------------------------------------- scenarios

def _option(parameter):
    """A field whose command-line option (typer.Argument or typer.Option) is `parameter`."""
    return field(metadata={"option": parameter})


@dataclass(frozen=True)
class _ScenarioChoice:
    """What the scenario commands share: the scenario file and which of its runs to take."""
    scenario: Path = _option(typer.Argument(..., help="Scenario file (TOML)."))
    schedulers: Optional[List[str]] = _option(typer.Option(
        None, "--schedulers", "-s", help="Only these schedulers (repeatable or comma-separated)."))
    controllers: Optional[List[str]] = _option(typer.Option(
        None, "--controllers", "-c",
        help="Only these RT controllers, e.g. gcc, tcp-bbr, gcc+copa (repeatable or comma-separated)."))
    trace: Optional[Path] = _option(typer.Option(
        None, help="Bandwidth trace ('time_s Mbps') to use instead of the scenario's link rate or trace."))
    engine: Optional[str] = _option(typer.Option(
        None, help="Engine instead of the scenario's: qemu (Debian's kernel, real time) "
                   "or uml (User-Mode Linux, virtual time)."))
    kernel: Optional[str] = _option(typer.Option(
        None, help="Kernel generation instead of the scenario's: 6.1 (Debian 12's) or 6.12 "
                   "(Debian 13's and OpenWrt 25.12's; make uml-6.12, or qemu-6.12 kmod-6.12)."))


def _choice_parameters() -> List[inspect.Parameter]:
    """The choice's fields as the parameters typer reads (a parameter's default is its option)."""
    types = typing.get_type_hints(_ScenarioChoice)
    return [inspect.Parameter(f.name, inspect.Parameter.POSITIONAL_OR_KEYWORD, default=f.metadata["option"],
                              annotation=types[f.name]) for f in fields(_ScenarioChoice)]


def _scenario_command(name: str):
    """Registers `name`, a command whose function takes a _ScenarioChoice first and its own
    options after it: the command line lists the choice's options, then the function's."""
    def register(function):
        shared = _choice_parameters()
        own = list(inspect.signature(function, eval_str=True).parameters.values())[1:]

        def command(**values):
            choice = _ScenarioChoice(**{p.name: values.pop(p.name) for p in shared})
            return function(choice, **values)

        command.__signature__ = inspect.Signature(shared + own)
        command.__doc__ = function.__doc__
        return app.command(name)(command)
    return register


def _load_scenarios(choice: _ScenarioChoice):
    """The scenario, or each point of its grid."""
    from confucius.experiment import grid, scenario

    try:
        return grid.load_points(choice.scenario, trace=choice.trace, engine=choice.engine, kernel=choice.kernel)
    except scenario.ScenarioError as err:
        _fail(str(err))


def _names(values: Optional[List[str]]) -> Optional[List[str]]:
    """Repeatable options that also take comma-separated lists."""
    if not values:
        return None
    return [name for value in values for name in value.split(",") if name]


def _run_scenario(choice: _ScenarioChoice, db: Optional[Path], results: Optional[Path], resume: bool,
                  attempts: int, max_failures: int, echo: bool, workers: int = 1,
                  address: Optional[str] = None) -> None:
    runs = failed = 0
    for loaded in _load_scenarios(choice):
        report = _run_one(loaded, choice, db, results, resume, attempts, max_failures, echo, workers, address)
        runs, failed = runs + report.runs, failed + report.failed
    if runs and failed == runs:
        raise typer.Exit(1)


def _run_one(loaded, choice: _ScenarioChoice, db: Optional[Path], results: Optional[Path], resume: bool,
             attempts: int, max_failures: int, echo: bool, workers: int, address: Optional[str]):
    from confucius.cluster import ClusterError
    from confucius.experiment import scenario as scenario_module
    from confucius.experiment.db import DatabaseError
    from confucius.lab import runner

    try:
        report = runner.run_matrix(loaded, db_path=db or runner.DEFAULT_DB,
                                   results_root=results or runner.DEFAULT_RESULTS,
                                   schedulers=_names(choice.schedulers), controllers=_names(choice.controllers),
                                   resume=resume, attempts=attempts, max_failures=max_failures,
                                   progress=sys.stderr.isatty() and not echo, echo=echo,
                                   workers=workers, address=address)
    except (runner.RunnerError, scenario_module.ScenarioError, DatabaseError, ClusterError) as err:
        _fail(str(err))
    except KeyboardInterrupt:
        typer.echo(f"interrupted: the runs that finished are in {db or runner.DEFAULT_DB} "
                   f"(`confucius lab matrix` resumes from them)", err=True)
        raise typer.Exit(130)
    typer.echo(f"{loaded.name}: {report.runs} runs ({report.failed} failed), "
               f"{report.units_valid} valid measurements, {report.units_invalid} invalid; "
               f"database {db or runner.DEFAULT_DB}", err=True)
    return report


# The options of the commands that run a scenario.
_RUN_DB = typer.Option(None, help="Results database \\[default: results/lab/lab.sqlite].")
_RESULTS = typer.Option(None, help="Folder for the runs' raw logs \\[default: results/lab/runs].")
_ECHO = typer.Option(False, help="Print the VM consoles instead of a progress bar.")
_WORKERS = typer.Option(1, min=1, help="VMs at once, on a local Dask cluster (one core each); only in "
                                       "virtual time (uml).")
_DASK_SCHEDULER = typer.Option(None, "--scheduler",
                               help="A Dask scheduler's address (tcp://host:8786) whose workers run the "
                                    "VMs (uml; each needs this tree, built, and the results folder at the "
                                    "same paths).")


@app.command("soak")
def soak_command(
    minutes: float = typer.Option(30.0, help="Minutes of mixed traffic with a `tc qdisc change` every second."),
    out: Path = typer.Option(Path("results") / "soak", help="Folder for summary.txt, summary.json and the run."),
    kernel: str = typer.Option("uml-debug", help="uml-debug (make uml-debug kmod-uml-debug), x86-debug "
                                                 "(qemu, 2 vCPUs, DEBUG_ATOMIC_SLEEP: make debug-kernel-x86 "
                                                 "kmod-x86-debug), or uml for a trial without the checkers."),
):
    """Soak sch_confucius in a debug kernel and print what KASAN, lockdep, UBSAN, debug
    objects and kmemleak found; exit 1 on any finding."""
    from confucius.lab import soak

    try:
        summary = soak.run(minutes, out, kernel=kernel)
    except soak.LabError as err:
        _fail(str(err))
    typer.echo(soak.format_summary(summary))
    typer.echo(f"summary written to {out / 'summary.txt'} and {out / 'summary.json'}")
    raise typer.Exit(1 if summary["blockers"] else 0)


@_scenario_command("run")
def run_scenario_command(
    choice: _ScenarioChoice,
    db: Optional[Path] = _RUN_DB,
    results: Optional[Path] = _RESULTS,
    workers: int = _WORKERS,
    scheduler: Optional[str] = _DASK_SCHEDULER,
    echo: bool = _ECHO,
):
    """Run SCENARIO for each scheduler (one VM boot per run), measuring everything afresh."""
    _run_scenario(choice, db, results, resume=False, attempts=1, max_failures=1, echo=echo,
                  workers=workers, address=scheduler)


@_scenario_command("matrix")
def matrix_command(
    choice: _ScenarioChoice,
    db: Optional[Path] = _RUN_DB,
    results: Optional[Path] = _RESULTS,
    attempts: int = typer.Option(3, min=1, help="Tries per measurement (disturbed or failed ones are redone)."),
    max_failures: int = typer.Option(3, min=1, help="Stop after this many failed runs in a row."),
    workers: int = _WORKERS,
    scheduler: Optional[str] = _DASK_SCHEDULER,
    echo: bool = _ECHO,
):
    """Run SCENARIO's whole matrix, resuming: measurements already in the database are skipped."""
    _run_scenario(choice, db, results, resume=True, attempts=attempts, max_failures=max_failures, echo=echo,
                  workers=workers, address=scheduler)


@_scenario_command("plan")
def plan_command(
    choice: _ScenarioChoice,
    db: Optional[Path] = typer.Option(None, help="Results database to resume from."),
):
    """Check SCENARIO and show the runs a matrix would do (with --db: what is left)."""
    from rich.console import Console

    from confucius.experiment.db import Database, DatabaseError
    from confucius.lab import runner

    scenarios = _load_scenarios(choice)
    try:
        database = Database(db) if db else None
        for loaded in scenarios:
            tasks = runner.plan(loaded, database, schedulers=_names(choice.schedulers),
                                controllers=_names(choice.controllers))
            Console().print(_plan_table(loaded, tasks))
    except (DatabaseError, runner.RunnerError) as err:
        _fail(str(err))


def _plan_table(loaded, tasks):
    from rich.table import Table

    from confucius.experiment import keys

    table = Table(title=f"{loaded.name}: {len(tasks)} runs, {sum(t.units for t in tasks)} measurements")
    for column in ("scheduler", "controller", "rep", "pages", "tc (bottleneck)"):
        table.add_column(column)
    for task in tasks:
        setup = keys.tc_setup(loaded, task.cell)
        table.add_row(task.cell.scheduler.name, task.cell.controller, str(task.cell.repetition),
                      ", ".join(unit.ref.key for unit in task.pages[:4]) + (" ..." if len(task.pages) > 4 else ""),
                      "\n".join(setup.own_lines()))
    return table


@app.command("merge")
def merge_command(
    sources: List[Path] = typer.Argument(..., help="Results databases to copy from (read only; "
                                                   "NAME.sqlite.xz as `lab export` writes it too)."),
    db: Path = typer.Option(..., help="Results database to copy into (made if missing)."),
):
    """Copy into --db every run of SOURCES it lacks, with its pages, flows, frames and
    samples: a matrix measured in several processes or on several machines reads as one
    (each then resumes from the merged database). Runs already there are skipped."""
    from confucius.experiment.db import Database, DatabaseError, check_source

    try:
        for source in sources:
            check_source(source)
        with Database(db) as database:
            for source in sources:
                copied = database.merge(source)
                typer.echo(f"{source}: {copied.get('runs', 0)} runs ({copied.get('pages', 0)} page loads) and "
                           f"{copied.get('percca_runs', 0)} per-CCA runs copied into {db}")
    except DatabaseError as err:
        _fail(str(err))


def _since(text: Optional[str]) -> Optional[float]:
    """Unix seconds, or an ISO 8601 time (UTC unless it names its zone)."""
    if text is None:
        return None
    try:
        return float(text)
    except ValueError:
        pass
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        raise typer.BadParameter(f"{text!r} is neither unix seconds nor an ISO 8601 time") from None
    return (moment if moment.tzinfo else moment.replace(tzinfo=timezone.utc)).timestamp()


@app.command("export")
def export_command(
    source: Path = typer.Argument(..., help="Results database to export from (read only; NAME.sqlite.xz too)."),
    out: Path = typer.Option(..., help="New database to write; NAME.sqlite.xz is compressed."),
    since: Optional[str] = typer.Option(None, help="Only the runs started at or after this time "
                                                   "(unix seconds or ISO 8601, UTC by default)."),
    samples: bool = typer.Option(False, help="Keep the qdisc's and flows' time series and every frame."),
):
    """Write the runs of SOURCE (or those since a time) to a new database that `lab merge`
    and `report` read: by default without the time series that only the timelines read,
    and with the RT flows' frames around each page load alone. How the project keeps its
    measurements between machines (data/README.md)."""
    from confucius.experiment.db import DatabaseError, export

    try:
        kept = export(source, out, since_unix=_since(since), samples=samples)
    except DatabaseError as err:
        _fail(str(err))
    typer.echo(f"{out}: {kept.get('runs', 0)} runs ({kept.get('pages', 0)} page loads, "
               f"{kept.get('frames', 0)} frames) and {kept.get('percca_runs', 0)} per-CCA runs, "
               f"{out.stat().st_size / 1e6:.1f} MB")


@app.command("schedulers")
def schedulers_command():
    """The schedulers a scenario can name, and what stands for each in the kernel."""
    from rich.console import Console
    from rich.table import Table

    from confucius.experiment import schedulers as sched

    table = Table(title="Schedulers (20 Mbit/s, 1000-packet buffer, RT flow on port 5000)")
    for column in ("name", "what", "tc at the bottleneck"):
        table.add_column(column)
    for s in sched.SCHEDULERS.values():
        setup = sched.tc_setup(s.name, rate_bps=20e6, buffer_packets=1000, rt_ports=[5000])
        table.add_row(s.name, s.summary, "\n".join(setup.own_lines()))
    Console().print(table)
