# SPDX-License-Identifier: MIT
"""Per-CCA runs on the lab's engines: one VM boot per point (policy, classifier, seed),
the guest's figures and the models' predictions stored in the lab's database.

    from confucius.percca import mix_scenario, runner
    runner.run_scenario(mix_scenario.load("scenarios/percca/percca-equal.toml"), db_path)
"""

from __future__ import annotations

import json
import math
import re
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from confucius.experiment import db_percca, engines
from confucius.experiment.db import Database
from confucius.lab.engine import LabError, in_guest
from confucius.lab.runner import program_digests, provenance, used_parts
from confucius.provenance import program_digest

from . import classifier as cls
from . import models, ns3, tc
from .figures import Figures, ResultsError, figures, read
from .mix_scenario import FIRST_PORT, Point, Scenario

DEFAULT_DB = Path("results/lab/lab.sqlite")
DEFAULT_RESULTS = Path("results/percca/runs")
GUEST = 'exec "{python}" -m confucius.lab.guest.percca "$1" >"$RESULTS/guest.log" 2>&1'
# A run's timeout per second of guest time, and for boot and set-up: counted in wall-clock
# seconds under qemu, whose guest shapes in real time; under uml the guest's own seconds
# (uml.run), where it is merely generous.
TIMEOUT_PER_GUEST_S = 20.0
TIMEOUT_FIXED_S = 120.0


@dataclass(frozen=True)
class Flow:
    number: int
    cca: str
    classified_as: str
    queue: int

    @property
    def port(self) -> int:
        return FIRST_PORT + self.number


def flows_of(scenario: Scenario, point: Point) -> list[Flow]:
    """Every flow with its drawn class and its queue under the point's policy."""
    ccas = scenario.ccas
    flow_ccas = [i for i, n in enumerate(scenario.counts) for _ in range(n)]
    if point.policy == "shared":
        classes = flow_ccas
    else:
        q = cls.conditional(point.classifier, ccas, scenario.params)
        classes = cls.draw(q, flow_ccas, point.seed)
    groups = scenario.groups(point.policy)
    queue_of = {i: k for k, group in enumerate(groups) for i in group}
    return [Flow(f, ccas[i], ccas[j], 0 if point.policy == "shared" else queue_of[j])
            for f, (i, j) in enumerate(zip(flow_ccas, classes))]


def queue_count(scenario: Scenario, point: Point) -> int:
    return 1 if point.policy == "shared" else len(scenario.groups(point.policy))


def point_weights(scenario: Scenario, point: Point) -> tuple[int, ...]:
    """The queues' class weights at this point: given, the optimiser's (the optimised
    services: for the expected draw, or over the draws with this point's flows per class),
    or none (the qdisc weighs by mapped or active flows)."""
    if point.policy == "shared":
        return ()
    if scenario.service == "weights":
        return scenario.weights
    params = scenario.optimise_params or scenario.params
    if scenario.service == "optimised":
        return models.optimised_weights(scenario.ccas, scenario.counts, point.policy,
                                        scenario.groups(point.policy), point.classifier, params)
    if scenario.service == "optimised-draws":
        drawn = [(f.cca, f.classified_as) for f in flows_of(scenario, point)]
        return models.optimised_weights_over_draws(scenario.ccas, scenario.counts, point.policy,
                                                   scenario.groups(point.policy), point.classifier, params,
                                                   drawn, point.seed)
    return ()


def tc_lines(scenario: Scenario, point: Point, flows: list[Flow], weights: tuple[int, ...]) -> list[str]:
    return tc.bottleneck(point.policy, scenario.qdisc, scenario.rate_bps, scenario.buffer,
                         queue_count(scenario, point), list(weights) or None, [(f.port, f.queue) for f in flows],
                         active=scenario.service == "active")


def occupancy_kind(scenario: Scenario, point: Point) -> str:
    return "confucius" if point.policy != "shared" and scenario.qdisc == "confucius" else "qdisc"


def guest_spec(scenario: Scenario, point: Point, flows: list[Flow], weights: tuple[int, ...]) -> dict:
    return {"rtt_s": scenario.rtt_s, "warmup_s": scenario.warmup_s, "duration_s": scenario.duration_s,
            "port": FIRST_PORT, "sample_s": scenario.sample_s,
            "flows": [{"cca": f.cca, "queue": f.queue} for f in flows],
            "tc": tc_lines(scenario, point, flows, weights), "occupancy": occupancy_kind(scenario, point)}


def run_dir(root: Path, scenario: Scenario, point: Point) -> Path:
    return root / scenario.name / re.sub(r"[^A-Za-z0-9._=-]+", "_", point.key)


