# SPDX-License-Identifier: MIT
"""tdc in a User-Mode Linux kernel built from the base with the series applied.

    .venv/bin/python upstream/tdc_vm.py --kernel LINUX --tc-testing DIR --tc TC --out DIR

Boots the kernel (real time, the host's root read-only over hostfs, upstream/tdc-init as
PID 1), which runs the kernel's own tdc.py on tc-tests/qdiscs/confucius.json with the tc
given and writes tdc's TAP output and exit status into --out. Prints the TAP output, and
exits 0 only if tdc ran every case and none failed. A guest that does not finish within
--timeout seconds is ended: every host process of its session, by PID, as the lab ends
its UML guests (confucius.lab.uml.end_session).
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

from confucius.lab.uml import end_session

HERE = Path(__file__).resolve().parent
INIT = HERE / "tdc-init"
CASES = "tc-tests/qdiscs/confucius.json"


def command(kernel: Path, tc_testing: Path, tc: Path, out: Path, uml_dir: Path) -> list[str]:
    # The console is the process's stdout; the other lines are closed. Variables the kernel
    # does not know reach init as its environment.
    return [str(kernel), "mem=512M", "root=/dev/root", "rootfstype=hostfs", "rootflags=/", "ro",
            f"init={INIT}", "con=null", "ssl=null", "con0=null,fd:1", f"uml_dir={uml_dir}",
            f"TDC_DIR={tc_testing}", f"TDC_TC={tc}", f"TDC_OUT={out}", f"TDC_CASES={CASES}"]


def boot(kernel: Path, tc_testing: Path, tc: Path, out: Path, timeout: float) -> str:
    """The guest's console output; its results are in `out`."""
    out.mkdir(parents=True, exist_ok=True)
    for stale in ("tdc.tap", "status"):
        (out / stale).unlink(missing_ok=True)
    with tempfile.TemporaryDirectory(prefix="tdc-uml-") as uml_dir, \
            open(out / "console.log", "w+") as console:
        # UML maps its memory from a file in TMPDIR: /dev/shm keeps it in RAM.
        proc = subprocess.Popen(command(kernel, tc_testing, tc, out, Path(uml_dir)), stdout=console,
                                stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True,
                                env={**os.environ, "TMPDIR": "/dev/shm"})
        try:
            proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            print(f"upstream/tdc_vm.py: the guest ran over {timeout:.0f} s, ended", file=sys.stderr)
        finally:
            end_session(proc.pid)
            proc.wait()
        console.seek(0)
        return console.read()


def verdict(out: Path) -> tuple[bool, str]:
    """Whether tdc ran green, and why not."""
    tap_path, status_path = out / "tdc.tap", out / "status"
    if not tap_path.is_file() or not status_path.is_file():
        return False, "tdc did not finish in the guest (see console.log)"
    tap = tap_path.read_text()
    planned = re.search(r"^1\.\.(\d+)$", tap, flags=re.M)
    passed = len(re.findall(r"^ok \d+ ", tap, flags=re.M))
    failed = re.findall(r"^not ok \d+ .*$", tap, flags=re.M)
    skipped = re.findall(r"^ok \d+ .*# skipped.*$", tap, flags=re.M | re.I)
    status = status_path.read_text().strip()
    if not planned:
        return False, f"tdc planned no cases (exit status {status})"
    if failed or skipped or status != "0" or passed != int(planned.group(1)):
        return False, (f"tdc: {passed} of {planned.group(1)} ok, {len(failed)} failed, "
                       f"{len(skipped)} skipped, exit status {status}")
    return True, f"tdc: {passed} of {planned.group(1)} ok"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--kernel", type=Path, required=True, help="the UML kernel (linux)")
    parser.add_argument("--tc-testing", type=Path, required=True,
                        help="tools/testing/selftests/tc-testing of the patched tree")
    parser.add_argument("--tc", type=Path, required=True, help="a tc that knows confucius")
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--timeout", type=float, default=1200.0)
    args = parser.parse_args(argv)
    for path, what in ((args.kernel, "kernel"), (args.tc, "tc"), (args.tc_testing / CASES, "cases")):
        if not path.is_file():
            print(f"upstream/tdc_vm.py: no {what} at {path}", file=sys.stderr)
            return 1
    console = boot(args.kernel.resolve(), args.tc_testing.resolve(), args.tc.resolve(), args.out.resolve(),
                   args.timeout)
    tap = args.out / "tdc.tap"
    print(tap.read_text() if tap.is_file() else console[-4000:])
    green, why = verdict(args.out)
    print(why)
    return 0 if green else 1


if __name__ == "__main__":
    sys.exit(main())
