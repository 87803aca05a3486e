# SPDX-License-Identifier: MIT
"""One planner for every engine: a scenario's cells, each cell's key, the programs that
measured it, its units (a page under the cell), what is still to measure, in chunks, in
the order that compares like with like.

    tasks = plan(scenario, cells(scenario), lambda cell: keys.cell_key(scenario, cell), db)

A task is one run of one cell: a VM boot with up to `[web] pages_per_run` pages, or one
simulated chunk of pages. With a database the plan resumes: units with a valid result are
skipped and invalid ones (disturbed, failed load) tried again up to `attempts` times in
all; a cell is resumed only by the programs that measured it (`programs_of`). Without one
everything is measured afresh. Tasks run chunk by chunk, then by controller, then by
scheduler, so that a change of the host's load over hours touches every scheduler alike;
chunks are cut from the whole page list, so a resumed matrix keeps each page in its chunk
and one stopped at any point still compares like with like.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Iterable, Sequence

from . import db_runs, workload
from .keys import Cell, unit_key
from .scenario import PageRef, Scenario, ScenarioError, controller_label


@dataclass(frozen=True)
class Unit:
    """A page measured in a cell: its place in the scenario's page list, the page, its key."""
    number: int
    ref: PageRef
    key: str


@dataclass
class Task:
    """One run: a cell and the pages it loads (none for a timed run)."""
    cell: Cell
    cell_key: str
    pages: list[Unit] = field(default_factory=list)
    chunk: int = 0

    @property
    def units(self) -> int:
        return max(1, len(self.pages))


def _select(all_names: Sequence[str], wanted: Sequence[str] | None, what: str) -> list[str]:
    if not wanted:
        return list(all_names)
    unknown = [w for w in wanted if w not in all_names]
    if unknown:
        raise ScenarioError(f"{what} {', '.join(unknown)} not in the scenario (it has {', '.join(all_names)})")
    return [n for n in all_names if n in wanted]


def cells(scenario: Scenario, schedulers: Sequence[str] | None = None,
          controllers: Sequence[str] | None = None) -> list[Cell]:
    """The scenario's cells, optionally only some schedulers / controllers (unknown names
    are refused)."""
    names = _select([c.name for c in scenario.schedulers], schedulers, "scheduler")
    rt_by_label = {controller_label(s): s for s in scenario.rt_sets}
    labels = _select(list(rt_by_label), controllers, "controller")
    return [Cell(scenario.scheduler(name), rt_by_label[label], rep)
            for rep in range(scenario.repetitions) for label in labels for name in names]


def units(scenario: Scenario, key: str) -> list[Unit]:
    """The cell `key`'s units: every page of the scenario under it."""
    return [Unit(number, ref, unit_key(key, ref.key, workload.page_digest(workload.page(scenario, ref))))
            for number, ref in enumerate(scenario.web.pages)]


def pending(unit_keys: Iterable[str], db, attempts: int) -> set[str]:
    """The units still to measure: without a valid result and tried fewer than `attempts` times."""
    unit_keys = set(unit_keys)
    if db is None:
        return unit_keys
    valid, tried = db_runs.valid_units(db, unit_keys), db_runs.attempts(db, unit_keys)
    return {u for u in unit_keys if u not in valid and tried.get(u, 0) < attempts}


def plan(scenario: Scenario, chosen: Sequence[Cell], key_of: Callable[[Cell], str], db=None, *,
         programs_of: Callable[[Cell], dict[str, str | None]] | None = None, attempts: int = 3) -> list[Task]:
    """The tasks still to do for the `chosen` cells, each named by `key_of`, in run_order.
    With `db` (db.Database) only what it lacks, and only by the programs whose digests
    `programs_of` gives (by the names the runs' `versions` record them under)."""
    tasks = []
    for cell in chosen:
        key = key_of(cell)
        if db is not None and programs_of is not None:
            db_runs.check_programs(db, [key], programs_of(cell))
        if scenario.web is None:
            done, tried = db_runs.run_attempts(db, key) if db is not None else (False, 0)
            if not done and tried < attempts:
                tasks.append(Task(cell, key))
            continue
        measured = units(scenario, key)
        todo = pending([u.key for u in measured], db, attempts)
        size = scenario.web.pages_per_run
        for chunk, start in enumerate(range(0, len(measured), size)):
            left = [u for u in measured[start:start + size] if u.key in todo]
            if left:
                tasks.append(Task(cell, key, left, chunk=chunk))
    place = run_order(scenario)
    return sorted(tasks, key=lambda t: place(t.cell, t.chunk))


def run_order(scenario: Scenario) -> Callable[[Cell, int], tuple]:
    """Where a cell's chunk of pages runs: repetition, then chunk, then controller, then
    the scenario's order of schedulers."""
    order = {c.name: n for n, c in enumerate(scenario.schedulers)}
    return lambda cell, chunk: (cell.repetition, chunk, cell.controller, order[cell.scheduler.name])
