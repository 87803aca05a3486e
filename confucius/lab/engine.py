# SPDX-License-Identifier: MIT
"""What the lab's engines share: the result of a run, the run's control folder, the
console markers, the kernel-log checks and the machine-wide slot.

Two engines run a script as root in a Linux kernel with the host's root filesystem at the
same paths: `vm` (Debian's kernel under qemu, real time) and `uml` (our User-Mode Linux
kernel, virtual time). Both hand the guest a control folder (lab.env, env.sh, the script
and its arguments, vm/guest/boot.sh, the project's modules with their depmod index) and
read the same markers from its console, so a script, and the experiment runner, cannot
tell them apart except by `uname -r` and time.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import re
import secrets
import shlex
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Mapping, Sequence

REPO = Path(__file__).resolve().parents[2]
BOOT_SCRIPT = REPO / "vm" / "guest" / "boot.sh"
PROJECT_MODULES = REPO / "build" / "kernel"
TC_PLUGINS = REPO / "build" / "tc"
# Where the guest sees the run's results folder ($RESULTS inside). A fixed path rather than
# the host's: in virtual time every path level the guest walks costs clock reads, so a
# results folder lying deeper on the host would move every later event (vm/README.md,
# "Repeatable runs").
GUEST_RESULTS = "/run/lab/results"
# How often a run's supervisor looks at its deadline and watchdog.
WATCH_INTERVAL_S = 1.0
# Lines of a kernel log that mean the kernel found something wrong.
KERNEL_PROBLEM = re.compile(
    r"WARNING:|BUG:|Oops|general protection fault|Kernel panic|unreferenced object|"
    r"KASAN|UBSAN|ODEBUG:|refcount_t:|list_(add|del) corruption|soft lockup|hung task|Call Trace:")


class LabError(RuntimeError):
    """The VM could not be built, started or told what to run, or a run went wrong."""


@dataclass(frozen=True)
class Kernel:
    version: str
    image: Path
    modules: Path


def module_name(path: str) -> str:
    return Path(path).name.split(".ko")[0].replace("-", "_")


def built_kernel(build: Path, image: Path, make_target: str) -> Kernel:
    """A kernel the project builds: `image` and the module tree `make modules_install`
    left in build/modules/lib/modules/<version>/ (LabError naming `make_target` if not)."""
    module_root = build / "modules" / "lib" / "modules"
    trees = sorted(module_root.glob("*/modules.dep")) if module_root.is_dir() else []
    if not image.is_file() or not trees:
        raise LabError(f"no kernel built in {build}: run `make {make_target}`")
    tree = trees[-1].parent
    return Kernel(tree.name, image, tree)


# --------------------------------------------------------------------------- module index

def write_module_index(kernel: Kernel, modules: Sequence[Path], into: Path) -> None:
    """depmod's index (modules.dep, modules.alias, their .bin forms ...) of the kernel's
    modules plus `modules` in extra/, written into the folder `into`.

    Made on the host, where it takes a second: in the guest depmod reads every module of
    the tree over 9p under emulation, which takes minutes.
    """
    with tempfile.TemporaryDirectory(prefix="lab-depmod-") as base:
        tree = Path(base) / "lib" / "modules" / kernel.version
        (tree / "extra").mkdir(parents=True)
        for entry in kernel.modules.iterdir():  # what depmod reads, not what it writes
            if entry.name == "kernel" or entry.name.startswith(("modules.builtin", "modules.order")):
                (tree / entry.name).symlink_to(entry)
        for module in modules:
            shutil.copy(module, tree / "extra" / module.name)
        done = subprocess.run(["depmod", "-b", base, kernel.version], capture_output=True, text=True)
        if done.returncode != 0:
            raise LabError(f"depmod failed for {', '.join(map(str, modules))}:\n{done.stderr}")
        into.mkdir(parents=True, exist_ok=True)
        for made in tree.glob("modules.*"):
            if not made.is_symlink():
                shutil.move(made, into / made.name)


# --------------------------------------------------------------------------- one run

@dataclass
class VMResult:
    returncode: int | None          # None when the script did not finish (timeout, crash)
    output: str                     # what the script wrote to stdout and stderr
    boot_time: float | None         # seconds from starting the engine to the guest being ready
    kernel: str                     # the guest's `uname -r`
    results_dir: Path
    timed_out: bool = False
    duration: float = 0.0
    console: str = field(default="", repr=False)   # the whole serial console, boot included
    stalled: bool = False           # ended by the watchdog: the guest's clock stopped advancing

    @property
    def dmesg(self) -> str:
        """The guest's kernel log, saved by the guest after the script ("" if it never got there)."""
        path = self.results_dir / "dmesg.txt"
        return path.read_text(errors="replace") if path.is_file() else ""

    def kernel_problems(self) -> list[str]:
        """Lines of the kernel log (or the console, if the guest died) reporting a problem."""
        log = self.dmesg or self.console
        return [line for line in log.splitlines() if KERNEL_PROBLEM.search(line)]

    def check(self) -> VMResult:
        """This result, if the script exited 0 and the kernel reported nothing wrong."""
        problems = self.kernel_problems()
        if self.returncode != 0 or problems:
            what = ("stopped advancing (its clock stood still) and was ended" if self.stalled else
                    "timed out" if self.timed_out else
                    "died before the script ended" if self.returncode is None else
                    f"exited {self.returncode}")
            if problems:
                lines = problems
            elif self.boot_time is None:  # the script never started: the console tells why
                lines = self.console.splitlines()
            else:
                lines = self.output.splitlines()
            tail = "\n".join(lines[-30:])
            raise LabError(f"guest script {what}"
                           f"{' with kernel problems' if problems else ''}:\n{tail}")
        return self


