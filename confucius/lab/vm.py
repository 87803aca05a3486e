# SPDX-License-Identifier: MIT
"""Run a script as root inside Debian's own kernel, under qemu, with the host root shared.

The guest boots Debian's `linux-image-amd64` kernel with a small busybox initramfs
(vm/initramfs/init, built once into build/lab/), mounts the host's root read-only over 9p,
switches root into it and runs the script there (vm/guest/boot.sh): the repository and its
virtualenv are at the same paths as on the host, /tmp and /run are tmpfs, the results
folder is shared read-write at /run/lab/results (exported as $RESULTS), the project's kernel
modules from build/kernel/ are loadable by name and `tc` finds the plugins in build/tc/.

    result = run("tc qdisc add dev lo root cake && tc qdisc show dev lo",
                 results_dir=Path("results/try"), timeout=60)
    result.check()          # raises LabError unless the script exited 0 with a clean kernel log
    print(result.output, result.boot_time)

The exit status comes back behind a per-run random marker on the serial console; the whole
console goes to <results>/console.log and the guest's kernel log to <results>/dmesg.txt.
"""

from __future__ import annotations

import hashlib
import lzma
import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Mapping, Sequence

# TC_PLUGINS and VMResult are read through this module by the runner and tests.
from .engine import (PROJECT_MODULES, REPO, TC_PLUGINS, Kernel, LabError, VMResult,  # noqa: F401
                     built_kernel, check_request, job, machine_slot, module_name, project_modules,
                     supervise)

BUILD_DIR = REPO / "build" / "lab"
INIT_SCRIPT = REPO / "vm" / "initramfs" / "init"
APT_PACKAGES = REPO / "mk" / "apt-packages.txt"
DEPS_SCRIPT = REPO / "mk" / "deps.sh"

QEMU = "qemu-system-x86_64"
BUSYBOX = Path("/bin/busybox")
# What stage 1 needs for its mounts; everything else loads from the host root.
INITRAMFS_MODULES = ("virtio_pci", "9pnet_virtio", "9p", "overlay")
BOOT_TARGET_S = 15.0
# The kernels the engine boots, by name: Debian's installed one (`lab`, 6.1), Debian's 6.12
# unpacked by `make qemu-6.12`, or the x86_64 debug kernel `make debug-kernel-x86` builds
# (KASAN, lockdep, DEBUG_ATOMIC_SLEEP, kmemleak, UBSAN; vm/README.md); and the folder of the
# project's modules built against it.
DEBUG_BUILD = REPO / "build" / "debug-x86"
DEBIAN_612_BUILD = REPO / "build" / "qemu-6.12"
FLAVOURS = {
    "lab": PROJECT_MODULES,
    "6.12": REPO / "build" / "kernel-6.12",
    "debug": REPO / "build" / "kernel-x86-debug",
}
KVM_PROBE_TIMEOUT_S = 20.0
# --------------------------------------------------------------------------- the kernel

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


def modules_dir(flavour: str = "lab") -> Path:
    """The folder of the project's modules built for the flavour's kernel."""
    return FLAVOURS[flavour]


def kernel(flavour: str = "lab") -> Kernel:
    """The kernel a flavour names (FLAVOURS), with its module tree."""
    if flavour not in FLAVOURS:
        raise LabError(f"unknown qemu kernel {flavour!r}; known: {', '.join(FLAVOURS)}")
    if flavour == "lab":
        return detect_kernel()
    if flavour == "6.12":
        return built_kernel(DEBIAN_612_BUILD, DEBIAN_612_BUILD / "vmlinuz", "qemu-6.12")
    return built_kernel(DEBUG_BUILD, DEBUG_BUILD / "linux" / "arch" / "x86" / "boot" / "bzImage",
                        "debug-kernel-x86")


def builtin_modules(modules_dir: Path) -> set[str]:
    """The modules compiled into the kernel (modules.builtin), which need no loading."""
    listing = modules_dir / "modules.builtin"
    return {module_name(line) for line in listing.read_text().split()} if listing.is_file() else set()


