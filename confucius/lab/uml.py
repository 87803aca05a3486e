# SPDX-License-Identifier: MIT
"""Run a script as root inside our User-Mode Linux kernel, in virtual time.

The second engine of the lab, beside `vm` (Debian's kernel under qemu): the same
`run(script, results_dir=..., timeout=...)` returning the same `VMResult`, the same guest
filesystem (the host's root read-only at the same paths, tmpfs scratch, $RESULTS
writable, the project's modules loadable by name, `tc` finding the plugins) and the same
stage 2 (vm/guest/boot.sh). The kernel (`make uml`, build/uml/linux, Debian's
linux-source-6.1 for ARCH=um) runs natively as host processes, with no emulation, and in
time-travel mode its clock is virtual: in `inf-cpu` CPU work takes no guest time and idle
time is skipped, so what the guest measures does not depend on the host's load or speed.

Virtual time has a hazard of its own: a guest program that spins (polls without
sleeping) never lets the clock advance. A heartbeat in the guest (vm/uml/init) writes a
file once a second of guest time; a run whose heartbeat stands still while its processes
use `stall` seconds of the host's CPU is ended and reported as stalled. CPU seconds, not
wall seconds: in inf-cpu mode a guest's legitimate CPU work takes no guest time either, and
on a busy host it can take minutes of wall time while the guest gets little CPU; only
work without end uses that much CPU with the clock standing; a guest held in a host call,
whose clock and CPU time both stand still for HELD_S of wall time, is ended too. For the
same reason a run's timeout counts the heartbeat's guest seconds in inf-cpu, not wall
seconds, so that the host's load cannot end a run either. UML's processes are host
processes: every run starts in a session of its own and every process of that session is
ended by PID.
"""

from __future__ import annotations

import contextlib
import mmap
import os
import signal
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Iterator, Mapping, Sequence

from confucius.experiment.engines import REGISTRY, SEED_LIMIT

from . import xsave
from .engine import (REPO, Kernel, LabError, VMResult, built_kernel, check_request, job, machine_slot,
                     project_modules, supervise)

BUILD_DIR = REPO / "build" / "uml"
KERNEL_BINARY = BUILD_DIR / "linux"
PROJECT_MODULES = REPO / "build" / "kernel-uml"
INIT_SCRIPT = REPO / "vm" / "uml" / "init"
CONFIG = REPO / "kernel" / "uml" / "uml.config"     # the lab's fragment of the kernel's configuration
# The kernels `make uml`, `make uml-6.12` and `make uml-debug` build, by name: build folder
# and the folder of the project's modules built against it. `lab` is Debian 12's 6.1.
FLAVOURS = {
    "lab": (BUILD_DIR, PROJECT_MODULES),
    "6.12": (REPO / "build" / "uml-6.12", REPO / "build" / "kernel-uml-6.12"),
    "debug": (REPO / "build" / "uml-debug", REPO / "build" / "kernel-uml-debug"),
}

# Guest time modes, by name: the kernel's time-travel option for each (None: none).
TIME_MODES = {
    "inf-cpu": "time-travel=inf-cpu",   # CPU work is free; idle time skipped
    "basic": "time-travel",             # CPU work takes host time; idle time skipped
    "real": None,                       # the host's clock, as under qemu
}
TIME_MODE = REGISTRY["uml"].time_mode   # the default (inf-cpu), see vm/README.md
# Modes whose guest time no host load can stretch: their runs need no machine slot.
HOST_INDEPENDENT = frozenset({"inf-cpu"})
STALL_S = 60.0                 # host CPU seconds with the guest's clock standing still
HELD_S = 300.0                 # wall-clock seconds with neither the guest's clock nor its CPU time moving
# A seeded boot (`seed`): the kernel option of kernel/uml/patches/0001-random-seed.patch, which
# makes every random number in the guest a function of the seed, and the instant its wall clock
# starts at in virtual time instead of the host's (TCP's initial sequence numbers read it):
# 2026-01-01 00:00 UTC. vm/README.md, "Repeatable runs".
SEED_OPTION = "random.seed"
SEEDED_CLOCK_START_NS = 1_767_225_600 * 10**9


def modules_dir(flavour: str = "lab") -> Path:
    """The folder of the project's modules built for the flavour's kernel."""
    return FLAVOURS[flavour][1]