class Console:
    """Reads the guest's serial console: keeps it all, notes when the markers appear."""

    def __init__(self, stream, nonce: str, echo: bool, started: float):
        self.lines: list[str] = []
        self.ready_at: float | None = None
        self.ready_index = 0
        self.kernel = ""
        self.exit_index: int | None = None
        self.returncode: int | None = None
        self._marker = f"@@lab:{nonce}:"
        self._echo = echo
        self._started = started
        self._thread = threading.Thread(target=self._read, args=(stream,), daemon=True)
        self._thread.start()

    def _read(self, stream) -> None:
        for raw in iter(stream.readline, b""):
            line = raw.decode(errors="replace").rstrip("\r\n")
            if line.startswith(self._marker):
                self._on_marker(line.removeprefix(self._marker))
            elif self._echo and self.exit_index is None:  # after the exit: reset noise
                print(line, flush=True)
            self.lines.append(line)

    def _on_marker(self, text: str) -> None:
        if text.startswith("ready"):
            self.ready_at = time.monotonic() - self._started
            self.ready_index = len(self.lines) + 1
            self.kernel = re.search(r"kernel=(\S+)", text).group(1)
        elif text.startswith("exit="):
            self.exit_index = len(self.lines)
            self.returncode = int(text.removeprefix("exit="))

    def join(self) -> None:
        self._thread.join(timeout=5)

    def script_output(self) -> str:
        end = self.exit_index if self.exit_index is not None else len(self.lines)
        lines = self.lines[self.ready_index:end]
        if lines and lines[-1] == "":
            lines = lines[:-1]  # the newline the exit marker puts first
        return "\n".join(lines)


def write_script(ctl: Path, script: str | os.PathLike, args: Sequence[str]) -> str:
    """Copy the script and its arguments into the control share; return its interpreter
    ("" when it has a #! line of its own, bash otherwise)."""
    text = Path(script).read_text() if isinstance(script, os.PathLike) else str(script)
    target = ctl / "script"
    target.write_text(text)
    target.chmod(0o755)
    (ctl / "args").write_text("".join(f"{arg}\0" for arg in map(str, args)))
    return "" if text.startswith("#!") else "/bin/bash"


