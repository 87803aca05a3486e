#!/usr/bin/env python
# SPDX-License-Identifier: MIT
"""rtflow through a 20 Mbit/s tbf bottleneck inside the lab's User-Mode Linux kernel, in
virtual time (run by test_rtflow_vm.py): each case's logs and stderr go to
$RESULTS/<case>/ for the host to judge.

Cases: a fixed 5 Mbit/s flow for 4 s; every mode for 6 s; GCC alone for 30 s; GCC for 28 s
with the link cut to 5 Mbit/s at 14 s."""

import json
import os
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, os.path.join(os.environ["LAB_REPO"], "tests", "tools"))
from rtpath import Flow, Path3  # noqa: E402

RESULTS = Path(os.environ["RESULTS"])
CCAS = ("bbr", "cubic", "reno", "vegas")
CUT_AT_S = 14.0


def run_case(case, duration, cut_at=None, **options):
    """One flow on a path of its own; the link cut to 5 Mbit/s at `cut_at` seconds if given."""
    workdir = RESULTS / case
    workdir.mkdir()
    path = Path3("20mbit")
    try:
        flow = Flow(path, workdir, "flow", options.pop("mode"), duration, **options)
        if cut_at is not None:
            try:
                flow.sender.wait(timeout=cut_at)
            except subprocess.TimeoutExpired:
                path.shape("change", "5mbit")
        send_err, recv_err = flow.wait()
    finally:
        path.remove()
    (workdir / "stderr.json").write_text(json.dumps({"send": send_err, "recv": recv_err}))


def main():
    run_case("fixed", "4s", mode="fixed", rate="5mbit")
    for mode in ("gcc", "copa"):
        run_case(mode, "6s", mode=mode)
    for cca in CCAS:
        run_case(f"tcp-{cca}", "6s", mode="tcp", cca=cca)
    run_case("gcc-alone", "30s", mode="gcc")
    run_case("gcc-cut", "28s", cut_at=CUT_AT_S, mode="gcc")


main()
