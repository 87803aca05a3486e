# SPDX-License-Identifier: MIT
"""make bench-sim: how fast the simulator runs the lab's page-load episodes. Printed,
asserted nowhere (a benchmark: the machine is shared).

1. One episode of the demo (scenarios/demo.toml: confucius, GCC, 20 Mbit/s, 40 ms, the
   amazon page after the [sim] warm-up, then the tail): simulated seconds per CPU second
   of ns-3's event loop (one core), and per wall second of the whole program.
2. One task of scenarios/matrix.toml (its first pages_per_run sampled pages, confucius,
   GCC) as `confucius sim sweep` runs it, timed part by part: planning (pages generated,
   keys), each bottleneck program (ns-3's event loop, and the rest: start-up, topology,
   logs), reading the frame logs, storing into a database. From it, the 1000-page sweep of
   one (scheduler, controller) pair on this machine's cores, one worker per core.
"""

import os
import tempfile
import time
from pathlib import Path

from confucius.lab.db import Database
from confucius.lab.scenario import load
from confucius.sim import bottleneck as bn
from confucius.sim import plan, store, worker

REPO = Path(__file__).resolve().parents[2]
SWEEP_PAGES = 1000


def one_task(path: Path) -> tuple[plan.SimTask, object, float]:
    scenario = load(path, ccas=bn.NS3_CCAS)
    started = time.monotonic()
    tasks, _ = plan.plan(scenario, schedulers=["confucius"], controllers=["gcc"])
    return tasks[0], scenario, time.monotonic() - started


def episode_speed() -> None:
    task, _, _ = one_task(REPO / "scenarios" / "demo.toml")
    with tempfile.TemporaryDirectory() as scratch:
        started = time.monotonic()
        run = worker.simulate_page(task, task.pages[0], Path(scratch)).run
        wall = time.monotonic() - started
    print(f"demo episode (confucius, GCC, amazon page, PLT {run['page']['plt_s']:.2f} s): "
          f"{run['simulated_s']:.1f} s simulated; ns-3's loop {run['cpu_s']:.2f} s CPU = "
          f"{run['simulated_s'] / run['cpu_s']:.0f}x real time on one core (target 50x); "
          f"the program {wall:.2f} s wall = {run['simulated_s'] / wall:.0f}x")


def sweep_estimate() -> None:
    task, scenario, plan_s = one_task(REPO / "scenarios" / "matrix.toml")
    pages = len(task.pages)
    runs, loop_cpu, simulated = [], 0.0, 0.0
    process_s = 0.0
    with tempfile.TemporaryDirectory() as scratch:
        for page in task.pages:
            started = time.monotonic()
            runs.append(worker.simulate_page(task, page, Path(scratch)))
            process_s += time.monotonic() - started
            loop_cpu += runs[-1].run["cpu_s"]
            simulated += runs[-1].run["simulated_s"]
        result = worker.TaskResult(task, runs, time.time(), process_s)
        with Database(Path(scratch) / "bench.sqlite") as db:
            scenario_id = db.scenario_id(scenario.name, scenario.digest, str(scenario.path), scenario.text)
            produced = store.versions(bn.describe()["ns3"])
            started = time.monotonic()
            store.store(db, scenario_id, scenario, task, produced, result, None, time.time(), process_s)
            store_s = time.monotonic() - started
    plan_s /= len(scenario.web.pages)  # the plan covered the cell's every page
    per_page = plan_s + (process_s + store_s) / pages
    cores = len(os.sched_getaffinity(0))
    print(f"{pages} matrix pages (confucius, GCC): {simulated / pages:.1f} s simulated per page; per page "
          f"{loop_cpu / pages:.3f} s ns-3's loop ({simulated / loop_cpu:.0f}x), "
          f"{(process_s - loop_cpu) / pages:.3f} s (wall) the rest of the program and reading its logs, "
          f"{plan_s:.3f} s planning, {store_s / pages:.3f} s storing")
    print(f"1000-page sweep of one (scheduler, controller) pair: {per_page * SWEEP_PAGES / 60:.1f} min on one "
          f"core, {per_page * SWEEP_PAGES / cores / 60:.1f} min on this machine's {cores} cores (target 15 min)")


if __name__ == "__main__":
    episode_speed()
    sweep_estimate()