def module_load_order(modules_dir: Path, names: Sequence[str]) -> list[Path]:
    """The .ko files for `names` and everything they depend on, dependencies first."""
    deps: dict[str, tuple[str, list[str]]] = {}
    for line in (modules_dir / "modules.dep").read_text().splitlines():
        target, _, needs = line.partition(":")
        deps[module_name(target)] = (target, [module_name(n) for n in needs.split()])
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
    return _build_once(BUILD_DIR / name, f"vmlinux-{kernel.version}-*",
                       lambda: _decompressed_kernel(kernel.image))


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
    builtin = builtin_modules(kernel.modules)
    modules = module_load_order(kernel.modules, [m for m in INITRAMFS_MODULES if m not in builtin])
    module_files = {f"{module_name(str(m))}.ko": _read_module(m) for m in modules}
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
    return _build_once(BUILD_DIR / name, f"initramfs-{kernel.version}-*.cpio",
                       lambda: _initramfs_archive(kernel))


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

def _qemu_path(path: Path) -> str:
    return str(path).replace(",", ",,")  # qemu's option syntax doubles commas


def _check_request(script, timeout, cpus, memory, env, accel) -> None:
    """Refuse a bad request before anything is created or started."""
    check_request(script, timeout, memory, env)
    if not isinstance(cpus, int) or cpus < 1:
        raise LabError(f"cpus must be a positive integer, got {cpus!r}")
    if accel not in (None, "kvm", "tcg"):
        raise LabError(f"accel must be kvm or tcg, got {accel!r}")


def boot_image(kernel: Kernel, flavour: str) -> Path:
    """What qemu boots: Debian's kernel uncompressed, through its PVH entry (vmlinux());
    the debug kernel as its bzImage, through the kernel's own start, which sets KASAN's
    shadow up before instrumented code runs (the PVH entry's xen_prepare_pvh is
    instrumented and runs first: a triple fault)."""
    return vmlinux(kernel) if flavour == "lab" else kernel.image


def _qemu_command(kernel: Kernel, image: Path, accel: str, cpus: int, memory: str, ctl: Path,
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
        "-kernel", str(image), "-initrd", str(initramfs(kernel)), "-append", append,
        "-display", "none", "-serial", "mon:stdio" if interactive else "stdio",
        "-virtfs", "local,path=/,mount_tag=hostroot,security_model=none,readonly=on,multidevs=remap",
        "-virtfs", f"local,path={_qemu_path(results)},mount_tag=results,security_model=none",
        "-virtfs", f"local,path={_qemu_path(ctl)},mount_tag=labctl,security_model=none",
    ]


def _module_tree_settings(kernel: Kernel) -> dict[str, str]:
    """Stage 1's LAB_MODULE_TREE: a kernel of our build has its module tree in build/,
    not at /lib/modules/<version> of the host root."""
    if kernel.modules == Path("/lib/modules") / kernel.version:
        return {}
    return {"LAB_MODULE_TREE": str(kernel.modules)}


def run(script: str | os.PathLike, *, results_dir: os.PathLike, timeout: float = 300.0,
        cpus: int = 2, memory: str = "2G", env: Mapping[str, str] | None = None,
        args: Sequence[str] = (), modules: Sequence[os.PathLike] | None = None,
        accel: str | None = None, echo: bool = False, interactive: bool = False,
        flavour: str = "lab") -> VMResult:
    """Boot the lab VM, run `script` as root inside it and return how it went.

    `script` is shell text (run with bash unless it starts with #!) or a path to a script
    file. `results_dir` is created if needed and is writable inside at /run/lab/results
    ($RESULTS). `modules` are the project's .ko files to make loadable (default: all .ko
    files in the flavour's folder of FLAVOURS, if any). The VM is killed after `timeout`
    seconds in all (boot included). `echo` prints the console live; `interactive` connects
    it to this terminal. `flavour` names the kernel: `lab` (Debian's) or `debug`.
    """
    env = dict(env or {})
    _check_request(script, timeout, cpus, memory, env, accel)
    ensure_packages()
    booted = kernel(flavour)
    modules = project_modules(modules, FLAVOURS[flavour])
    accel = accel or accelerator()
    with job("qemu", script, args, booted, results_dir=results_dir, modules=modules, env=env,
             interactive=interactive, settings=_module_tree_settings(booted)) as run_job:
        qemu = _qemu_command(booted, boot_image(booted, flavour), accel, cpus, memory, run_job.ctl,
                             run_job.results, interactive)
        with machine_slot():
            return supervise(qemu, run_job.nonce, run_job.results, timeout, echo, interactive)


