# SPDX-License-Identifier: MIT
"""The lab's engines at work: a planned task (experiment/plan.py) becomes one VM boot under
qemu or UML, its spec (contract.RunSpec), its results folder read back and a `runs` row;
a matrix stores each run as it finishes.

    report = run_matrix(scenario.load("scenarios/demo.toml"), db_path=db)

`QEMU` and `UML` are the two engines the registry (experiment/engines.py) names: each
measures a task (`measure`), says which of the project's programs a scenario's runs use
(`programs`) and which TCP congestion controls its kernel has (`ccas`). `matrix` resumes
what the plan leaves to do; `run` measures everything afresh.
"""

from __future__ import annotations

import json
import platform
import re
import secrets
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Callable, Iterator, Sequence

from confucius import cluster, rtflow
from confucius.experiment import db_runs, engines, keys, plan as planning
from confucius.experiment import schedulers as sched
from confucius.experiment import workload
from confucius.experiment.db import DEFAULT_DB, Database
from confucius.experiment.engines import DEFAULT_GENERATION, GENERATIONS, Program
from confucius.experiment.keys import Cell, load_phase_s, rt_ports
from confucius.experiment.plan import Task
from confucius.experiment.progress import Progress
from confucius.experiment.results import DISTURBED_GAP_MS, HostSample, Measurement, ResultsError, RunData, host_load
from confucius.experiment.scenario import UML_SEED_MAX, Scenario, ScenarioError, SchedulerChoice
from confucius.provenance import program_digest, programs_not_as_recorded
from confucius.web.page import Page, write_page
from confucius.web.protocols import domain_protocols

from . import contract as c
from . import flent_files, topology, uml, vm
from .contract import GUEST_TIMING, RunSpec
from .engine import in_guest
from .run_folder import read_run

REPO = vm.REPO
# Before a run in real time, the runner waits while the hypervisor takes more than
# STEAL_LIMIT of the host's CPU time (measured over STEAL_WINDOW_S), at most STEAL_WAIT_MAX_S:
# the lab's low warm-ups followed steal.
STEAL_LIMIT = 0.05
STEAL_WINDOW_S = 5.0
STEAL_WAIT_MAX_S = 600.0
TOOLS = REPO / "build" / "cargo" / "release"
DEFAULT_RESULTS = REPO / "results" / "lab" / "runs"
BOOT_ALLOWANCE_S = 120.0
# TCP congestion controls Linux always has; the rest are modules of the lab's kernel.
BUILTIN_CCAS = ("cubic", "reno")
# The `[web] http` the lab's web tools speak (tools/web: HTTP/1.1 and HTTP/2, no QUIC).
LAB_HTTP = ("h1", "h2")


class RunnerError(RuntimeError):
    """The matrix cannot start (missing parts) or stopped (too many failed runs)."""


# --------------------------------------------------------------------------- planning

def plan(scenario: Scenario, db: Database | None, *, schedulers=None, controllers=None,
         resume: bool = True, attempts: int = 3) -> list[Task]:
    """The runs still to do (experiment/plan.py). Without `resume` (or `db`) every unit is
    measured again; with them, only by the programs that measured the cells' units already
    in `db`."""
    if scenario.link.traces is not None:
        raise RunnerError(f"{scenario.path}: link.traces: the lab plays one trace per run, not a trace drawn "
                          f"per load; run a set in the simulator (confucius sim), or give trace")
    if scenario.link.bottleneck != "router":
        raise RunnerError(f"{scenario.path}: link.bottleneck = {scenario.link.bottleneck!r}: the lab's bottleneck is "
                          f"the router's link; run a bottleneck before or after it in the simulator (confucius sim)")
    if scenario.web is not None and scenario.web.http not in LAB_HTTP:
        raise RunnerError(f"{scenario.path}: web.http = {scenario.web.http!r}: the lab's web-client speaks "
                          f"HTTP/1.1 and HTTP/2, not HTTP/3 (QUIC); run it in the simulator (confucius sim)")
    chosen = planning.cells(scenario, schedulers, controllers)
    if db is None or not resume:
        return planning.plan(scenario, chosen, lambda cell: keys.cell_key(scenario, cell), attempts=attempts)
    digests = program_digests(project_parts(scenario.engine, scenario.kernel))

    def programs_of(cell: Cell) -> dict[str, str | None]:
        return {name: digests[name] for name in built_parts(scenario, [cell.scheduler])}
    return planning.plan(scenario, chosen, lambda cell: keys.cell_key(scenario, cell), db,
                         programs_of=programs_of, attempts=attempts)