def tc_system_dir() -> str:
    """Where this system's tc keeps its plugins and netem distributions (Debian: multiarch)."""
    found = sorted(Path("/usr/lib").glob("*/tc/normal.dist")) or sorted(Path("/usr/lib/tc").glob("normal.dist"))
    return str(found[0].parent) if found else "/usr/lib/tc"


def project_modules(modules: Sequence[os.PathLike] | None, built: Path) -> list[Path]:
    """`modules` checked, or all .ko files in `built` (the engine's kernel's build folder)."""
    if modules is None:
        return sorted(built.glob("*.ko")) if built.is_dir() else []
    paths = [Path(m) for m in modules]
    missing = [str(p) for p in paths if not p.is_file()]
    if missing:
        raise LabError(f"kernel module not found: {', '.join(missing)}")
    return paths


def in_guest(results: Path, path: os.PathLike) -> str:
    """The guest's path of `path`, a file in the run's results folder `results`."""
    return str(Path(GUEST_RESULTS) / Path(path).relative_to(results))


def env_lines(env: Mapping[str, str]) -> list[str]:
    bad = [name for name in env if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name)]
    if bad:
        raise LabError(f"not a valid environment variable name: {', '.join(map(repr, bad))}")
    return [f"export {name}={shlex.quote(str(value))}" for name, value in env.items()]


def write_job(ctl: Path, kernel: Kernel, *, engine: str, nonce: str, results: Path,
              interpreter: str, modules: list[Path], env: Mapping[str, str], interactive: bool,
              settings: Mapping[str, str] | None = None) -> None:
    """The control share: boot.sh, the modules with their index, lab.env (the harness's
    settings, plain assignments that both stage 1, busybox sh, and stage 2, bash, source)
    and env.sh (the script's environment, sourced only where the script starts, so that no
    name in it can disturb the boot scripts). `settings` adds to or overrides lab.env for
    one engine, e.g. LAB_POWER_OFF, the sysrq key that ends the guest: b (a reset, which
    qemu's -no-reboot turns into an exit) or o (UML, which would boot again on a reset)."""
    shutil.copy(BOOT_SCRIPT, ctl / "boot.sh")
    (ctl / "modules").mkdir()
    if modules:  # copied: the host path may be hidden in the guest (e.g. under /tmp)
        for module in modules:
            shutil.copy(module, ctl / "modules" / module.name)
        write_module_index(kernel, modules, ctl / "modules" / "index")
    settings = {
        "LAB_NONCE": nonce, "LAB_REPO": str(REPO), "LAB_RESULTS": str(results),
        "LAB_RESULTS_GUEST": GUEST_RESULTS,
        "LAB_TC_SYSTEM": tc_system_dir(), "LAB_TC_PLUGINS": str(TC_PLUGINS),
        "LAB_INTERPRETER": interpreter, "LAB_INTERACTIVE": str(int(interactive)),
        "LAB_POWER_OFF": "b", **(settings or {}),
    }
    (ctl / "lab.env").write_text("".join(f"{name}={shlex.quote(value)}\n"
                                         for name, value in settings.items()))
    guest_env = {
        "PATH": f"{REPO / '.venv' / 'bin'}:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
        "HOME": "/tmp", "LANG": "C.UTF-8", "TERM": os.environ.get("TERM", "linux"),
        "PYTHONDONTWRITEBYTECODE": "1",  # the root is read-only
        "TC_LIB_DIR": "/run/lab/tc", "LAB_REPO": str(REPO), "RESULTS": GUEST_RESULTS,
        "LAB_ENGINE": engine, **env,
    }
    (ctl / "env.sh").write_text("\n".join(env_lines(guest_env)) + "\n")


