# SPDX-License-Identifier: MIT
"""Runs a scenario: one VM boot per run, results parsed into the database.

A scenario expands into *cells* (scheduler × RT controller(s) × repetition) and, with page
loads, each cell into *units*: one page measured under the cell's conditions. A unit's key
is a digest of everything that shapes the measurement (link, tc setup, RT settings, warm-up,
Web settings, bulk flows, probes, repetition and the page's content), not of the scenario
file as a whole: adding a scheduler or pages to a scenario adds units and keeps the
measured ones. A run loads up to `pages_per_run` pending pages of one cell in one boot.

`matrix` resumes: units with a valid result are skipped, invalid ones (disturbed, failed
load) are tried again up to `attempts` times in all. `run` measures everything afresh.
Runs are ordered page chunk first, then controller, then scheduler, so that a change in
the host's load over hours touches every scheduler alike; chunks are cut from the whole
page list, so resuming keeps each page in its chunk.
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
import random
import secrets
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterator, Sequence

from confucius import cluster, rtflow
from confucius.provenance import program_digest, programs_not_as_recorded

from . import schedulers as sched
from . import flent, topology, uml, vm, workload
from .db import DEFAULT_DB, Database
from .engine import DEFAULT_GENERATION, GENERATIONS, in_guest
from . import contract as c
from .contract import RunSpec
from .guest.schedule import IDLE_S
from .guest.traffic import WRITE_RESULTS_S
from .results import DISTURBED_GAP_MS, ResultsError, RunData, read_run
from .scenario import UML_SEED_MAX, PageRef, RtFlow, Scenario, ScenarioError, SchedulerChoice, controller_label

REPO = vm.REPO
# The lab's engines by name (engine.ENGINES): each has run(), PROJECT_MODULES, TIME_MODE and
# HOST_INDEPENDENT (the time modes no host load can shape).
ENGINES = {"qemu": vm, "uml": uml}
# Before a run in real time, the runner waits while the hypervisor takes more than
# STEAL_LIMIT of the host's CPU time (measured over STEAL_WINDOW_S), at most STEAL_WAIT_MAX_S:
# the lab's low warm-ups followed steal.
STEAL_LIMIT = 0.05
STEAL_WINDOW_S = 5.0
STEAL_WAIT_MAX_S = 600.0
TOOLS = REPO / "build" / "cargo" / "release"
DEFAULT_RESULTS = REPO / "results" / "lab" / "runs"
BOOT_ALLOWANCE_S = 120.0


class RunnerError(RuntimeError):
    """The matrix cannot start (missing parts) or stopped (too many failed runs)."""


@dataclass(frozen=True)
class Cell:
    scheduler: SchedulerChoice
    rt: tuple[RtFlow, ...]
    repetition: int

    @property
    def controller(self) -> str:
        return controller_label(self.rt)


@dataclass
class Task:
    """One VM boot: a cell and the pages it loads (none for a timed run)."""
    cell: Cell
    cell_key: str
    pages: list[tuple[PageRef, str]] = field(default_factory=list)   # page and its unit key
    chunk: int = 0

    @property
    def units(self) -> int:
        return max(1, len(self.pages))


# --------------------------------------------------------------------------- identities

def _digest(value) -> str:
    return hashlib.sha256(json.dumps(value, sort_keys=True, default=str).encode()).hexdigest()[:20]


def rt_ports(scenario: Scenario, cell: Cell) -> list[int]:
    return [scenario.rt.port + number for number in range(len(cell.rt))]


def initial_rate_bps(scenario: Scenario) -> float:
    """The link's rate at the start: the constant rate, or the trace's first point used."""
    link = scenario.link
    if link.trace is None:
        return link.rate_bps
    points = [bps for t, bps in topology.read_trace(link.trace) if t >= link.trace_offset_s]
    if not points:
        raise ScenarioError(f"{scenario.path}: link.trace_offset is beyond the end of {link.trace}")
    return max(points[0] * link.trace_scale, topology.MIN_RATE_BPS)


def tc_setup(scenario: Scenario, cell: Cell) -> sched.TcSetup:
    choice = cell.scheduler
    return sched.tc_setup(choice.name, base=choice.base, rate_bps=initial_rate_bps(scenario),
                          buffer_packets=scenario.link.buffer_packets, rt_ports=rt_ports(scenario, cell),
                          extra_options=choice.options, shaper=scenario.link.shaper,
                          shaping=scenario.link.shaping)


def upload_setup(scenario: Scenario, cell: Cell) -> sched.TcSetup | None:
    """The scheduler under test on the upload (client -> server) as well, at the scenario's
    `upload_rate`; None when the upload is unshaped."""
    rate = scenario.link.upload_rate_bps
    if rate is None:
        return None
    choice = cell.scheduler
    return sched.tc_setup(choice.name, base=choice.base, rate_bps=rate, buffer_packets=scenario.link.buffer_packets,
                          rt_ports=rt_ports(scenario, cell), extra_options=choice.options,
                          shaper=scenario.link.shaper, shaping="upload")


def _commands(scenario: Scenario, cell: Cell, htb_burst_s: float | None) -> list[str]:
    upload = upload_setup(scenario, cell)
    return tc_setup(scenario, cell).commands(htb_burst_s) + (upload.commands(htb_burst_s) if upload else [])


def bottleneck_commands(scenario: Scenario, cell: Cell) -> list[str]:
    """The tc batch lines that set up the cell's bottleneck in the router's namespace, all
    of them (HTB's bucket as the scenario's engine needs it; the upload's shaping after the
    download's, if the scenario shapes it): the run's record, stored with it
    (runs.tc_commands) and the only thing the guest installs (guest.run.build_topology)."""
    return _commands(scenario, cell, topology.htb_burst_s(scenario.engine))


def _conditions(scenario: Scenario, cell: Cell) -> dict:
    link, web = scenario.link, scenario.web
    trace = hashlib.sha256(link.trace.read_bytes()).hexdigest() if link.trace else None
    conditions = {
        "link": {"rate_bps": link.rate_bps, "trace": trace, "scale": link.trace_scale,
                 "offset_s": link.trace_offset_s, "rtt_s": link.rtt_s, "buffer": link.buffer_packets,
                 "shaper": link.shaper},
        # The setup without HTB's bucket, which follows from the engine (below): the form
        # the keys have named it by since before the bucket was recorded, so that measured
        # units keep their keys.
        "tc": _commands(scenario, cell, htb_burst_s=None),
        "rt": [f.label for f in cell.rt], "rt_settings": scenario.rt.__dict__,
        "warmup": _warmup_conditions(scenario),
        "web": None if web is None else {k: getattr(web, k) for k in
                                         ("mode", "interval_s", "settle_s", "cca", "max_per_domain", "timeout_s")},
        "bulk": [b.__dict__ for b in scenario.bulk],
        "probes": None if scenario.probes is None else scenario.probes.__dict__,
        "duration_s": scenario.duration_s, "stats_interval_s": scenario.stats_interval_s,
        "repetition": cell.repetition,
        "engine": scenario.engine, "time_mode": ENGINES[scenario.engine].TIME_MODE,
    }
    # Only when set, so that the keys of scenarios without them stay as they were.
    seed = scenario_seed(scenario, cell)
    if seed is not None:
        conditions["seed"] = seed
    if scenario.kernel != "6.1":  # every run recorded before the choice ran 6.1
        conditions["kernel"] = scenario.kernel
    if link.upload_rate_bps is not None:
        conditions["link"]["upload_rate_bps"] = link.upload_rate_bps
    if scenario.flent is not None:
        conditions["flent"] = scenario.flent.to_dict()
    return conditions


def _warmup_conditions(scenario: Scenario) -> dict:
    # The phase only when set, so that the keys of scenarios without it stay as they were.
    conditions = dict(scenario.warmup.__dict__)
    if not conditions["phase_s"]:
        del conditions["phase_s"]
    return conditions


def load_phase_s(scenario: Scenario, cell: Cell, ref: PageRef) -> float:
    """How long a load waits after its RT flow's warm-up: drawn from [0, [warmup] phase)
    by the scenario's seed, the repetition and the page, so every scheduler meets the page
    at the same moment of its RT flow's life, and the pages meet a controller's periodic
    behaviour (TCP-BBR probes its minimum RTT once it has seen no lower one for 10 s: 10 s
    into a fresh connection) at phases spread over its period rather than at one."""
    if not scenario.warmup.phase_s:
        return 0.0
    draw = random.Random(f"load-phase/{scenario.seed}/{cell.repetition}/{ref.key}")
    return round(draw.uniform(0, scenario.warmup.phase_s), 3)


def scenario_seed(scenario: Scenario, cell: Cell) -> int | None:
    """The seed the scenario gives the cell's guest: [uml] seed + repetition under uml;
    None under qemu, which cannot repeat a run, or when the scenario sets none."""
    if scenario.engine != "uml" or scenario.uml.seed is None:
        return None
    return scenario.uml.seed + cell.repetition


def run_seed(scenario: Scenario, cell: Cell) -> int | None:
    """The seed of one run's guest: the scenario's, or under uml a fresh one (recorded
    with the run, so that the run can be repeated)."""
    seed = scenario_seed(scenario, cell)
    if seed is None and scenario.engine == "uml":
        return secrets.randbelow(UML_SEED_MAX + 1)
    return seed


def cell_key(scenario: Scenario, cell: Cell) -> str:
    return _digest(_conditions(scenario, cell))


def unit_key(key: str, scenario: Scenario, ref: PageRef, page=None) -> str:
    """A page under the cell `key`: `page` is `ref`'s page when the caller has it already."""
    return _digest([key, ref.key, workload.page_digest(page or workload.page(scenario, ref))])


# --------------------------------------------------------------------------- planning

def _select(all_names: Sequence[str], wanted: Sequence[str] | None, what: str) -> list[str]:
    if not wanted:
        return list(all_names)
    unknown = [w for w in wanted if w not in all_names]
    if unknown:
        raise ScenarioError(f"{what} {', '.join(unknown)} not in the scenario (it has {', '.join(all_names)})")
    return [n for n in all_names if n in wanted]


def cells(scenario: Scenario, schedulers: Sequence[str] | None = None,
          controllers: Sequence[str] | None = None) -> list[Cell]:
    """The scenario's cells, optionally only some schedulers / controllers."""
    names = _select([c.name for c in scenario.schedulers], schedulers, "scheduler")
    rt_by_label = {controller_label(s): s for s in scenario.rt_sets}
    labels = _select(list(rt_by_label), controllers, "controller")
    return [Cell(scenario.scheduler(name), rt_by_label[label], rep)
            for rep in range(scenario.repetitions) for label in labels for name in names]


def plan(scenario: Scenario, db: Database | None, *, schedulers=None, controllers=None,
         resume: bool = True, attempts: int = 3) -> list[Task]:
    """The runs still to do. Without `resume` (or `db`) every unit is measured again; with
    them, only by the programs that measured the cells' units already in `db`."""
    digests = program_digests(project_parts(scenario.engine, scenario.kernel)) if db is not None and resume else None
    tasks = []
    for cell in cells(scenario, schedulers, controllers):
        key = cell_key(scenario, cell)
        if digests is not None:
            used = built_parts(scenario, [cell.scheduler])
            db.check_programs([key], {name: digests[name] for name in used})
        if scenario.web is None:
            done, tried = db.run_attempts(key) if db and resume else (False, 0)
            if not done and tried < attempts:
                tasks.append(Task(cell, key))
            continue
        units = [(ref, unit_key(key, scenario, ref)) for ref in scenario.web.pages]
        todo = set(u for _, u in units)
        if db is not None and resume:
            valid = db.valid_units(todo)
            tried = db.attempts(todo)
            todo = {u for u in todo if u not in valid and tried.get(u, 0) < attempts}
        # Chunks are cut from the whole page list, so that a resumed matrix keeps every page
        # in its chunk: all cells then reach the same pages at the same time.
        size = scenario.web.pages_per_run
        for chunk, start in enumerate(range(0, len(units), size)):
            left = [(ref, u) for ref, u in units[start:start + size] if u in todo]
            if left:
                tasks.append(Task(cell, key, left, chunk=chunk))
    place = run_order(scenario)
    return sorted(tasks, key=lambda t: place(t.cell, t.chunk))


def run_order(scenario: Scenario) -> Callable[[Cell, int], tuple]:
    """Where a cell's chunk of pages runs: repetition, then chunk, then controller, then
    the scenario's order of schedulers, so that every scheduler meets a page at about the
    same time and a stopped run compares like with like (the simulator's sweep too)."""
    order = {c.name: n for n, c in enumerate(scenario.schedulers)}
    return lambda cell, chunk: (cell.repetition, chunk, cell.controller, order[cell.scheduler.name])


# --------------------------------------------------------------------------- checks, versions

def project_parts(engine: str, kernel: str = DEFAULT_GENERATION) -> dict[str, tuple[Path, str]]:
    """Every program of the project that a run on `engine` with the `kernel` generation may
    use, by the names the runs' `versions` record their digests under: each one's path and
    the make target that builds it (under uml, the UML kernel too)."""
    flavour = GENERATIONS[kernel]
    suffix = "" if flavour == "lab" else f"-{flavour}"
    kmod = f"make kmod-uml{suffix}" if engine == "uml" else f"make kmod{suffix}"
    parts = {"rtflow": (rtflow.BINARY, "make tools"), "web-client": (TOOLS / "web-client", "make tools"),
             "web-server": (TOOLS / "web-server", "make tools"),
             "sch_confucius.ko": (ENGINES[engine].modules_dir(flavour) / "sch_confucius.ko", kmod),
             "q_confucius.so": (vm.TC_PLUGINS / "q_confucius.so", "make tc")}
    if engine == "uml":
        parts["uml"] = (uml.FLAVOURS[flavour][0] / "linux", f"make {uml.make_target(flavour)}")
    return parts


def used_parts(engine: str, *, rt: bool, web: bool, confucius: bool,
               kernel: str = DEFAULT_GENERATION) -> dict[str, tuple[Path, str]]:
    """Those of project_parts that runs with RT flows, page loads and confucius use."""
    used = {"rtflow": rt, "web-client": web, "web-server": web, "sch_confucius.ko": confucius,
            "q_confucius.so": confucius, "uml": True}
    return {name: part for name, part in project_parts(engine, kernel).items() if used[name]}


def built_parts(scenario: Scenario, schedulers: Sequence[SchedulerChoice] | None = None) -> dict[str, tuple[Path, str]]:
    """The programs that the scenario's runs use (only its runs under `schedulers`, if given)."""
    chosen = scenario.schedulers if schedulers is None else schedulers
    return used_parts(scenario.engine, rt=any(scenario.rt_sets), web=scenario.web is not None,
                      confucius=any(sched.SCHEDULERS[c.base].kind == "confucius" for c in chosen),
                      kernel=scenario.kernel)


def program_digests(parts: dict[str, tuple[Path, str]]) -> dict[str, str | None]:
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
    if scenario.flent and not flent.FLENT.is_file():
        raise RunnerError(f"Flent is not installed in the virtualenv ({flent.FLENT}; run `make venv`)")


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
        "netperf": _first_line(["netperf", "-V"]), "flent": _first_line([str(flent.FLENT), "--version"]),
        "python": platform.python_version(), "host_kernel": platform.release(),
        "binaries_sha256": program_digests(project_parts(engine, kernel)),
    }