def bottleneck_commands(scenario: Scenario, cell: Cell) -> list[str]:
    """The tc batch lines that set up the cell's bottleneck in the router's namespace, all
    of them (HTB's bucket as the scenario's engine needs it; the upload's shaping after the
    download's, if the scenario shapes it): the run's record, stored with it
    (runs.tc_commands) and the only thing the guest installs (guest.run.build_topology)."""
    return keys.tc_commands(scenario, cell, topology.htb_burst_s(scenario.engine))


def run_seed(scenario: Scenario, cell: Cell) -> int | None:
    """The seed of one run's guest: the scenario's, or under uml a fresh one (recorded
    with the run, so that the run can be repeated)."""
    seed = keys.scenario_seed(scenario, cell)
    if seed is None and scenario.engine == "uml":
        return secrets.randbelow(UML_SEED_MAX + 1)
    return seed


def write_inputs(pages: list[Page], directory: Path, seen_as: Callable[[Path], str], http: str = "h1") -> dict:
    """Page files and a hosts file (one server address per domain) for one run; returns
    the paths, as the guest sees them (`seen_as`), each page's domains that speak HTTP/2
    (`[web] http`, web/protocols.py), and addresses for the run's spec."""
    directory.mkdir(parents=True, exist_ok=True)
    domains = sorted({d for p in pages for d in p.domains})
    addresses = topology.domain_addresses(len(domains))
    hosts = directory / "hosts.txt"
    hosts.write_text("".join(f"{a} {d}\n" for a, d in zip(addresses, domains)))
    files = []
    for number, p in enumerate(pages):
        path = directory / f"page-{number}.json"
        write_page(p, path)
        http2 = sorted(d for d, version in domain_protocols(p, http).items() if version == "h2")
        files.append({"id": p.id, "file": seen_as(path), "http2": http2})
    return {"pages": files, "hosts": seen_as(hosts), "addresses": addresses}


# --------------------------------------------------------------------------- checks, versions

def project_parts(engine: str, kernel: str = DEFAULT_GENERATION) -> dict[str, Program]:
    """Every program of the project that a run on `engine` with the `kernel` generation may
    use, by the names the runs' `versions` record their digests under: each one's path and
    the make target that builds it (under uml, the UML kernel too)."""
    flavour = GENERATIONS[kernel]
    suffix = "" if flavour == "lab" else f"-{flavour}"
    kmod = f"make kmod-uml{suffix}" if engine == "uml" else f"make kmod{suffix}"
    parts = {"rtflow": (rtflow.BINARY, "make tools"), "web-client": (TOOLS / "web-client", "make tools"),
             "web-server": (TOOLS / "web-server", "make tools"),
             "sch_confucius.ko": (engines.engine(engine).machine.modules_dir(flavour) / "sch_confucius.ko", kmod),
             "q_confucius.so": (vm.TC_PLUGINS / "q_confucius.so", "make tc")}
    if engine == "uml":
        parts["uml"] = (uml.FLAVOURS[flavour][0] / "linux", f"make {uml.make_target(flavour)}")
    return parts


def used_parts(engine: str, *, rt: bool, web: bool, confucius: bool,
               kernel: str = DEFAULT_GENERATION) -> dict[str, Program]:
    """Those of project_parts that runs with RT flows, page loads and confucius use."""
    used = {"rtflow": rt, "web-client": web, "web-server": web, "sch_confucius.ko": confucius,
            "q_confucius.so": confucius, "uml": True}
    return {name: part for name, part in project_parts(engine, kernel).items() if used[name]}