def check_request(script, timeout, memory, env) -> None:
    """Refuse a bad request before anything is created or started (what every engine takes)."""
    if isinstance(script, os.PathLike) and not Path(script).is_file():
        raise LabError(f"no such script: {script}")
    if not timeout > 0:
        raise LabError(f"timeout must be positive, got {timeout!r}")
    if not re.fullmatch(r"[1-9][0-9]*[MG]", str(memory)):
        raise LabError(f"memory must be a size like 512M or 2G, got {memory!r}")
    env_lines(env)


@dataclass(frozen=True)
class Job:
    ctl: Path        # the control folder the guest reads (see write_job)
    nonce: str       # the console markers' per-run secret
    results: Path    # the results folder, absolute


@contextlib.contextmanager
def job(engine: str, script: str | os.PathLike, args: Sequence[str], kernel: Kernel, *,
        results_dir: os.PathLike, modules: list[Path], env: Mapping[str, str],
        interactive: bool, settings: Mapping[str, str] | None = None):
    """A run's control folder, alive for the `with` block, and its results folder, created
    and cleared of the files the guest and the supervisor write."""
    results = Path(results_dir).resolve()
    results.mkdir(parents=True, exist_ok=True)
    for stale in ("dmesg.txt", "console.log"):
        (results / stale).unlink(missing_ok=True)
    nonce = secrets.token_hex(8)
    with tempfile.TemporaryDirectory(prefix="lab-ctl-") as ctl_name:
        ctl = Path(ctl_name)
        interpreter = write_script(ctl, script, args)
        write_job(ctl, kernel, engine=engine, nonce=nonce, results=results, interpreter=interpreter,
                  modules=modules, env=env, interactive=interactive, settings=settings)
        yield Job(ctl, nonce, results)


# One VM at a time on a machine: emulated VMs sharing its cores slow each other's clocks
# and CPUs unpredictably, which would distort every timing the lab measures.
MACHINE_LOCK = Path(tempfile.gettempdir()) / "confucius-lab-vm.lock"


@contextlib.contextmanager
def machine_slot():
    """The machine to this run alone. A run that must wait for another says so on stderr:
    the wait is not part of its timeout, which counts from the VM's start."""
    with open(MACHINE_LOCK, "a") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            print(f"lab: another lab VM holds this machine ({MACHINE_LOCK}); waiting for it to end",
                  file=sys.stderr, flush=True)
            fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def _kill(proc: subprocess.Popen) -> None:
    proc.kill()


def supervise(command: list[str], nonce: str, results: Path, timeout: float, echo: bool,
              interactive: bool = False, *, env: Mapping[str, str] | None = None,
              stalled: Callable[[subprocess.Popen], bool] | None = None,
              stop: Callable[[subprocess.Popen], None] = _kill,
              clock: Callable[[], float] | None = None) -> VMResult:
    """Run the engine's `command` until it exits, `timeout` seconds pass on `clock` (wall-clock
    seconds since the start if None) or `stalled(proc)` says the guest stopped advancing;
    then `stop` it (and whatever it left). Not interactive, it runs in a session of its own,
    so that `stop` can find everything it started."""
    started = time.monotonic()
    if interactive:
        proc = subprocess.Popen(command, env=env)
        console = None
    else:
        proc = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, env=env, start_new_session=True)
        console = Console(proc.stdout, nonce, echo, started)
    timed_out = was_stalled = False
    try:
        while proc.poll() is None:
            if (clock() if clock else time.monotonic() - started) >= timeout:
                timed_out = True
                break
            if stalled is not None and stalled(proc):
                was_stalled = True
                break
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=WATCH_INTERVAL_S)
    finally:
        stop(proc)  # also after an exit: an engine's helpers may outlive its main process
        proc.wait()
    duration = time.monotonic() - started
    if console is None:
        return VMResult(None, "", None, "", results, timed_out, duration)
    console.join()
    log = "\n".join(console.lines) + "\n"
    (results / "console.log").write_text(log)
    return VMResult(returncode=console.returncode, output=console.script_output(),
                    boot_time=console.ready_at, kernel=console.kernel, results_dir=results,
                    timed_out=timed_out, duration=duration, console=log, stalled=was_stalled)