# --------------------------------------------------------------------------- one run

def fair_share_bps(scenario: Scenario, cell: Cell) -> float:
    """What one RT flow of the cell can reach during its warm-up: the link's first rate
    shared with the other RT and bulk flows, at most the RT flows' `max_rate`."""
    competitors = max(1, len(cell.rt) + len(scenario.bulk))
    return min(initial_rate_bps(scenario) / competitors, scenario.rt.max_rate_bps)


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
                                shaping=link.shaping),
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
        pages=[c.PageSpec(**page, key=ref.key, unit_key=unit, phase_s=load_phase_s(scenario, task.cell, ref))
               for page, (ref, unit) in zip(inputs.get("pages", []), task.pages)],
        hosts=inputs.get("hosts"), addresses=inputs.get("addresses", []),
        bulk=list(scenario.bulk), probes=scenario.probes,
        duration_s=scenario.duration_s, stats_interval_s=scenario.stats_interval_s,
        binaries=c.Binaries(web_client=str(TOOLS / "web-client"), web_server=str(TOOLS / "web-server")),
        flent=scenario.flent,
    )


def vm_timeout(scenario: Scenario, task: Task) -> float:
    """Every wait in the guest has a cap; the VM gets their sum, with room for the boot."""
    w = scenario.warmup
    writers = WRITE_RESULTS_S if scenario.probes or scenario.bulk else 0.0
    if scenario.flent is not None:
        return BOOT_ALLOWANCE_S + len(scenario.flent.tests) * flent.allowance_per_test_s(scenario.flent)
    if scenario.web is None:
        return BOOT_ALLOWANCE_S + w.max_s + scenario.duration_s + 60 + writers
    web = scenario.web
    warmups = (w.retries + 1) * (w.max_s + IDLE_S + 10)
    per_page = warmups + w.phase_s + web.interval_s + web.timeout_s + web.settle_s + IDLE_S + 30
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
        "engine": scenario.engine, "time_mode": ENGINES[scenario.engine].TIME_MODE, "seed": seed,
        "git_commit": versions.get("git_commit"), "git_dirty": int(bool(versions.get("git_dirty"))),
        "versions": json.dumps(versions, sort_keys=True), "spec": json.dumps(spec.to_dict(), sort_keys=True),
    }