def built_parts(scenario: Scenario, schedulers: Sequence[SchedulerChoice] | None = None) -> dict[str, Program]:
    """The programs that the scenario's runs use (only its runs under `schedulers`, if given)."""
    chosen = scenario.schedulers if schedulers is None else schedulers
    return used_parts(scenario.engine, rt=any(scenario.rt_sets), web=scenario.web is not None,
                      confucius=any(sched.SCHEDULERS[c.base].kind == "confucius" for c in chosen),
                      kernel=scenario.kernel)


def program_digests(parts: dict[str, Program]) -> dict[str, str | None]:
    return {name: program_digest(path) for name, (path, _) in parts.items()}


def check_built(scenario: Scenario) -> None:
    """Refuse to start when a part the scenario needs is not built, naming the make target."""
    missing = [f"{path} (build it with `{target}`)" for path, target in built_parts(scenario).values()
               if not path.is_file()]
    if missing:
        raise RunnerError("missing built parts:\n  " + "\n  ".join(missing))
    if scenario.engine == "uml":  # every uml run is seeded (run_seed)
        try:
            uml.check_seedable(uml.FLAVOURS[GENERATIONS[scenario.kernel]][0] / "linux")
        except uml.LabError as err:
            raise RunnerError(str(err)) from None
    tools = ("iperf3", "irtt", "tc") + (("netperf", "netserver", "ping") if scenario.flent else ())
    for tool in tools:
        if shutil.which(tool) is None:
            raise RunnerError(f"{tool} is not installed (run `make deps`)")
    if scenario.flent and not flent_files.FLENT.is_file():
        raise RunnerError(f"Flent is not installed in the virtualenv ({flent_files.FLENT}; run `make venv`)")


def _first_line(argv: list[str]) -> str | None:
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return None
    text = (done.stdout or done.stderr).strip()
    return text.splitlines()[0] if text else None


def provenance(engine: str = "qemu", kernel: str = DEFAULT_GENERATION) -> dict:
    """What produced a run: the commit, whether the tree had changes, tools and binaries."""
    commit = _first_line(["git", "-C", str(REPO), "rev-parse", "HEAD"])
    status = subprocess.run(["git", "-C", str(REPO), "status", "--porcelain", "--untracked-files=no"],
                            capture_output=True, text=True).stdout
    return {
        "git_commit": commit, "git_dirty": bool(status.strip()), "git_changed": status.split("\n")[:50],
        "qemu": _first_line([vm.QEMU, "--version"]), "tc": _first_line(["tc", "-V"]),
        "iperf3": _first_line(["iperf3", "--version"]), "irtt": _first_line(["irtt", "version"]),
        "netperf": _first_line(["netperf", "-V"]), "flent": _first_line([str(flent_files.FLENT), "--version"]),
        "python": platform.python_version(), "host_kernel": platform.release(),
        "binaries_sha256": program_digests(project_parts(engine, kernel)),
    }


# --------------------------------------------------------------------------- one run

def fair_share_bps(scenario: Scenario, cell: Cell) -> float:
    """What one RT flow of the cell can reach during its warm-up: the link's first rate
    shared with the other RT and bulk flows, at most the RT flows' `max_rate`."""
    competitors = max(1, len(cell.rt) + len(scenario.bulk))
    return min(keys.initial_rate_bps(scenario) / competitors, scenario.rt.max_rate_bps)


