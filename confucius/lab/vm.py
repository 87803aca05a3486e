# SPDX-License-Identifier: MIT
"""Run a script as root inside Debian's own kernel, under qemu, with the host root shared.

The guest boots Debian's `linux-image-amd64` kernel with a small busybox initramfs
(lab/initramfs/init, built once into build/lab/), mounts the host's root read-only over 9p,
switches root into it and runs the script there (lab/guest/boot.sh): the repository and its
virtualenv are at the same paths as on the host, /tmp and /run are tmpfs, the results
folder is shared read-write at its host path (exported as $RESULTS), the project's kernel
modules from build/kernel/ are loadable by name and `tc` finds the plugins in build/tc/.

    result = run("tc qdisc add dev lo root cake && tc qdisc show dev lo",
                 results_dir=Path("results/try"), timeout=60)
    result.check()          # raises LabError unless the script exited 0 with a clean kernel log
    print(result.output, result.boot_time)

The exit status comes back behind a per-run random marker on the serial console; the whole
console goes to <results>/console.log and the guest's kernel log to <results>/dmesg.txt.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import lzma
import os
import re
import secrets
import shlex
import shutil
import subprocess
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Mapping, Sequence

REPO = Path(__file__).resolve().parents[2]
BUILD_DIR = REPO / "build" / "lab"
INIT_SCRIPT = REPO / "lab" / "initramfs" / "init"
BOOT_SCRIPT = REPO / "lab" / "guest" / "boot.sh"
PROJECT_MODULES = REPO / "build" / "kernel"
TC_PLUGINS = REPO / "build" / "tc"
APT_PACKAGES = REPO / "mk" / "apt-packages.txt"
DEPS_SCRIPT = REPO / "mk" / "deps.sh"

QEMU = "qemu-system-x86_64"
BUSYBOX = Path("/bin/busybox")
# What stage 1 needs for its mounts; everything else loads from the host root.
INITRAMFS_MODULES = ("virtio_pci", "9pnet_virtio", "9p", "overlay")
BOOT_TARGET_S = 15.0
KVM_PROBE_TIMEOUT_S = 20.0
# Lines of a kernel log that mean the kernel found something wrong.
KERNEL_PROBLEM = re.compile(
    r"WARNING:|BUG:|Oops|general protection fault|Kernel panic|unreferenced object|"
    r"KASAN|UBSAN|refcount_t:|list_(add|del) corruption|soft lockup|hung task|Call Trace:")


class LabError(RuntimeError):
    """The VM could not be built, started or told what to run, or a run went wrong."""


# --------------------------------------------------------------------------- the kernel

@dataclass(frozen=True)
class Kernel:
    version: str
    image: Path
    modules: Path


def _version_key(version: str) -> list[tuple[int, str]]:
    # Numbers compare as numbers (6.10 after 6.9); words only break ties.
    return [(int(part) if part.isdigit() else -1, part) for part in re.split(r"[.-]", version)]


def detect_kernel(boot: Path = Path("/boot"), lib_modules: Path = Path("/lib/modules")) -> Kernel:
    """The newest installed kernel that has both an image and its modules."""
    found = [Kernel(image.name.removeprefix("vmlinuz-"), image,
                    lib_modules / image.name.removeprefix("vmlinuz-"))
             for image in boot.glob("vmlinuz-*")]
    found = [k for k in found if (k.modules / "modules.dep").is_file()]
    if not found:
        raise LabError(f"no kernel with modules found ({boot}/vmlinuz-*, {lib_modules}/*/); "
                       "install linux-image-amd64 (make deps)")
    return max(found, key=lambda k: _version_key(k.version))


def _module_name(path: str) -> str:
    return Path(path).name.split(".ko")[0].replace("-", "_")


def module_load_order(modules_dir: Path, names: Sequence[str]) -> list[Path]:
    """The .ko files for `names` and everything they depend on, dependencies first."""
    deps: dict[str, tuple[str, list[str]]] = {}
    for line in (modules_dir / "modules.dep").read_text().splitlines():
        target, _, needs = line.partition(":")
        deps[_module_name(target)] = (target, [_module_name(n) for n in needs.split()])
    order: list[str] = []

    def visit(name: str) -> None:
        if name in order:
            return
        if name not in deps:
            raise LabError(f"kernel module {name} not found in {modules_dir}/modules.dep")
        for need in deps[name][1]:
            visit(need)
        order.append(name)

    for name in names:
        visit(name)
    return [modules_dir / deps[name][0] for name in order]


def _file_digest(*paths: Path) -> str:
    digest = hashlib.sha256()
    for path in paths:
        digest.update(path.name.encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()[:16]


def _build_once(path: Path, pattern: str, make) -> Path:
    """`path`, written by make() unless it exists; stale files matching `pattern` go."""
    if path.is_file():
        return path
    BUILD_DIR.mkdir(parents=True, exist_ok=True)
    for stale in BUILD_DIR.glob(pattern):
        if not stale.name.endswith(".tmp"):  # another process's file in the making
            stale.unlink(missing_ok=True)
    partial = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    partial.write_bytes(make())
    partial.replace(path)  # atomic: concurrent runs never see half a file
    return path


def _decompressed_kernel(image: Path) -> bytes:
    """The ELF kernel inside a bzImage whose payload is xz-compressed (Debian's choice)."""
    data = image.read_bytes()
    start = data.find(b"\xfd7zXZ\x00")
    if start < 0:
        raise LabError(f"{image}: no xz payload found (only xz-compressed bzImages are supported)")
    elf = lzma.LZMADecompressor(format=lzma.FORMAT_XZ).decompress(data[start:])
    if not elf.startswith(b"\x7fELF"):
        raise LabError(f"{image}: the xz payload is not an ELF kernel")
    return elf


def vmlinux(kernel: Kernel) -> Path:
    """The kernel uncompressed, cached in build/lab/.

    qemu boots this ELF through its PVH entry point. Booting the bzImage instead makes the
    guest decompress 8 MB of xz under emulation: about 6 s of every boot, here.
    """
    name = f"vmlinux-{kernel.version}-{_file_digest(kernel.image)}"
    return _build_once(BUILD_DIR / name, "vmlinux-*", lambda: _decompressed_kernel(kernel.image))


# --------------------------------------------------------------------------- the initramfs

def _cpio_entry(name: str, mode: int, data: bytes = b"", rdev: tuple[int, int] = (0, 0)) -> bytes:
    """One entry of a `newc` cpio archive, the format the kernel unpacks as initramfs."""
    encoded = name.encode() + b"\0"
    fields = (0, mode, 0, 0, 1, 0, len(data), 0, 0, rdev[0], rdev[1], len(encoded), 0)
    header = b"070701" + b"".join(f"{value:08x}".encode() for value in fields)
    head = header + encoded
    return head + b"\0" * (-len(head) % 4) + data + b"\0" * (-len(data) % 4)


def _read_module(path: Path) -> bytes:
    # busybox insmod takes plain ELF; newer Debian kernels ship .ko.xz.
    return lzma.decompress(path.read_bytes()) if path.suffix == ".xz" else path.read_bytes()


def _initramfs_archive(kernel: Kernel) -> bytes:
    modules = module_load_order(kernel.modules, INITRAMFS_MODULES)
    module_files = {f"{_module_name(str(m))}.ko": _read_module(m) for m in modules}
    entries = [_cpio_entry(d, 0o040755) for d in ("bin", "dev", "proc", "sys", "newroot", "modules")]
    # The kernel opens /dev/console for init before anything is mounted.
    entries.append(_cpio_entry("dev/console", 0o020600, rdev=(5, 1)))
    entries.append(_cpio_entry("bin/busybox", 0o100755, BUSYBOX.read_bytes()))
    entries.append(_cpio_entry("init", 0o100755, INIT_SCRIPT.read_bytes()))
    entries += [_cpio_entry(f"modules/{name}", 0o100644, data) for name, data in module_files.items()]
    entries.append(_cpio_entry("modules/load-order", 0o100644, "".join(f"{n}\n" for n in module_files).encode()))
    entries.append(_cpio_entry("TRAILER!!!", 0))
    return b"".join(entries)


def initramfs(kernel: Kernel) -> Path:
    """The stage-1 initramfs for `kernel`, built into build/lab/ when its inputs change."""
    name = f"initramfs-{kernel.version}-{_file_digest(INIT_SCRIPT, BUSYBOX)}.cpio"
    return _build_once(BUILD_DIR / name, "initramfs-*.cpio", lambda: _initramfs_archive(kernel))


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


# --------------------------------------------------------------------------- host checks

def ensure_packages() -> None:
    """Install the Debian packages the lab needs if a part of them is missing."""
    if shutil.which(QEMU) and BUSYBOX.is_file() and shutil.which("irtt") and shutil.which("iperf3"):
        try:
            detect_kernel()
            return
        except LabError:
            pass
    if os.geteuid() != 0:
        raise LabError(f"{QEMU}, busybox-static or linux-image-amd64 missing: run `make deps` as root")
    subprocess.run([str(DEPS_SCRIPT), str(APT_PACKAGES)], check=True)


def _kvm_usable_cache() -> Path:
    return BUILD_DIR / f"kvm-probe-{os.uname().release}"


def accelerator() -> str:
    """"kvm" when a probe VM booted with it on this host (cached in build/lab/), else "tcg".

    KVM is not trusted on sight: on some hosts /dev/kvm exists but the guest hangs at boot.
    """
    if not os.access("/dev/kvm", os.R_OK | os.W_OK):
        return "tcg"
    cache = _kvm_usable_cache()
    if cache.is_file():
        return cache.read_text().strip()
    with tempfile.TemporaryDirectory(prefix="lab-kvm-probe-") as results:
        probe = run("true", results_dir=Path(results), timeout=KVM_PROBE_TIMEOUT_S, accel="kvm")
    verdict = "kvm" if probe.returncode == 0 else "tcg"
    BUILD_DIR.mkdir(parents=True, exist_ok=True)
    cache.write_text(verdict + "\n")
    return verdict


# --------------------------------------------------------------------------- one run

@dataclass
class VMResult:
    returncode: int | None          # None when the script did not finish (timeout, crash)
    output: str                     # what the script wrote to stdout and stderr
    boot_time: float | None         # seconds from starting qemu to the guest being ready
    kernel: str                     # the guest's `uname -r`
    results_dir: Path
    timed_out: bool = False
    duration: float = 0.0
    console: str = field(default="", repr=False)   # the whole serial console, boot included

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
            what = ("timed out" if self.timed_out else
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


class _Console:
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


def _qemu_path(path: Path) -> str:
    return str(path).replace(",", ",,")  # qemu's option syntax doubles commas


def _check_request(script, timeout, cpus, memory, env, accel) -> None:
    """Refuse a bad request before anything is created or started."""
    if isinstance(script, os.PathLike) and not Path(script).is_file():
        raise LabError(f"no such script: {script}")
    if not timeout > 0:
        raise LabError(f"timeout must be positive, got {timeout!r}")
    if not isinstance(cpus, int) or cpus < 1:
        raise LabError(f"cpus must be a positive integer, got {cpus!r}")
    if not re.fullmatch(r"[1-9][0-9]*[MG]", str(memory)):
        raise LabError(f"memory must be a size like 512M or 2G, got {memory!r}")
    if accel not in (None, "kvm", "tcg"):
        raise LabError(f"accel must be kvm or tcg, got {accel!r}")
    _env_lines(env)


def _qemu_command(kernel: Kernel, accel: str, cpus: int, memory: str, ctl: Path,
                  results: Path, interactive: bool) -> list[str]:
    accel_opts = ["-accel", "kvm", "-cpu", "host"] if accel == "kvm" else \
        ["-accel", "tcg,thread=multi", "-cpu", "max"]
    # Crypto self-tests and CPU-bug mitigations cost seconds of boot under emulation and test
    # nothing of ours. TCG's TSC follows one clock for all vCPUs, but the kernel's sync
    # check fails on emulation jitter and falls back to the HPET, whose every read exits to
    # qemu: with tsc=reliable clock reads are ~6x cheaper (243k vs 43k/s from Python).
    append = ("console=ttyS0 quiet panic=-1 mitigations=off cryptomgr.notests "
              "8250.nr_uarts=1 random.trust_cpu=on tsc=reliable")
    return [
        QEMU, "-nodefaults", "-no-user-config", "-no-reboot", "-machine", "q35", *accel_opts,
        "-smp", str(cpus), "-m", memory,
        "-kernel", str(vmlinux(kernel)), "-initrd", str(initramfs(kernel)), "-append", append,
        "-display", "none", "-serial", "mon:stdio" if interactive else "stdio",
        "-virtfs", "local,path=/,mount_tag=hostroot,security_model=none,readonly=on,multidevs=remap",
        "-virtfs", f"local,path={_qemu_path(results)},mount_tag=results,security_model=none",
        "-virtfs", f"local,path={_qemu_path(ctl)},mount_tag=labctl,security_model=none",
    ]


def _write_script(ctl: Path, script: str | os.PathLike, args: Sequence[str]) -> str:
    """Copy the script and its arguments into the control share; return its interpreter
    ("" when it has a #! line of its own, bash otherwise)."""
    text = Path(script).read_text() if isinstance(script, os.PathLike) else str(script)
    target = ctl / "script"
    target.write_text(text)
    target.chmod(0o755)
    (ctl / "args").write_text("".join(f"{arg}\0" for arg in map(str, args)))
    return "" if text.startswith("#!") else "/bin/bash"


def _tc_system_dir() -> str:
    """Where this system's tc keeps its plugins and netem distributions (Debian: multiarch)."""
    found = sorted(Path("/usr/lib").glob("*/tc/normal.dist")) or sorted(Path("/usr/lib/tc").glob("normal.dist"))
    return str(found[0].parent) if found else "/usr/lib/tc"


def _project_modules(modules: Sequence[os.PathLike] | None) -> list[Path]:
    if modules is None:
        return sorted(PROJECT_MODULES.glob("*.ko")) if PROJECT_MODULES.is_dir() else []
    paths = [Path(m) for m in modules]
    missing = [str(p) for p in paths if not p.is_file()]
    if missing:
        raise LabError(f"kernel module not found: {', '.join(missing)}")
    return paths


def _env_lines(env: Mapping[str, str]) -> list[str]:
    bad = [name for name in env if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name)]
    if bad:
        raise LabError(f"not a valid environment variable name: {', '.join(map(repr, bad))}")
    return [f"export {name}={shlex.quote(str(value))}" for name, value in env.items()]


def _write_job(ctl: Path, kernel: Kernel, *, nonce: str, results: Path, interpreter: str,
               modules: list[Path], env: Mapping[str, str], interactive: bool) -> None:
    """The control share: boot.sh, the modules with their index, lab.env (the harness's
    settings, plain assignments that both stage 1, busybox sh, and stage 2, bash, source)
    and env.sh (the script's environment, sourced only where the script starts, so that no
    name in it can disturb the boot scripts)."""
    shutil.copy(BOOT_SCRIPT, ctl / "boot.sh")
    (ctl / "modules").mkdir()
    if modules:  # copied: the host path may be hidden in the guest (e.g. under /tmp)
        for module in modules:
            shutil.copy(module, ctl / "modules" / module.name)
        write_module_index(kernel, modules, ctl / "modules" / "index")
    settings = {
        "LAB_NONCE": nonce, "LAB_REPO": str(REPO), "LAB_RESULTS": str(results),
        "LAB_TC_SYSTEM": _tc_system_dir(), "LAB_TC_PLUGINS": str(TC_PLUGINS),
        "LAB_INTERPRETER": interpreter, "LAB_INTERACTIVE": str(int(interactive)),
    }
    (ctl / "lab.env").write_text("".join(f"{name}={shlex.quote(value)}\n"
                                         for name, value in settings.items()))
    guest_env = {
        "PATH": f"{REPO / '.venv' / 'bin'}:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
        "HOME": "/tmp", "LANG": "C.UTF-8", "TERM": os.environ.get("TERM", "linux"),
        "PYTHONDONTWRITEBYTECODE": "1",  # the root is read-only
        "TC_LIB_DIR": "/run/lab/tc", "LAB_REPO": str(REPO), "RESULTS": str(results), **env,
    }
    (ctl / "env.sh").write_text("\n".join(_env_lines(guest_env)) + "\n")


def run(script: str | os.PathLike, *, results_dir: os.PathLike, timeout: float = 300.0,
        cpus: int = 2, memory: str = "2G", env: Mapping[str, str] | None = None,
        args: Sequence[str] = (), modules: Sequence[os.PathLike] | None = None,
        accel: str | None = None, echo: bool = False, interactive: bool = False) -> VMResult:
    """Boot the lab VM, run `script` as root inside it and return how it went.

    `script` is shell text (run with bash unless it starts with #!) or a path to a script
    file. `results_dir` is created if needed and is writable inside at the same path
    ($RESULTS). `modules` are the project's .ko files to make loadable (default: all of
    build/kernel/*.ko, if any). The VM is killed after `timeout` seconds in all (boot
    included). `echo` prints the console live; `interactive` connects it to this terminal.
    """
    env = dict(env or {})
    _check_request(script, timeout, cpus, memory, env, accel)
    modules = _project_modules(modules)
    ensure_packages()
    kernel = detect_kernel()
    accel = accel or accelerator()
    results = Path(results_dir).resolve()
    results.mkdir(parents=True, exist_ok=True)
    for stale in ("dmesg.txt", "console.log"):
        (results / stale).unlink(missing_ok=True)
    nonce = secrets.token_hex(8)
    with tempfile.TemporaryDirectory(prefix="lab-ctl-") as ctl_name:
        ctl = Path(ctl_name)
        interpreter = _write_script(ctl, script, args)
        _write_job(ctl, kernel, nonce=nonce, results=results, interpreter=interpreter,
                   modules=modules, env=env, interactive=interactive)
        qemu = _qemu_command(kernel, accel, cpus, memory, ctl, results, interactive)
        with _machine_slot():
            return _supervise(qemu, nonce, results, timeout, echo, interactive)


# One VM at a time on a machine: emulated VMs sharing its cores slow each other's clocks
# and CPUs unpredictably, which would distort every timing the lab measures.
MACHINE_LOCK = Path(tempfile.gettempdir()) / "confucius-lab-vm.lock"


@contextlib.contextmanager
def _machine_slot():
    with open(MACHINE_LOCK, "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def _supervise(qemu: list[str], nonce: str, results: Path, timeout: float, echo: bool,
               interactive: bool) -> VMResult:
    started = time.monotonic()
    if interactive:
        proc = subprocess.Popen(qemu)
        console = None
    else:
        proc = subprocess.Popen(qemu, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT)
        console = _Console(proc.stdout, nonce, echo, started)
    timed_out = False
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        timed_out = True
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    duration = time.monotonic() - started
    if console is None:
        return VMResult(None, "", None, "", results, timed_out, duration)
    console.join()
    log = "\n".join(console.lines) + "\n"
    (results / "console.log").write_text(log)
    return VMResult(returncode=console.returncode, output=console.script_output(),
                    boot_time=console.ready_at, kernel=console.kernel, results_dir=results,
                    timed_out=timed_out, duration=duration, console=log)
