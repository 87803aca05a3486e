# SPDX-License-Identifier: MIT
"""The fixed-seed episodes a change to the simulator's speed must leave as they were, byte
for byte: each program's JSON (less its timing fields) and its frame log, into a folder.

    python sim/ns3/episodes.py OUT [--binary build/sim/bottleneck]
    diff -r BEFORE AFTER        # nothing: the same packets at the same times

The demo's episode (GCC, amazon page) under confucius and under fq_codel, the same under
Copa and over TCP BBR, and the first three pages of the matrix's first task.
"""

import argparse
import re
import subprocess
from pathlib import Path

from confucius.experiment.scenario import load
from confucius.sim import bottleneck as bn
from confucius.sim import plan

REPO = Path(__file__).resolve().parents[2]
# What depends on the machine, not on the simulation.
TIMING = re.compile(r',"(wall_s|cpu_s|speed|cpu_speed)":[^,}]*')
MATRIX_PAGES = 3


def first_task(scenario: str, scheduler: str) -> plan.SimTask:
    loaded = load(REPO / "scenarios" / scenario, ccas=bn.NS3_CCAS)
    tasks, _ = plan.plan(loaded, schedulers=[scheduler], controllers=["gcc"])
    return tasks[0]


def with_rt(args: list[str], rt: str) -> list[str]:
    return [f"--rt={rt}" if a.startswith("--rt=") else a for a in args]


def episodes() -> dict[str, tuple[list[str], str]]:
    """name: (bottleneck's options but the page, the page's text)."""
    demo, fq = first_task("demo.toml", "confucius"), first_task("demo.toml", "fq_codel")
    amazon, options = demo.pages[0].text, plan.page_options(demo, demo.pages[0])
    chosen = {"gcc-confucius": (options, amazon),
              "gcc-fq_codel": (plan.page_options(fq, fq.pages[0]), fq.pages[0].text),
              "copa-confucius": (with_rt(options, "copa"), amazon),
              "tcp-bbr-confucius": (with_rt(options, "tcp-bbr"), amazon)}
    matrix = first_task("matrix.toml", "confucius")
    for i, page in enumerate(matrix.pages[:MATRIX_PAGES]):
        chosen[f"matrix{i}"] = (plan.page_options(matrix, page), page.text)
    return chosen


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--binary", type=Path, default=bn.BOTTLENECK)
    options = parser.parse_args()
    options.out.mkdir(parents=True, exist_ok=True)
    binary = options.binary.resolve()
    for name, (args, page) in episodes().items():
        # Paths relative to the folder: the page's report names its file.
        (options.out / f"{name}.page.txt").write_text(page)
        done = subprocess.run([str(binary), *args, f"--page={name}.page.txt", f"--frame-log={name}.frames.csv"],
                              capture_output=True, text=True, check=True, cwd=options.out)
        (options.out / f"{name}.json").write_text(TIMING.sub("", done.stdout))
        print(f"{name}: {options.out / name}.json and .frames.csv")


if __name__ == "__main__":
    main()
