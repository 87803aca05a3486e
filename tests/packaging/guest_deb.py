#!/usr/bin/env python
# SPDX-License-Identifier: MIT
"""The Debian packages' life on a router, inside the lab VM (run by test_deb_vm.py).

Usage: guest_deb.py DKMS_DEB TC_DEB VERSION [HEADERS_DEB...]

The guest's root is the host's, shared read-only, so first /boot, /etc, /usr and /var get
an overlay each whose upper layer is a tmpfs: dpkg, DKMS and depmod write there and
nowhere else, and everything this script installs vanishes with the VM. Then, as on a
router: dpkg installs the running kernel's headers when they are given (Debian's 6.12,
which the host does not have), both packages (DKMS builds the module for the running
kernel in the postinst and installs it, and skips a newer kernel outside the range
dkms.conf declares), stock tc adds the qdisc (the kernel loads the module by itself), and
dpkg purges both. Every step's command, exit status, output and duration go to
$RESULTS/packaging.json; the test judges them.
"""

import json
import os
import subprocess
import sys
import time
from pathlib import Path

WRITABLE = ("/boot", "/etc", "/usr", "/var")
SCRATCH = Path("/run/deb-test")
DEV = "dummy0"
MODULE = "sch_confucius"
# A kernel newer than the range dkms.conf declares (BUILD_EXCLUSIVE_KERNEL, 6.1 to 7.3),
# made to look installed with the running kernel's headers: DKMS must skip it.
OUTSIDE = "7.4.0-1-amd64"


def sh(command: str, env: dict | None = None) -> dict:
    start = time.monotonic()
    done = subprocess.run(["bash", "-c", command], capture_output=True, text=True, env=env)
    return {"command": command, "rc": done.returncode, "stdout": done.stdout,
            "stderr": done.stderr, "seconds": round(time.monotonic() - start, 2)}


def must(command: str, env: dict | None = None) -> dict:
    step = sh(command, env)
    if step["rc"] != 0:
        sys.exit(f"guest_deb: `{command}` exited {step['rc']}:\n{step['stdout']}{step['stderr']}")
    return step


def mount_points() -> list[str]:
    return [line.split()[1] for line in Path("/proc/self/mounts").read_text().splitlines()]


def mounts_under(top: str) -> list[str]:
    """The outermost mounts below `top` (moving one carries those inside it along)."""
    below = [m for m in mount_points() if m.startswith(top + "/")]
    return [m for m in below if not any(m.startswith(other + "/") for other in below)]


def overlay(top: str) -> None:
    """`top` over a tmpfs upper. An overlay's lower layer is the directory alone, without
    the mounts below it, so these are moved aside and back on top: the module tree the
    lab mounts at /usr/lib/modules (for the 6.12 kernel, the only place it is) and /var/tmp."""
    upper, work = SCRATCH / top.strip("/") / "upper", SCRATCH / top.strip("/") / "work"
    aside = {mount: SCRATCH / "aside" / mount.strip("/") for mount in mounts_under(top)}
    for mount, parked in aside.items():
        must(f"mkdir -p {parked} && mount --move {mount} {parked}")
    must(f"mkdir -p {upper} {work} && mount -t overlay overlay "
         f"-o lowerdir={top},upperdir={upper},workdir={work} {top}")
    for mount, parked in aside.items():
        must(f"mkdir -p {mount} && mount --move {parked} {mount}")


def writable_overlays() -> list[str]:
    """WRITABLE over tmpfs uppers; returns the mount table's lines for them."""
    must(f"mkdir -p {SCRATCH} && mount -t tmpfs -o mode=0755 tmpfs {SCRATCH}")
    for top in WRITABLE:
        overlay(top)
    mounts = Path("/proc/self/mounts").read_text().splitlines()
    return [line for line in mounts if line.split()[1] in WRITABLE]


def process_substitution() -> None:
    """/dev/fd, which udev makes on a booted system and the lab's bare devtmpfs lacks:
    dkms reads its own output through bash's <(...)."""
    if not Path("/dev/fd").exists():
        Path("/dev/fd").symlink_to("/proc/self/fd")


def stock_tc_env() -> dict:
    """The environment without the lab's TC_LIB_DIR: tc looks where Debian's tc looks."""
    return {name: value for name, value in os.environ.items() if name != "TC_LIB_DIR"}