def make_target(flavour: str) -> str:
    """The make target that builds the flavour's kernel."""
    return "uml" if flavour == "lab" else f"uml-{flavour}"


def kernel(flavour: str = "lab") -> Kernel:
    """The UML kernel `make uml` (`make uml-FLAVOUR` for the others) built, with its
    installed module tree."""
    if flavour not in FLAVOURS:
        raise LabError(f"unknown UML kernel {flavour!r}; known: {', '.join(FLAVOURS)}")
    build = FLAVOURS[flavour][0]
    return built_kernel(build, build / "linux", make_target(flavour))


def _check_time_mode(time_mode: str) -> None:
    if time_mode not in TIME_MODES:
        raise LabError(f"unknown UML time mode {time_mode!r}; known: {', '.join(TIME_MODES)}")


def check_seedable(image: Path = KERNEL_BINARY) -> None:
    """LabError unless the kernel `image` takes a seed: one built before the patch would
    ignore the option and boot unseeded."""
    try:
        with open(image, "rb") as file, mmap.mmap(file.fileno(), 0, access=mmap.ACCESS_READ) as binary:
            seedable = binary.find(SEED_OPTION.encode() + b"\0") >= 0
    except (OSError, ValueError) as err:
        raise LabError(f"cannot read the UML kernel {image}: {err}; run `make uml`") from None
    if not seedable:
        raise LabError(f"the UML kernel {image} has no {SEED_OPTION} option "
                       "(kernel/uml/patches/0001-random-seed.patch): run `make uml`")


def _check_seed(seed: int | None) -> None:
    if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed < SEED_LIMIT):
        raise LabError(f"seed must be an integer from 0 to 2^63 - 1, got {seed!r}")


def _seed_options(seed: int | None, time_mode: str) -> list[str]:
    if seed is None:
        return []
    clock = [f"time-travel-start={SEEDED_CLOCK_START_NS}"] if TIME_MODES[time_mode] else []
    return [f"{SEED_OPTION}={seed}", *clock]


def _command(image: Path, memory: str, time_mode: str, seed: int | None, ctl: Path,
             uml_dir: Path) -> list[str]:
    # Root is the host's, read-only over hostfs; the console is the process's stdout and
    # every other line is closed. LAB_CTL reaches init as an environment variable. UML
    # keeps its pid file and control socket in uml_dir (by default ~/.uml, where a killed
    # kernel leaves them behind).
    clock = [TIME_MODES[time_mode]] if TIME_MODES[time_mode] else []
    return [str(image), f"mem={memory}", "root=/dev/root", "rootfstype=hostfs", "rootflags=/",
            "ro", f"init={INIT_SCRIPT}", "con=null", "ssl=null", "con0=null,fd:1", "quiet",
            *clock, *_seed_options(seed, time_mode), f"uml_dir={uml_dir}", f"LAB_CTL={ctl}"]


def _engine_env() -> dict[str, str]:
    # UML maps its memory from a file in TMPDIR: /dev/shm keeps it in RAM.
    return {**os.environ, "TMPDIR": "/dev/shm"}


class _Heartbeat:
    """Whether the guest stopped advancing: its heartbeat file stood still while the guest's
    processes (the session of the kernel `proc` started) used `stall` seconds of host CPU
    (a spin), or while they used none for `held` wall-clock seconds (held in a host call)."""

    def __init__(self, path: Path, stall: float, held: float = HELD_S):
        self._path = path
        self._stall = stall
        self._held = held
        self._seen: str | None = None
        self._cpu_at_beat: float | None = None
        self._last: tuple | None = None
        self._moved_at = time.monotonic()

    def __call__(self, proc: subprocess.Popen) -> bool:
        try:
            beat = self._path.read_text()
        except OSError:
            beat = None
        cpu = session_cpu_seconds(proc.pid)
        now = time.monotonic()
        if (beat, cpu) != self._last:
            self._last, self._moved_at = (beat, cpu), now
        if beat != self._seen or self._cpu_at_beat is None:
            self._seen, self._cpu_at_beat = beat, cpu
        # Processes that ended took their CPU time along: the sum may fall, never rise falsely.
        self._cpu_at_beat = min(self._cpu_at_beat, cpu)
        return cpu - self._cpu_at_beat > self._stall or now - self._moved_at > self._held

    def guest_seconds(self) -> float:
        """The guest's seconds since its heartbeat started: 0 before the first beat (and
        while a beat is being written)."""
        try:
            return float(self._path.read_text())
        except (OSError, ValueError):
            return 0.0


