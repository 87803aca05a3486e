# SPDX-License-Identifier: MIT
"""make bench-sim: how fast the simulator runs the lab's page-load episodes. Printed,
asserted nowhere (a benchmark: the machine is shared). CPU seconds are the programs' own
(getrusage of the children, ns-3's `cpu_s` for its event loop): what one core does,
whatever else the machine runs; wall seconds are printed beside them.

1. One episode of the demo (scenarios/demo.toml: confucius, GCC, 20 Mbit/s, 40 ms, the
   amazon page after the [sim] warm-up, then the tail): simulated seconds per CPU second.
2. Where its time goes: the same episode without the page, without the video, and under
   pfifo instead of confucius, per simulated second and per packet the bottleneck carried.
3. One task of scenarios/matrix.toml (its first pages_per_run sampled pages, confucius,
   GCC) as `confucius sim sweep` runs it, timed part by part (planning, ns-3's event loop,
   the rest of each program, storing); from it, the 1000-page sweep of one (scheduler,
   controller) pair with one worker per core.
"""

import os
import resource
import tempfile
import time
from pathlib import Path

from confucius.experiment import db_runs
from confucius.experiment.db import Database
from confucius.experiment.scenario import load
from confucius.sim import bottleneck as bn
from confucius.sim import plan, store, worker

REPO = Path(__file__).resolve().parents[2]
SWEEP_PAGES = 1000


def children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def one_task(path: Path) -> tuple[plan.SimTask, object, float]:
    """The scenario's first confucius/GCC task, and the CPU seconds per page of planning."""
    scenario = load(path, ccas=bn.NS3_CCAS)
    started = time.process_time()
    tasks, _ = plan.plan(scenario, schedulers=["confucius"], controllers=["gcc"])
    return tasks[0], scenario, (time.process_time() - started) / len(scenario.web.pages)


def run(task: plan.SimTask, scratch: Path, without: tuple[str, ...] = (), extra: tuple[str, ...] = ()) -> dict:
    """The task's first page with options left out (by prefix) or added."""
    args = plan.page_options(task, task.pages[0])
    args = [a for a in args if not a.startswith(without)] if without else args
    (scratch / "page.txt").write_text(task.pages[0].text)
    page = [] if "--page" in without else [f"--page={scratch / 'page.txt'}"]
    return bn.run_bottleneck([*args, *page, f"--frame-log={scratch / 'frames.csv'}", *extra])


def carried(result: dict) -> int:
    return result["disc"]["sent"]


def episode_speed(scratch: Path) -> None:
    task, _, _ = one_task(REPO / "scenarios" / "demo.toml")
    cpu, wall = children_cpu(), time.monotonic()
    full = run(task, scratch)
    cpu, wall = children_cpu() - cpu, time.monotonic() - wall
    print(f"demo episode (confucius, GCC, amazon page, PLT {full['page']['plt_s']:.2f} s): "
          f"{full['simulated_s']:.1f} s simulated; ns-3's loop {full['cpu_s']:.2f} s CPU = "
          f"{full['simulated_s'] / full['cpu_s']:.0f}x real time on one core (target 50x); the whole "
          f"program {cpu:.2f} s CPU ({full['simulated_s'] / cpu:.0f}x), {wall:.2f} s wall "
          f"({full['simulated_s'] / wall:.0f}x) at load {os.getloadavg()[0]:.1f}")
    parts = {"the episode": full,
             "video alone (no page)": run(task, scratch, without=("--page",), extra=(
                 f"--duration={full['simulated_s']}s",)),
             "page alone (no video)": run(task, scratch, without=("--rt=",), extra=("--rt=udp", "--rt-rate=0")),
             "the episode under pfifo": run(task, scratch, without=("--scheduler",), extra=("--scheduler=pfifo",))}
    print("where ns-3's loop spends it:")
    for name, r in parts.items():
        print(f"  {name:26} {r['simulated_s']:5.1f} s simulated, {r['cpu_s']:5.2f} s CPU, "
              f"{r['cpu_s'] / r['simulated_s'] * 1e3:5.1f} ms per simulated s, {carried(r):6d} packets "
              f"through the bottleneck, {r['cpu_s'] / max(carried(r), 1) * 1e6:5.1f} us per packet")


def sweep_estimate(scratch: Path) -> None:
    task, scenario, plan_s = one_task(REPO / "scenarios" / "matrix.toml")
    pages = len(task.pages)
    cpu = children_cpu()
    result = worker.simulate(task)
    cpu, wall = children_cpu() - cpu, result.wall_s
    loop_s = sum(page.run["cpu_s"] for page in result.pages)
    simulated = sum(page.run["simulated_s"] for page in result.pages)
    with Database(scratch / "bench.sqlite") as db:
        scenario_id = db.scenario_id(scenario.name, scenario.digest, str(scenario.path), scenario.text)
        produced = store.versions(bn.describe()["ns3"])
        started = time.process_time()
        measured = store.measurement(task, scenario, produced, result, None, result.started_unix, wall)
        db_runs.store_run(db, scenario_id, measured.row, measured.data)
        store_s = time.process_time() - started
    per_page = plan_s + (cpu + store_s) / pages
    cores = len(os.sched_getaffinity(0))
    print(f"{pages} matrix pages (confucius, GCC), per page: {simulated / pages:.1f} s simulated, "
          f"{loop_s / pages:.3f} s CPU in ns-3's loop ({simulated / loop_s:.0f}x), {(cpu - loop_s) / pages:.3f} s "
          f"CPU in the rest of the program, {plan_s:.3f} s planning, {store_s / pages:.3f} s storing "
          f"({wall / pages:.2f} s wall per program at load {os.getloadavg()[0]:.1f})")
    print(f"1000-page sweep of one (scheduler, controller) pair: {per_page * SWEEP_PAGES / 60:.1f} min of CPU, "
          f"{per_page * SWEEP_PAGES / cores / 60:.1f} min on this machine's {cores} cores when they are free "
          f"(target 15 min)")


if __name__ == "__main__":
    with tempfile.TemporaryDirectory() as folder:
        episode_speed(Path(folder))
        sweep_estimate(Path(folder))