def _queue_names(scenario: Scenario, point: Point) -> list[list[str]]:
    if point.policy == "shared":
        return [scenario.ccas]
    return [[scenario.ccas[i] for i in group] for group in scenario.groups(point.policy)]


def weights_follow_the_draw(scenario: Scenario, policy: str) -> bool:
    """Whether a point's weights were chosen for its own draw (service "optimised-draws"),
    so that the models on the classifier's expected draw say nothing of them: the report's
    "on draws" columns judge them instead."""
    return scenario.service == "optimised-draws" and policy != "shared"


def _model(scenario: Scenario, point: Point, which: str, weights: tuple[int, ...]) -> float | None:
    """The model's MinThr for the classifier's expected draw (none where the weights follow
    the draw)."""
    if weights_follow_the_draw(scenario, point.policy):
        return None
    value = models.predicted_min_thr(scenario.ccas, scenario.counts, point.policy,
                                     scenario.groups(point.policy), point.classifier,
                                     weights, scenario.params, which)
    return None if math.isnan(value) else value


def _run_row(scenario: Scenario, point: Point, flows: list[Flow], weights: tuple[int, ...], spec: dict,
             directory: Path, versions: dict) -> dict:
    c = point.classifier
    index = {cca: i for i, cca in enumerate(scenario.ccas)}
    return {
        "point_key": point.key, "policy": point.policy, "qdisc": scenario.qdisc if point.policy != "shared" else "pfifo",
        "service": scenario.service,
        "weights": json.dumps(list(weights)) if weights else None,
        "queues": json.dumps(_queue_names(scenario, point)),
        "classifier": c.label if c else "-", "classifier_kind": c.kind if c else None,
        "f1_target": c.f1 if c else None,
        "f1_drawn": cls.realised_f1([index[f.cca] for f in flows], [index[f.classified_as] for f in flows]),
        "seed": point.seed, "flows": json.dumps(dict(scenario.flows)),
        "rate_bps": scenario.rate_bps, "rtt_s": scenario.rtt_s, "buffer_packets": scenario.buffer,
        "duration_s": scenario.duration_s, "warmup_s": scenario.warmup_s,
        "tc_commands": json.dumps(spec["tc"]), "results_dir": str(directory),
        "engine": scenario.engine,
        "time_mode": time_mode(scenario.engine),
        "git_commit": versions.get("git_commit"), "git_dirty": int(bool(versions.get("git_dirty"))),
        "versions": json.dumps(versions),
        "model_simple": _model(scenario, point, "simple", weights),
        "model_advanced": _model(scenario, point, "advanced", weights),
    }


def _measured_rows(scenario: Scenario, point: Point, flows: list[Flow], fig: Figures) -> tuple:
    counts = scenario.counts
    ccas = [{"cca": c, "flows": n, "thr_bps": thr, "avg_bps": thr / n if n else None,
             "normalised": None if math.isnan(share) else share}
            for c, n, thr, share in zip(scenario.ccas, counts, fig.cca_bps, fig.normalised)]
    flow_rows = [{"number": f.number, "cca": f.cca, "classified_as": f.classified_as, "queue": f.queue,
                  "port": f.port, "bps": bps} for f, bps in zip(flows, fig.flow_bps)]
    names = _queue_names(scenario, point)
    queues = [{"queue": q, "ccas": "+".join(names[q]), "flows": sum(f.queue == q for f in flows),
               "mean_packets": fig.queue_mean.get(q), "max_packets": fig.queue_max.get(q),
               "drops": fig.queue_drops.get(q)} for q in range(len(names))]
    return ccas, flow_rows, queues


def time_mode(engine: str) -> str:
    return engines.entry(engine).time_mode


def versions_of(engine: str) -> dict:
    """What produced the runs: the lab's provenance, or ns-3's and the simulator program's."""
    if engine == "ns3":
        return ns3.versions()
    return provenance(engine)


def _boot(scenario: Scenario, point: Point, flows: list[Flow], directory: Path, row: dict,
          echo: bool) -> tuple[Figures | None, str | None]:
    """One VM boot running the guest: its figures, or why there are none."""
    engine = engines.engine(scenario.engine)
    timeout = TIMEOUT_FIXED_S + TIMEOUT_PER_GUEST_S * (scenario.warmup_s + scenario.duration_s)
    # Under uml the point's seed also seeds the guest, so that a point repeats exactly.
    options = {"seed": point.seed} if scenario.engine == "uml" else {}
    try:
        result = engine.boot(GUEST.format(python=sys.executable), args=[in_guest(directory, directory / "spec.json")],
                            results_dir=directory, timeout=timeout, echo=echo, **options)
        row["guest_kernel"] = result.kernel
        result.check()
        return figures(read(directory), scenario.ccas, [f.cca for f in flows], queue_count(scenario, point),
                       scenario.warmup_s), None
    except (LabError, ResultsError) as err:
        log = directory / "guest.log"
        return None, f"{err}\nguest.log:\n{log.read_text(errors='replace')[-3000:] if log.is_file() else ''}"


