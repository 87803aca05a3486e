# SPDX-License-Identifier: MIT
"""The kernel that the in-guest kernel tests boot, chosen by CONFUCIUS_TEST_KERNEL:

  qemu       Debian's kernel under qemu (the default)
  x86-debug  the x86_64 debug kernel under qemu, 2 vCPUs: KASAN, lockdep,
             DEBUG_ATOMIC_SLEEP, kmemleak and UBSAN (make debug-kernel-x86), as
             `make soak SOAK_KERNEL=x86-debug` runs them
  uml        the lab's User-Mode Linux kernel (make uml)
  uml-debug  the same with KASAN, lockdep, kmemleak and UBSAN (make uml-debug), as
             `make soak` runs them

UML runs here on the host's clock ("real"), not in virtual time: pktgen's floods and
a busy kernel keep the CPU from idling, and in inf-cpu time that stops the guest's
clock, so the suites' sleeps would never end.
"""

from __future__ import annotations

import os
from pathlib import Path

from confucius.lab import uml, vm
from confucius.lab.engine import LabError, VMResult

VARIABLE = "CONFUCIUS_TEST_KERNEL"
QEMU_FLAVOURS = {"qemu": "lab", "x86-debug": "debug"}
UML_FLAVOURS = {"uml": "lab", "uml-debug": "debug"}
KERNELS = (*QEMU_FLAVOURS, *UML_FLAVOURS)


def chosen() -> str:
    name = os.environ.get(VARIABLE, "qemu")
    if name not in KERNELS:
        raise LabError(f"{VARIABLE}={name!r}: known kernels are {', '.join(KERNELS)}")
    return name


def project_modules() -> Path:
    """Where the chosen kernel's build of sch_confucius.ko lives."""
    name = chosen()
    if name in QEMU_FLAVOURS:
        return vm.FLAVOURS[QEMU_FLAVOURS[name]]
    return uml.FLAVOURS[UML_FLAVOURS[name]][1]


def run(script, *, results_dir: os.PathLike, timeout: float) -> VMResult:
    """`script` run as root in the chosen kernel (vm.run or uml.run)."""
    name = chosen()
    if name in QEMU_FLAVOURS:
        return vm.run(script, results_dir=results_dir, timeout=timeout, flavour=QEMU_FLAVOURS[name])
    return uml.run(script, results_dir=results_dir, timeout=timeout, time_mode="real",
                   flavour=UML_FLAVOURS[name])