def build_spec(scenario: Scenario, task: Task, inputs: dict) -> RunSpec:
    link, rt = scenario.link, scenario.rt
    fair = fair_share_bps(scenario, task.cell)
    flows = [c.RtFlowSpec(mode=f.mode, cca=f.cca, rate=None if f.rate_bps is None else f"{f.rate_bps:.0f}bit",
                          label=f.label, port=port, fair_bps=fair)
             for f, port in zip(task.cell.rt, rt_ports(scenario, task.cell))]
    web = scenario.web
    return RunSpec(
        format=c.SPEC_FORMAT, scenario=scenario.name, cell_key=task.cell_key,
        mode="flent" if scenario.flent else web.mode if web else "timed",
        topology=c.TopologySpec(rtt=f"{link.rtt_s * 1e3:g}ms", kind=sched.scheduler(task.cell.scheduler.base).kind,
                                shaping=link.shaping, clients=link.clients, nat=link.nat),
        tc_commands=bottleneck_commands(scenario, task.cell),
        trace=None if link.trace is None else c.TraceSpec(path=str(link.trace), scale=link.trace_scale,
                                                          offset_s=link.trace_offset_s),
        rt=c.RtSpec(flows=flows, fps=rt.fps, start_rate=f"{rt.start_rate_bps:.0f}bit",
                    min_rate=f"{rt.min_rate_bps:.0f}bit", max_rate=f"{rt.max_rate_bps:.0f}bit",
                    retransmit_window=f"{rt.retransmit_s * 1e3:g}ms", cpu=rt.cpu),
        warmup=scenario.warmup,
        web=None if web is None else c.WebSpec(cca=web.cca, max_per_domain=web.max_per_domain,
                                               timeout_s=web.timeout_s, interval_s=web.interval_s,
                                               settle_s=web.settle_s),
        pages=[c.PageSpec(**page, key=unit.ref.key, unit_key=unit.key, phase_s=load_phase_s(scenario, task.cell, unit.ref))
               for page, unit in zip(inputs.get("pages", []), task.pages)],
        hosts=inputs.get("hosts"), addresses=inputs.get("addresses", []),
        bulk=list(scenario.bulk), probes=scenario.probes,
        duration_s=scenario.duration_s, stats_interval_s=scenario.stats_interval_s,
        binaries=c.Binaries(web_client=str(TOOLS / "web-client"), web_server=str(TOOLS / "web-server")),
        flent=scenario.flent,
    )


def vm_timeout(scenario: Scenario, task: Task) -> float:
    """Every wait in the guest has a cap; the VM gets their sum, with room for the boot."""
    w = scenario.warmup
    timing = GUEST_TIMING
    writers = timing.write_results_s if scenario.probes or scenario.bulk else 0.0
    if scenario.flent is not None:
        return BOOT_ALLOWANCE_S + len(scenario.flent.tests) * flent_files.allowance_per_test_s(scenario.flent)
    if scenario.web is None:
        return BOOT_ALLOWANCE_S + w.max_s + scenario.duration_s + 60 + writers
    web = scenario.web
    warmups = (w.retries + 1) * (w.max_s + timing.idle_s + 10)
    per_page = warmups + w.phase_s + web.interval_s + web.timeout_s + web.settle_s + timing.idle_s + 30
    return BOOT_ALLOWANCE_S + per_page * len(task.pages) + writers


def _run_dir(root: Path, scenario: Scenario, task: Task) -> Path:
    stamp = time.strftime("%Y%m%d-%H%M%S")
    name = f"{stamp}-{task.cell.scheduler.name}-{task.cell.controller}-r{task.cell.repetition}-c{task.chunk}"
    path = root / scenario.name / name.replace(":", "_").replace("/", "_")
    path.parent.mkdir(parents=True, exist_ok=True)
    suffix = 1
    while True:
        try:
            path.mkdir()
            return path
        except FileExistsError:
            path = path.with_name(f"{path.name.split('~')[0]}~{suffix}")
            suffix += 1


