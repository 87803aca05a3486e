#!/usr/bin/env python
# SPDX-License-Identifier: MIT
"""The Debian packages' life on a router, inside the lab VM (run by test_deb_vm.py).

Usage: guest_deb.py DKMS_DEB TC_DEB VERSION

The guest's root is the host's, shared read-only, so first /etc, /usr and /var get an
overlay each whose upper layer is a tmpfs: dpkg, DKMS and depmod write there and nowhere
else, and everything this script installs vanishes with the VM. Then, as on a router:
dpkg installs both packages (DKMS builds the module for the running kernel in the
postinst and installs it), stock tc adds the qdisc (the kernel loads the module by
itself), and dpkg purges both. Every step's command, exit status, output and duration go
to $RESULTS/packaging.json; the test judges them.
"""

import json
import os
import subprocess
import sys
import time
from pathlib import Path

WRITABLE = ("/etc", "/usr", "/var")
SCRATCH = Path("/run/deb-test")
DEV = "dummy0"
MODULE = "sch_confucius"


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


def writable_overlays() -> list[str]:
    """/etc, /usr and /var over tmpfs uppers; returns the mount table's lines for them."""
    must(f"mkdir -p {SCRATCH} && mount -t tmpfs -o mode=0755 tmpfs {SCRATCH}")
    for top in WRITABLE:
        upper, work = SCRATCH / top.strip("/") / "upper", SCRATCH / top.strip("/") / "work"
        must(f"mkdir -p {upper} {work} && mount -t overlay overlay "
             f"-o lowerdir={top},upperdir={upper},workdir={work} {top}")
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


def main() -> None:
    start = time.monotonic()
    dkms_deb, tc_deb, version = sys.argv[1:4]
    kernel = os.uname().release
    tc_env = stock_tc_env()
    add = f"tc qdisc add dev {DEV} root confucius bandwidth 10mbit"
    found: dict = {"kernel": kernel, "version": version}
    found["overlays"] = writable_overlays()
    process_substitution()
    found["before"] = {"module_files": module_files(kernel),
                       "dpkg": sh("dpkg-query -W confucius-dkms confucius-tc")}

    found["install"] = sh(f"dpkg -i {dkms_deb} {tc_deb}")
    if found["install"]["rc"] == 0:
        found["files"] = installed_files(["confucius-dkms", "confucius-tc"])
        found["dkms_status"] = sh("dkms status confucius")
        found["module_files"] = module_files(kernel)
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
