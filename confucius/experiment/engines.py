# SPDX-License-Identifier: MIT
"""The engines a scenario can name, in one registry, and what each one offers (`Engine`).

    engine("uml").time_mode        # 'inf-cpu', as runs and keys record it
    engine("qemu").measure(task, scenario, results_root, versions)   # one planned run

Three engines run the experiments: `qemu` (Debian's kernel under qemu, real time) and
`uml` (the project's User-Mode Linux kernel, virtual time), both in confucius/lab, and
`ns3` (the core as an ns-3 queue disc, simulated time) in confucius/sim. This layer stands
below both, so the registry names each implementation by its module and loads it on first
use, as the command line registers its parts; what the keys and the database record of an
engine (its name and clock) is written here, so that planning needs no engine loaded.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Protocol, Sequence, runtime_checkable

if TYPE_CHECKING:  # for the annotations only: the implementations import this module
    from .plan import Task
    from .results import Measurement
    from .scenario import Scenario, SchedulerChoice

# The kernel generations a VM engine boots, by version: the flavour of each engine's kernels
# (lab/vm.py and lab/uml.py FLAVOURS) that is that generation. 6.1 is Debian 12's, which
# every run recorded before there was a choice ran; 6.12 the LTS of Debian 13 and OpenWrt
# 25.12 (Debian 12's bookworm-security archive carries it).
GENERATIONS = {"6.1": "lab", "6.12": "6.12"}
DEFAULT_GENERATION = "6.1"
# A guest's random seed: the UML kernel takes 64 bits, the database's integers are signed 64-bit.
SEED_LIMIT = 2**63


@dataclass(frozen=True)
class EngineEntry:
    name: str                # as scenarios, the command line and runs.engine name it
    time_mode: str           # the guest's clock, as runs.time_mode and the keys record it
    virtual: bool            # a clock no host load can shape: runs side by side, no wait for low steal
    boots_kernel: bool       # a VM (lab scenarios run there) rather than a simulator
    implementation: str      # "module:attribute" of the object that implements Engine


REGISTRY = {entry.name: entry for entry in (
    EngineEntry("qemu", "real", virtual=False, boots_kernel=True, implementation="confucius.lab.runner:QEMU"),
    EngineEntry("uml", "inf-cpu", virtual=True, boots_kernel=True, implementation="confucius.lab.runner:UML"),
    EngineEntry("ns3", "simulated", virtual=True, boots_kernel=False, implementation="confucius.sim.engine:NS3"),
)}
# The engines a lab scenario's `engine` may name (the simulator reads those scenarios as they are).
VM_ENGINES = tuple(name for name, entry in REGISTRY.items() if entry.boots_kernel)

# A program a run uses, by the name runs' `versions` record its digest under: its path and
# the make target that builds it.
Program = tuple[Path, str]


@runtime_checkable
class Engine(Protocol):
    """What every engine offers the experiment layer."""
    name: str
    time_mode: str
    virtual: bool

    def ccas(self) -> tuple[str, ...]:
        """The TCP congestion controls its flows can use."""

    def programs(self, scenario: Scenario, schedulers: Sequence[SchedulerChoice] | None = None) -> dict[str, Program]:
        """The project's programs the scenario's runs use here (only under `schedulers`, if given)."""

    def measure(self, task: Task, scenario: Scenario, results_root: Path, versions: dict,
                echo: bool = False) -> Measurement:
        """Run one planned task (plan.Task) and return its `runs` row and data."""


class Registered:
    """What the registry records of an engine (its clock), read by the engine's name: the
    base of every implementation, so that no engine states it twice."""
    name: str

    @property
    def time_mode(self) -> str:
        return entry(self.name).time_mode

    @property
    def virtual(self) -> bool:
        return entry(self.name).virtual


class EngineError(ValueError):
    """An engine that is not in the registry."""


def entry(name: str) -> EngineEntry:
    if name not in REGISTRY:
        raise EngineError(f"unknown engine {name!r}; the engines are {', '.join(REGISTRY)}")
    return REGISTRY[name]


def engine(name: str) -> Engine:
    """The implementation of the engine `name`, loaded on first use."""
    module, attribute = entry(name).implementation.split(":")
    return getattr(importlib.import_module(module), attribute)