def _run_row(scenario: Scenario, task: Task, spec: RunSpec, directory: Path, versions: dict,
             seed: int | None) -> dict:
    """The `runs` row: the spec's record of what ran, with the cell and the scenario's link."""
    cell = task.cell
    return {
        "cell_key": spec.cell_key, "scheduler": cell.scheduler.name, "scheduler_base": cell.scheduler.base,
        "scheduler_options": cell.scheduler.options, "tc_commands": json.dumps(spec.tc_commands),
        "controller": cell.controller, "rt_flows": json.dumps(spec.rt.to_dict()), "repetition": cell.repetition,
        "mode": spec.mode, "link_rate_bps": scenario.link.rate_bps,
        "trace": str(scenario.link.trace) if scenario.link.trace else None, "rtt_s": scenario.link.rtt_s,
        "buffer_packets": scenario.link.buffer_packets, "results_dir": str(directory),
        "engine": scenario.engine, "time_mode": engines.entry(scenario.engine).time_mode, "seed": seed,
        "git_commit": versions.get("git_commit"), "git_dirty": int(bool(versions.get("git_dirty"))),
        "versions": json.dumps(versions, sort_keys=True), "spec": json.dumps(spec.to_dict(), sort_keys=True),
    }


def _measured(scenario: Scenario, data: RunData) -> dict:
    if scenario.flent is not None:  # valid: every test ran and left a summary
        return {"valid": int(len(data.flent) == len(scenario.flent.tests)
                             and all(test.summary is not None and test.error is None for test in data.flent))}
    m = data.measured
    if m is None:
        return {}
    gap = data.measured_gap_ms
    return {"measure_from_ns": m.from_ns, "measure_to_ns": m.to_ns, "warmup_s": m.warmup_s,
            "converged": int(m.converged), "sender_max_gap_ms": gap,
            "valid": int(gap <= DISTURBED_GAP_MS)}


def _plot_flent(data: RunData) -> None:
    """Flent's own plot beside each of the run's data files (drawn here: matplotlib on the
    host, not in the guest); a plot that fails is noted, the measurement stands."""
    for test in data.flent:
        if test.data_file is not None:
            test.plot, test.plot_error = flent_files.plot(test.data_file)


def wait_for_low_steal(measure: Callable[[float], float] | None = None,
                       limit: float = STEAL_LIMIT, wait_max_s: float = STEAL_WAIT_MAX_S) -> float:
    """Wait until the host's CPU steal over one window is at most `limit` (or `wait_max_s`
    has passed); return the seconds waited. `measure(seconds)` gives the steal share of a
    window of that length (the host's, from /proc/stat, by default)."""
    measure = measure or steal_over
    waited = 0.0
    while waited < wait_max_s and measure(STEAL_WINDOW_S) > limit:
        waited += STEAL_WINDOW_S
    return waited


def steal_over(seconds: float) -> float:
    """The share of the host's CPU time its hypervisor took over the next `seconds`."""
    before = HostSample.now()
    time.sleep(seconds)
    return host_load(before, HostSample.now())["steal"]


def in_virtual_time(scenario: Scenario) -> bool:
    """Whether the scenario's engine keeps a clock that no host load can shape (uml's
    inf-cpu): its runs need no low steal and may run side by side."""
    return engines.entry(scenario.engine).virtual


def _failure(result: vm.VMResult, directory: Path) -> str | None:
    """Why the run failed (with the end of the guest's log), or None."""
    try:
        result.check()
        return None
    except vm.LabError as err:
        guest_log = directory / "guest.log"
        tail = guest_log.read_text(errors="replace")[-3000:] if guest_log.is_file() else ""
        return f"{err}\nguest.log:\n{tail}"