def _measured(data: RunData) -> dict:
    if data.spec.flent is not None:  # valid: every test ran and left a summary
        return {"valid": int(len(data.flent) == len(data.spec.flent.tests)
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
            test.plot, test.plot_error = flent.plot(test.data_file)


@dataclass(frozen=True)
class HostSample:
    """The host's load average and CPU time (jiffies) at one moment."""
    load: tuple[float, float, float]
    steal: int
    total: int

    @classmethod
    def now(cls) -> "HostSample":
        # /proc/stat's first line: user nice system idle iowait irq softirq steal guest guest_nice;
        # guest time is already counted in user, so the total is the first eight.
        ticks = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:9]]
        return cls(os.getloadavg(), ticks[7], sum(ticks))


def host_load(before: HostSample, after: HostSample) -> dict:
    """What the host did during a run. The load average misses a host that is itself a VM
    starved by its hypervisor; `steal` is the share of CPU time taken from it meanwhile."""
    elapsed = after.total - before.total
    return {"before": list(before.load), "after": list(after.load),
            "steal": (after.steal - before.steal) / elapsed if elapsed > 0 else 0.0}


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
    engine = ENGINES[scenario.engine]
    return engine.TIME_MODE in engine.HOST_INDEPENDENT


def _failure(result: vm.VMResult, directory: Path) -> str | None:
    """Why the run failed (with the end of the guest's log), or None."""
    try:
        result.check()
        return None
    except vm.LabError as err:
        guest_log = directory / "guest.log"
        tail = guest_log.read_text(errors="replace")[-3000:] if guest_log.is_file() else ""
        return f"{err}\nguest.log:\n{tail}"