def process_stats() -> Iterator[tuple[int, list[str]]]:
    """Every host process's PID and the fields of its /proc stat after the command name
    (which may hold spaces and parentheses): state, ppid, pgrp, session, ..."""
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue  # gone meanwhile
        yield int(entry.name), stat[stat.rindex(")") + 2:].split()


def _session_stats(session: int) -> list[tuple[int, list[str]]]:
    # Zombies run nothing: they wait for their parent to collect them.
    return [(pid, fields) for pid, fields in process_stats()
            if int(fields[3]) == session and fields[0] != "Z"]


def session_processes(session: int) -> list[int]:
    """PIDs of the live host processes in `session`."""
    return [pid for pid, _ in _session_stats(session)]


def session_cpu_seconds(session: int) -> float:
    """User and system CPU seconds of the live processes in `session`."""
    ticks = sum(int(fields[11]) + int(fields[12]) for _, fields in _session_stats(session))
    return ticks / os.sysconf("SC_CLK_TCK")


def end_session(session: int, attempts: int = 50) -> None:
    """SIGKILL every process of `session` by PID until none is left. Killing UML's main
    process alone leaves the processes that run the guest's programs behind."""
    for _ in range(attempts):
        pids = session_processes(session)
        if not pids:
            return
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        time.sleep(0.1)
    raise LabError(f"UML session {session} still has processes: {session_processes(session)}")


def _slot(time_mode: str):
    """The machine slot a run in `time_mode` needs: none in virtual CPU time, where
    sharing the host's cores with other runs changes no figure, only wall-clock time."""
    return contextlib.nullcontext() if time_mode in HOST_INDEPENDENT else machine_slot()


def run(script: str | os.PathLike, *, results_dir: os.PathLike, timeout: float = 300.0,
        memory: str = "2G", env: Mapping[str, str] | None = None, args: Sequence[str] = (),
        modules: Sequence[os.PathLike] | None = None, echo: bool = False,
        time_mode: str = TIME_MODE, stall: float = STALL_S, flavour: str = "lab",
        seed: int | None = None) -> VMResult:
    """Boot the UML kernel, run `script` as root inside it and return how it went.

    As `vm.run` (less `interactive`: UML's console takes no input here), with `modules`
    defaulting to the flavour's modules (build/kernel-uml/*.ko for `lab`), `timeout` in the
    guest's seconds in host-independent time modes and in wall-clock seconds otherwise,
    `time_mode` one of TIME_MODES, `stall` the host CPU seconds the guest may use while its
    clock stands still before the run is ended, `flavour` one of FLAVOURS, and `seed` (0 to
    2^63 - 1) the seed of every random number in the guest: with a seed, a run in `inf-cpu`
    repeats exactly; None draws them from the host.
    """
    env = dict(env or {})
    check_request(script, timeout, memory, env)
    _check_time_mode(time_mode)
    _check_seed(seed)
    if not stall > 0:
        raise LabError(f"stall must be positive, got {stall!r}")
    uml = kernel(flavour)
    xsave.check(FLAVOURS[flavour][0] / "src", make_target(flavour))
    if seed is not None:
        check_seedable(uml.image)
    modules = project_modules(modules, FLAVOURS[flavour][1])
    settings = {"LAB_POWER_OFF": "o", "LAB_UML_MODULES": str(uml.modules)}
    with job("uml", script, args, uml, results_dir=results_dir, modules=modules, env=env,
             interactive=False, settings=settings) as run_job, \
            tempfile.TemporaryDirectory(prefix="lab-uml-") as uml_dir:
        command = _command(uml.image, memory, time_mode, seed, run_job.ctl, Path(uml_dir))
        heartbeat = _Heartbeat(run_job.ctl / "alive", stall)
        # Where the guest's clock is independent of the host, so is its timeout: a busy host
        # slows a run without ending it.
        with _slot(time_mode):
            return supervise(command, run_job.nonce, run_job.results, timeout, echo,
                             env=_engine_env(), stalled=heartbeat, stop=lambda proc: end_session(proc.pid),
                             clock=heartbeat.guest_seconds if time_mode in HOST_INDEPENDENT else None)