def measure(task: Task, scenario: Scenario, results_root: Path, versions: dict,
            echo: bool = False) -> Measurement:
    """Boot the VM for one task and read what it left (here or on a Dask worker)."""
    check_programs_recorded(scenario, task, versions)
    directory = _run_dir(results_root, scenario, task)
    inputs = write_inputs([workload.page(scenario, unit.ref) for unit in task.pages], directory / "inputs",
                          lambda path: in_guest(directory, path), scenario.web.http) if task.pages else {}
    spec = build_spec(scenario, task, inputs)
    spec.write(directory / "spec.json")
    seed = run_seed(scenario, task.cell)
    row = _run_row(scenario, task, spec, directory, versions, seed)
    engine = engines.engine(scenario.engine)
    engine_options = {"flavour": GENERATIONS[scenario.kernel]}
    if seed is not None:
        engine_options["seed"] = seed
    paused = 0.0 if in_virtual_time(scenario) else wait_for_low_steal()
    started, host_before = time.time(), HostSample.now()
    data, error = None, None
    try:
        result = engine.boot(f'exec "{sys.executable}" -m confucius.lab.guest "$1" >"$RESULTS/guest.log" 2>&1',
                        args=[in_guest(directory, directory / "spec.json")], results_dir=directory,
                        timeout=vm_timeout(scenario, task), echo=echo, **engine_options)
        row.update(boot_s=result.boot_time, guest_kernel=result.kernel)
        error = _failure(result, directory)
        # A guest that stopped part-way leaves the pages it finished; a kernel that
        # reported a problem leaves nothing to trust.
        if not result.kernel_problems():
            data = read_run(directory)
            _plot_flent(data)
    except (vm.LabError, ResultsError) as err:
        error = error or str(err)
    row.update(started_unix=started, duration_s=time.time() - started,
               host_load=json.dumps({**host_load(host_before, HostSample.now()), "paused_s": paused}),
               status="ok" if error is None else "failed", error=error)
    if data is not None:
        row.update(_measured(scenario, data))
    return Measurement(row, data, error)


def check_programs_recorded(scenario: Scenario, task: Task, versions: dict) -> None:
    """Refuse a task whose programs here are not those `versions` records with its result:
    a worker built from another tree, or a part rebuilt since the matrix started."""
    used = {name: path for name, (path, _) in built_parts(scenario, [task.cell.scheduler]).items()}
    differ = programs_not_as_recorded(versions.get("binaries_sha256") or {}, used)
    if differ:
        raise RunnerError(f"{platform.node()} runs other programs than the matrix records "
                          f"({'; '.join(differ)}): build the same tree wherever its tasks run")


def measurements(tasks: Sequence[Task], scenario: Scenario, results_root: Path, versions: dict,
                 echo: bool = False, workers: int = 1,
                 address: str | None = None) -> Iterator[tuple[Task, Measurement]]:
    """Each task's measurement as it finishes: here, one after the other, or on Dask
    (cluster.as_completed: a local cluster of `workers`, or the scheduler at `address`),
    one VM per worker. A run in real time takes the machine's slot (engine.machine_slot),
    so run_matrix keeps qemu's runs here; UML's in virtual time may run side by side."""
    if workers == 1 and address is None:
        for task in tasks:
            yield task, measure(task, scenario, results_root, versions, echo)
        return
    for task, measured, error, _ in cluster.as_completed(measure, tasks, scenario, results_root, versions, echo,
                                                          address=address, workers=workers):
        if error is not None:
            raise RunnerError(f"{task_name(task)} raised on its worker: {error}")
        yield task, measured


def task_name(task: Task) -> str:
    cell = task.cell
    return (f"{cell.scheduler.name} / {cell.controller} / rep {cell.repetition}"
            f"{f' / {len(task.pages)} pages' if task.pages else ''}")


# --------------------------------------------------------------------------- the matrix

@dataclass
class MatrixReport:
    runs: int = 0
    failed: int = 0
    units_valid: int = 0
    units_invalid: int = 0
    run_ids: list[int] = field(default_factory=list)