def _simulate(scenario: Scenario, point: Point, flows: list[Flow], weights: tuple[int, ...], directory: Path,
              row: dict, echo: bool) -> tuple[Figures | None, str | None]:
    """One ns-3 run of the point; what ns-3 installed stands where the lab's tc lines do."""
    args = ns3.arguments(scenario, point, flows, queue_count(scenario, point), weights)
    row["tc_commands"] = json.dumps([ns3.PERCCA.name, *args])
    row["guest_kernel"] = f"ns-3 {ns3.describe()['ns3']}"
    if echo:
        print(" ".join([str(ns3.PERCCA), *args]), file=sys.stderr)
    try:
        raw = ns3.run(args, directory)
    except ns3.SimError as err:
        return None, str(err)
    return ns3.figures(raw, scenario.ccas, queue_count(scenario, point)), None


def execute(scenario: Scenario, point: Point, db: Database, scenario_id: int, root: Path,
            versions: dict, echo: bool = False) -> tuple[int, Figures | None, str | None]:
    """Run one point on the scenario's engine and store what came back: (run id, figures, error)."""
    directory = run_dir(root, scenario, point)
    directory.mkdir(parents=True, exist_ok=True)
    flows = flows_of(scenario, point)
    weights = point_weights(scenario, point)
    spec = guest_spec(scenario, point, flows, weights)
    (directory / "spec.json").write_text(json.dumps(spec, indent=1) + "\n")
    row = _run_row(scenario, point, flows, weights, spec, directory, versions)
    started = time.time()
    if scenario.engine == "ns3":
        fig, error = _simulate(scenario, point, flows, weights, directory, row, echo)
    else:
        fig, error = _boot(scenario, point, flows, directory, row, echo)
    row.update(started_unix=started, wall_s=time.time() - started,
               status="ok" if error is None else "failed", error=error)
    measured = ([], [], [])
    if fig is not None:
        row.update(min_thr=fig.min_thr, jfi=fig.jfi, total_bps=fig.total_bps, window_s=fig.window_s)
        measured = _measured_rows(scenario, point, flows, fig)
    run_id = db_percca.store_run(db, scenario_id, row, *measured, fig.occupancy if fig else [])
    return run_id, fig, error


def programs(scenario: Scenario, points: list[Point]) -> dict[str, str | None]:
    """The digests of the programs that measure `points` now: the simulator's program, or
    the lab's kernel parts (the guest's tools are the host's own; the shared FIFO is pfifo)."""
    if scenario.engine == "ns3":
        return {"percca": program_digest(ns3.PERCCA)}
    confucius = scenario.qdisc == "confucius" and any(p.policy != "shared" for p in points)
    return program_digests(used_parts(scenario.engine, rt=False, web=False, confucius=confucius))


def run_scenario(scenario: Scenario, db_path: Path = DEFAULT_DB, root: Path = DEFAULT_RESULTS,
                 *, resume: bool = True, seeds: list[int] | None = None, policy: str | None = None,
                 echo: bool = False, progress=print) -> list[tuple[Point, int, str | None]]:
    """Every point of the scenario not yet measured (with `resume`; only `seeds` and `policy`
    if given), one boot each, seed by seed: a sweep cut short has every point once before any twice."""
    with Database(db_path) as db:
        scenario_id = db.scenario_id(scenario.name, scenario.digest, str(scenario.path), scenario.text)
        skip = db_percca.done_points(db, scenario_id) if resume else set()
        todo = [p for p in scenario.points() if p.key not in skip and (seeds is None or p.seed in seeds)
                and (policy is None or p.policy == policy)]
        if resume:
            db_percca.check_programs(db, scenario_id, programs(scenario, todo))
        versions = versions_of(scenario.engine)
        outcomes = []
        todo.sort(key=lambda p: scenario.seeds.index(p.seed))
        for number, point in enumerate(todo, 1):
            run_id, fig, error = execute(scenario, point, db, scenario_id, root, versions, echo)
            progress(f"[{number}/{len(todo)}] {point.key}: "
                     + (f"MinThr {fig.min_thr:.3f}, JFI {fig.jfi:.3f}, {fig.total_bps / 1e6:.1f} Mbit/s"
                        if fig else f"failed: {error.splitlines()[0]}"))
            outcomes.append((point, run_id, error))
        return outcomes
