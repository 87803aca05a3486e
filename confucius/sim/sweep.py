# SPDX-License-Identifier: MIT
"""A scenario's simulated cells as tasks (plan.SimTask: a cell's chunk of pages), run in
this process (`confucius sim run`) or on Dask distributed (`confucius sim sweep`): a local
cluster of single-threaded worker processes by default, or an existing scheduler. Workers
only simulate (worker.simulate); this process writes every result to the database as it
comes, so a sweep stopped part-way keeps what finished and resumes from there, and a
failed task is stored as a failed run with its error while the others go on."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterator, Sequence

from confucius import cluster
from confucius.experiment import db_runs
from confucius.experiment.db import Database
from confucius.experiment.progress import Progress
from confucius.experiment.results import Measurement
from confucius.experiment.scenario import Scenario

from . import bottleneck as bn
from . import plan as planning
from . import store, worker
from .engine import Ns3Engine

# Each task's run as it arrives.
Outcome = tuple[planning.SimTask, Measurement]


@dataclass
class SweepReport:
    tasks: int = 0
    failed: int = 0
    pages: int = 0
    skipped: list[planning.Skipped] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)


def in_process(tasks: Sequence[planning.SimTask], scenario: Scenario, produced: dict,
               binary: Path = bn.BOTTLENECK) -> Iterator[Outcome]:
    """The tasks one after the other, here, by the program `produced` records."""
    engine = Ns3Engine(binary=binary)
    for task in tasks:
        yield task, engine.measure(task, scenario, Path(), produced)


def on_dask(tasks: Sequence[planning.SimTask], scenario: Scenario, produced: dict, binary: Path = bn.BOTTLENECK,
            address: str | None = None, workers: int = 2) -> Iterator[Outcome]:
    """The tasks on a Dask cluster (cluster.dask_client), yielded as they finish; each
    worker checks that its program is the one `produced` records."""
    digest = produced["bottleneck_sha256"]
    for task, result, error, submitted in cluster.as_completed(worker.simulate, tasks, binary, digest,
                                                                address=address, workers=workers):
        if error is None:
            yield task, store.measurement(task, scenario, produced, result, None, result.started_unix, result.wall_s)
        else:
            yield task, store.measurement(task, scenario, produced, None, error, submitted, time.time() - submitted)


def sweep(scenario: Scenario, db_path: Path, *, binary: Path = bn.BOTTLENECK, schedulers=None,
          controllers=None, resume: bool = True, attempts: int = 3, progress: bool = True,
          execute: Callable[[Sequence[planning.SimTask], Scenario, dict], Iterator[Outcome]] | None = None
          ) -> SweepReport:
    """Simulate what is still to do (everything without `resume`) and store it; `execute`
    runs the tasks by the program the runs record (in_process by default)."""
    execute = execute or (lambda tasks, scenario, produced: in_process(tasks, scenario, produced, binary))
    report = SweepReport()
    with Database(db_path) as db:
        tasks, report.skipped = planning.plan(scenario, db if resume else None, binary=binary,
                                              schedulers=schedulers, controllers=controllers, attempts=attempts)
        if not tasks:
            return report
        scenario_id = db.scenario_id(scenario.name, scenario.digest, str(scenario.path), scenario.text)
        produced = store.versions(bn.describe(binary)["ns3"], binary)
        with Progress(progress, sum(len(t.pages) for t in tasks)) as bar:
            bar.describe(f"{scenario.name}: {len(tasks)} tasks")
            for task, measured in execute(tasks, scenario, produced):
                cell, error = task.cell.cell, measured.error
                name = f"{cell.scheduler.name} / {cell.controller} / rep {cell.repetition} / chunk {task.chunk}"
                run_id = db_runs.store_run(db, scenario_id, measured.row, measured.data)
                report.tasks += 1
                if error is None:
                    report.pages += len(task.pages)
                else:
                    report.failed += 1
                    report.errors.append(f"{name}: {error}")
                    bar.note(f"run {run_id} ({name}) failed: {error}")
                bar.finished(name, len(task.pages))
    return report

