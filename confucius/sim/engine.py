# SPDX-License-Identifier: MIT
"""The simulator as the engine `ns3` of the registry (experiment/engines.py): a planned
task (plan.SimTask, the experiment's task with the bottleneck's options) simulated page by
page (worker.simulate) and handed back as the lab hands back a run (store.measurement)."""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

from confucius.experiment import engines
from confucius.experiment.engines import Program
from confucius.experiment.results import Measurement
from confucius.experiment.scenario import Scenario, SchedulerChoice

from . import bottleneck as bn
from . import store, worker
from .plan import SimTask


@dataclass(frozen=True)
class Ns3Engine(engines.Registered):
    name: str = "ns3"
    binary: Path = bn.BOTTLENECK

    def ccas(self) -> tuple[str, ...]:
        return bn.NS3_CCAS

    def programs(self, scenario: Scenario, schedulers: Sequence[SchedulerChoice] | None = None) -> dict[str, Program]:
        return {"bottleneck": (self.binary, "make sim")}

    def measure(self, task: SimTask, scenario: Scenario, results_root: Path, versions: dict,
                echo: bool = False) -> Measurement:
        """Simulate the task by the program whose digest `versions` records (a simulation
        keeps no results folder: `results_root` is not used)."""
        started, clock = time.time(), time.monotonic()
        try:
            result, error = worker.simulate(task, self.binary, versions.get("bottleneck_sha256")), None
        except bn.SimError as err:
            result, error = None, str(err)
        return store.measurement(task, scenario, versions, result, error, started, time.monotonic() - clock)


NS3 = Ns3Engine()