def installed_files(packages: list[str]) -> list[str]:
    listed = must("dpkg -L " + " ".join(packages))["stdout"].splitlines()
    return sorted(path for path in listed if Path(path).is_file())


def module_files(kernel: str) -> list[str]:
    return sorted(str(p) for p in Path(f"/lib/modules/{kernel}").rglob(f"{MODULE}.ko*"))


def install_headers(debs: list[str]) -> dict:
    """The running kernel's headers, installed as a user installs them. Debian's
    linux-headers-KERNEL depends on linux-image-KERNEL, which is running but which qemu
    booted from build/qemu-6.12, so dpkg's database lacks it: dpkg configures the headers
    all the same and names each dependency it let go (the test checks it is that one)."""
    return sh("dpkg -i --force-depends " + " ".join(debs))


def kernel_outside_the_range(kernel: str) -> None:
    """OUTSIDE as Debian installs a kernel: its config in /boot (the postinst builds for
    the newest kernel there as well as the running one) and headers under build/."""
    headers = Path(f"/lib/modules/{kernel}/build").resolve()
    must(f"cp {headers}/.config /boot/config-{OUTSIDE} && mkdir -p /lib/modules/{OUTSIDE} "
         f"&& ln -s {headers} /lib/modules/{OUTSIDE}/build")


def main() -> None:
    start = time.monotonic()
    dkms_deb, tc_deb, version, *headers_debs = sys.argv[1:]
    kernel = os.uname().release
    tc_env = stock_tc_env()
    add = f"tc qdisc add dev {DEV} root confucius bandwidth 10mbit"
    found: dict = {"kernel": kernel, "version": version}
    found["overlays"] = writable_overlays()
    process_substitution()
    found["before"] = {"module_files": module_files(kernel),
                       "dpkg": sh("dpkg-query -W confucius-dkms confucius-tc")}
    if headers_debs:
        found["headers"] = install_headers(headers_debs)
    kernel_outside_the_range(kernel)

    found["install"] = sh(f"dpkg -i {dkms_deb} {tc_deb}")
    if found["install"]["rc"] == 0:
        found["files"] = installed_files(["confucius-dkms", "confucius-tc"])
        found["dkms_status"] = sh("dkms status confucius")
        found["module_files"] = module_files(kernel)
        # What a kernel package's postinst runs for a new kernel; then, whether the
        # postinst or the hook left a module for OUTSIDE.
        found["outside_kernel_hook"] = sh(f"/etc/kernel/postinst.d/dkms {OUTSIDE}")
        found["outside_module_files"] = module_files(OUTSIDE)
        found["modinfo_version"] = sh(f"modinfo -F version {MODULE}")
        found["loaded_before_tc"] = Path(f"/sys/module/{MODULE}").exists()
        must(f"ip link add {DEV} type dummy && ip link set {DEV} up")
        found["tc_add"] = sh(add, tc_env)
        version_file = Path(f"/sys/module/{MODULE}/version")
        found["loaded_version"] = version_file.read_text().strip() if version_file.exists() else None
        found["tc_show"] = sh(f"tc qdisc show dev {DEV}", tc_env)
        found["tc_help"] = sh(f"tc qdisc add dev {DEV} root confucius help", tc_env)
        must(f"tc qdisc del dev {DEV} root && rmmod {MODULE}")

        found["purge"] = sh("dpkg --purge confucius-tc confucius-dkms")
        found["after"] = {
            "left": [path for path in found["files"] if Path(path).exists()],
            "module_files": module_files(kernel),
            "dkms_tree": Path("/var/lib/dkms/confucius").exists(),
            "dpkg": sh("dpkg-query -W -f='${Status}\\n' confucius-dkms confucius-tc"),
            "modprobe": sh(f"modprobe {MODULE}"),
            "tc_help": sh(f"tc qdisc add dev {DEV} root confucius help", tc_env),
            # Without options tc needs no plugin: only the kernel can refuse the kind.
            "tc_add_bare": sh(f"tc qdisc add dev {DEV} root confucius", tc_env),
        }
    found["seconds"] = round(time.monotonic() - start, 1)
    (Path(os.environ["RESULTS"]) / "packaging.json").write_text(json.dumps(found, indent=1))


if __name__ == "__main__":
    main()
