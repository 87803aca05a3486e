# SPDX-License-Identifier: MIT
"""The ns-3 engine of per-CCA runs: build/sim/percca (sim/ns3/percca.cc) for one point,
with the same flows, classifier draw, queues and weights as the lab's tc lines, and its
output turned into the lab's figures (results.summarise).

What it mirrors of the lab (tc.py): the shared FIFO (pfifo of the buffer under HTB ->
FIFO under TBF), `confucius mode external` with one class per queue, the weights tc would
write (tc.class_weights) and a filter per queue on the flows' destination ports. DRR has no
ns-3 counterpart: the program says so, and scenarios with it are refused (mix_scenario.py)."""

from __future__ import annotations

import functools
import json
from pathlib import Path

from confucius.ns3 import BUILD, SimError, provenance, run_program

from . import tc
from .figures import Figures, summarise
from .mix_scenario import FIRST_PORT

PERCCA = BUILD / "percca"
RAW = "ns3.json"


def versions(binary: Path = PERCCA) -> dict:
    """What produced the runs: ns-3, the program, the tree's commit."""
    return provenance("percca", binary, describe(binary)["ns3"])


@functools.cache
def describe(binary: Path = PERCCA) -> dict:
    """{"ns3": version, "ccas": {name: ns-3 type}, "qdiscs": [...], "missing": {qdisc: why}}:
    the program's own table, so that no second list can disagree."""
    return run_program(binary, ["--describe"])


def arguments(scenario, point, flows, queues: int, weights: tuple[int, ...]) -> list[str]:
    """The program's options for one point: `flows` as runner.flows_of draws them, `queues`
    and `weights` as the lab's runner gives them to tc."""
    shared = point.policy == "shared"
    args = [f"--flows={','.join(f'{f.cca}:{f.queue + 1}' for f in flows)}",
            f"--policy={'shared' if shared else 'external'}",
            f"--rate={scenario.rate_bps:.0f}bps", f"--rtt={round(scenario.rtt_s * 1e9)}ns",
            f"--buffer={scenario.buffer}", f"--warmup={round(scenario.warmup_s * 1e9)}ns",
            f"--duration={round(scenario.duration_s * 1e9)}ns",
            f"--sample={round(scenario.sample_s * 1e9)}ns",
            f"--first-port={FIRST_PORT}", f"--seed={point.seed}"]
    if not shared:
        chosen = tc.class_weights(queues, list(weights) or None, [(f.port, f.queue) for f in flows],
                                  active=scenario.service == "active")
        args += [f"--qdisc={scenario.qdisc}", f"--queues={queues}", f"--weights={':'.join(map(str, chosen or []))}"]
    return args


def figures(raw: dict, ccas: list[str], queues: int) -> Figures:
    """The program's JSON as the lab's figures: throughput over the measured window,
    occupancy samples and drops per queue."""
    seconds = raw["window_s"]
    flow_bps = [f["bytes"] * 8 / seconds for f in raw["flows"]]
    occupancy = [(t, q["queue"], n) for q in raw["queues"] for t, n in q["samples"]]
    drops = {q["queue"]: q["drops"] for q in raw["queues"]}
    return summarise(flow_bps, seconds, ccas, [f["cca"] for f in raw["flows"]], queues, occupancy, drops)


def run(args: list[str], directory: Path, binary: Path = PERCCA) -> dict:
    """One simulation; its JSON, also kept in the run's folder."""
    raw = run_program(binary, args)
    (directory / RAW).write_text(json.dumps(raw) + "\n")
    return raw
