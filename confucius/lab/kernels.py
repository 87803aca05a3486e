# SPDX-License-Identifier: MIT
"""The kernels the project's kernel checks boot, by name: the names
CONFUCIUS_TEST_KERNEL (tests/kernel/guest_kernel.py), `make soak SOAK_KERNEL=` and
`confucius lab soak --kernel` take.

  qemu       Debian's kernel under qemu (6.1)
  qemu-6.12  Debian's 6.12 under qemu (make qemu-6.12 kmod-6.12)
  x86-debug  the x86_64 debug kernel under qemu, 2 vCPUs: KASAN, lockdep,
             DEBUG_ATOMIC_SLEEP, kmemleak and UBSAN (make debug-kernel-x86)
  uml        the lab's User-Mode Linux kernel, Debian 12's 6.1 (make uml)
  uml-6.12   the same from Debian's 6.12 source, the kernel of Debian 13 and
             OpenWrt 25.12 (make uml-6.12)
  uml-debug  the same with KASAN, lockdep, kmemleak and UBSAN (make uml-debug)

UML runs these checks on the host's clock ("real"), not in virtual time: pktgen's
floods and a busy kernel keep the CPU from idling, and in inf-cpu time that stops the
guest's clock, so the checks' sleeps would never end.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from . import uml, vm
from .engine import LabError, VMResult


@dataclass(frozen=True)
class GuestKernel:
    engine: str          # "qemu" or "uml"
    flavour: str         # the engine's FLAVOURS key
    source: Path | None  # the tree whose scripts/faddr2line resolves our module's frames

    @property
    def modules(self) -> Path:
        """The folder of the project's modules built for this kernel."""
        if self.engine == "qemu":
            return vm.FLAVOURS[self.flavour]
        return uml.FLAVOURS[self.flavour][1]

    def run(self, script, **request) -> VMResult:
        """`script` run as root in this kernel (vm.run's or uml.run's keyword arguments)."""
        if self.engine == "qemu":
            return vm.run(script, flavour=self.flavour, **request)
        return uml.run(script, flavour=self.flavour, time_mode="real", **request)


KERNELS = {
    "qemu": GuestKernel("qemu", "lab", None),
    "qemu-6.12": GuestKernel("qemu", "6.12", None),
    "x86-debug": GuestKernel("qemu", "debug", vm.DEBUG_BUILD / "linux" / "source"),
    "uml": GuestKernel("uml", "lab", uml.BUILD_DIR / "src"),
    "uml-6.12": GuestKernel("uml", "6.12", uml.FLAVOURS["6.12"][0] / "src"),
    "uml-debug": GuestKernel("uml", "debug", uml.FLAVOURS["debug"][0] / "src"),
}


def named(name: str, among: tuple[str, ...] = tuple(KERNELS), what: str = "kernel") -> GuestKernel:
    """The kernel called `name`, which must be one of `among`."""
    if name not in among:
        raise LabError(f"unknown {what} {name!r}; known: {', '.join(among)}")
    return KERNELS[name]


def from_environment(variable: str = "CONFUCIUS_TEST_KERNEL", default: str = "qemu") -> GuestKernel:
    """The kernel an environment variable names (`default` when it is unset)."""
    return named(os.environ.get(variable, default), what=f"kernel in {variable}:")
