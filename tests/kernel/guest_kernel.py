# SPDX-License-Identifier: MIT
"""The kernel that the in-guest kernel tests boot: the one CONFUCIUS_TEST_KERNEL names
among confucius.lab.kernels.KERNELS (qemu, Debian's kernel under qemu, by default;
x86-debug, uml and uml-debug otherwise, as `make soak` runs them)."""

from __future__ import annotations

import os
from pathlib import Path

from confucius.lab import kernels
from confucius.lab.engine import VMResult


def project_modules() -> Path:
    """Where the chosen kernel's build of sch_confucius.ko lives."""
    return kernels.from_environment().modules


def run(script, *, results_dir: os.PathLike, timeout: float) -> VMResult:
    """`script` run as root in the chosen kernel."""
    return kernels.from_environment().run(script, results_dir=results_dir, timeout=timeout)