def run_matrix(scenario: Scenario, *, db_path: Path = DEFAULT_DB, results_root: Path = DEFAULT_RESULTS,
               schedulers=None, controllers=None, resume: bool = True, attempts: int = 3,
               max_failures: int = 3, progress: bool = True, echo: bool = False, workers: int = 1,
               address: str | None = None,
               on_run: Callable[[Task, RunData | None, str | None], None] | None = None) -> MatrixReport:
    """Run what is still to do (`measurements`: with more than one worker or a scheduler's
    `address`, on Dask) and store each run as it finishes; stop after `max_failures` failed
    runs in a row."""
    if (workers > 1 or address) and not in_virtual_time(scenario):
        raise RunnerError(f"{scenario.engine} runs in real time, one VM at a time per machine (its runs would "
                          f"only queue, and record the wait): run it without --workers and --scheduler, or "
                          f"use --engine uml")
    check_built(scenario)
    planning.cells(scenario, schedulers, controllers)  # unknown names are refused before anything is written
    report = MatrixReport()
    with Database(db_path) as db:
        tasks = plan(scenario, db, schedulers=schedulers, controllers=controllers, resume=resume,
                     attempts=attempts)
        if not tasks:
            return report
        scenario_id = db.scenario_id(scenario.name, scenario.digest, str(scenario.path), scenario.text)
        versions = provenance(scenario.engine, scenario.kernel)
        failures_in_row = 0
        with Progress(progress, sum(t.units for t in tasks)) as bar:
            bar.describe(f"{scenario.name}: {len(tasks)} runs")
            for task, measured in measurements(tasks, scenario, results_root, versions, echo, workers, address):
                data, error = measured.data, measured.error
                run_id = db_runs.store_run(db, scenario_id, measured.row, data)
                report.runs += 1
                report.run_ids.append(run_id)
                if on_run:
                    on_run(task, data, error)
                valid = _valid_units(scenario, data) if data is not None else 0
                report.units_valid += valid
                report.units_invalid += task.units - valid
                if error:
                    report.failed += 1
                    failures_in_row += 1
                    bar.note(f"run {run_id} failed: {error.splitlines()[0]}")
                    if failures_in_row >= max_failures:
                        raise RunnerError(f"{failures_in_row} runs in a row failed; the last: {error}")
                else:
                    failures_in_row = 0
                bar.finished(task_name(task), task.units)
    return report


def _valid_units(scenario: Scenario, data: RunData) -> int:
    if data.pages:
        return sum(p.valid for p in data.pages)
    return int(bool(_measured(scenario, data).get("valid")))


# --------------------------------------------------------------------------- the engines

def debian_kernel_ccas() -> tuple[str, ...]:
    """TCP congestion controls Debian's kernel offers: the built-ins and its tcp_* modules."""
    try:
        kernel = vm.detect_kernel()
    except vm.LabError as err:
        raise ScenarioError(f"cannot list the lab kernel's TCP congestion controls: {err}") from None
    modules = kernel.modules / "kernel" / "net" / "ipv4"
    names = {p.name.split(".ko")[0].removeprefix("tcp_") for p in modules.glob("tcp_*.ko*")}
    names -= {"diag"}  # tcp_diag is socket diagnostics, not a congestion control
    return tuple(sorted(set(BUILTIN_CCAS) | names))


def uml_kernel_ccas() -> tuple[str, ...]:
    """TCP congestion controls the UML kernel builds in (its configuration fragment)."""
    built = re.findall(r"^CONFIG_TCP_CONG_([A-Z0-9]+)=y", uml.CONFIG.read_text(), re.M)
    return tuple(sorted({"reno", *(n.lower() for n in built if n != "ADVANCED")}))


@dataclass(frozen=True)
class VmEngine(engines.Registered):
    """qemu or UML as the registry names them (experiment/engines.py's Engine), and as a
    VM that boots a script (`boot`, for per-CCA runs)."""
    name: str
    machine: ModuleType                         # vm or uml: boots its kernels, finds their modules
    kernel_ccas: Callable[[], tuple[str, ...]]

    def ccas(self) -> tuple[str, ...]:
        return self.kernel_ccas()

    def programs(self, scenario: Scenario, schedulers: Sequence[SchedulerChoice] | None = None) -> dict[str, Program]:
        return built_parts(scenario, schedulers)

    def measure(self, task: Task, scenario: Scenario, results_root: Path, versions: dict,
                echo: bool = False) -> Measurement:
        return measure(task, scenario, results_root, versions, echo)

    def boot(self, script: str, **options):
        """Run `script` as root in this engine's VM (vm.run, uml.run): its VMResult."""
        return self.machine.run(script, **options)


QEMU = VmEngine("qemu", vm, debian_kernel_ccas)
UML = VmEngine("uml", uml, uml_kernel_ccas)