@dataclass
class Measurement:
    """What one task's VM boot gave, for the database: its `runs` row, the run's data (None
    where nothing can be trusted) and the error (None if it went well)."""
    row: dict
    data: RunData | None
    error: str | None


def measure(task: Task, scenario: Scenario, results_root: Path, versions: dict,
            echo: bool = False) -> Measurement:
    """Boot the VM for one task and read what it left (here or on a Dask worker)."""
    check_programs_recorded(scenario, task, versions)
    directory = _run_dir(results_root, scenario, task)
    inputs = workload.write_inputs([workload.page(scenario, ref) for ref, _ in task.pages],
                                   directory / "inputs", lambda path: in_guest(directory, path)) if task.pages else {}
    spec = build_spec(scenario, task, inputs)
    spec.write(directory / "spec.json")
    seed = run_seed(scenario, task.cell)
    row = _run_row(scenario, task, spec, directory, versions, seed)
    engine = ENGINES[scenario.engine]
    engine_options = {"flavour": GENERATIONS[scenario.kernel]}
    if seed is not None:
        engine_options["seed"] = seed
    paused = 0.0 if in_virtual_time(scenario) else wait_for_low_steal()
    started, host_before = time.time(), HostSample.now()
    data, error = None, None
    try:
        result = engine.run(f'exec "{sys.executable}" -m confucius.lab.guest "$1" >"$RESULTS/guest.log" 2>&1',
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
        row.update(_measured(data))
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
    cells(scenario, schedulers, controllers)  # unknown names are refused before anything is written
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
                run_id = db.store_run(scenario_id, measured.row, data)
                report.runs += 1
                report.run_ids.append(run_id)
                if on_run:
                    on_run(task, data, error)
                valid = _valid_units(data) if data is not None else 0
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


def _valid_units(data: RunData) -> int:
    if data.pages:
        return sum(p.valid for p in data.pages)
    return int(bool(_measured(data).get("valid")))


class Progress:
    """A rich progress bar over page measurements (or runs); without one (output to a file,
    or --echo), a line per run."""

    def __init__(self, enabled: bool, total: int):
        self.enabled, self.total = enabled, total
        self.done, self.text, self.started = 0, "", time.monotonic()

    def __enter__(self):
        if self.enabled:
            from rich.progress import (BarColumn, MofNCompleteColumn, Progress, TextColumn,
                                       TimeElapsedColumn, TimeRemainingColumn)
            self.bar = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                                TimeElapsedColumn(), TimeRemainingColumn())
            self.bar.start()
            self.task = self.bar.add_task("starting", total=self.total)
        return self

    def describe(self, text: str) -> None:
        self.text = text
        if self.enabled:
            self.bar.update(self.task, description=text)

    def note(self, text: str) -> None:
        if self.enabled:
            self.bar.console.print(text)
        else:
            print(text, file=sys.stderr)

    def finished(self, name: str, units: int) -> None:
        """Count `units` more as measured, by the task `name` (tasks end in any order, and
        others are under way: the bar names the last one that ended)."""
        self.describe(f"last done: {name}")
        self.done += units
        if self.enabled:
            self.bar.advance(self.task, units)
        else:
            minutes = (time.monotonic() - self.started) / 60
            print(f"[{self.done}/{self.total} after {minutes:.0f} min] {self.text}", file=sys.stderr, flush=True)

    def __exit__(self, *exc) -> None:
        if self.enabled:
            self.bar.stop()
