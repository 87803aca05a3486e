#!/usr/bin/env python
# SPDX-License-Identifier: MIT
"""rtflow's pion-gcc mode (Pion's GCC) alone through a 10 Mbit/s tbf bottleneck inside the
lab's User-Mode Linux kernel, in virtual time (run by test_pion_gcc_vm.py); its logs and
stderr go to $RESULTS/pion-gcc/."""

import json
import os
import sys
from pathlib import Path

sys.path.insert(0, os.path.join(os.environ["LAB_REPO"], "tests", "tools"))
from rtpath import Flow, Path3  # noqa: E402

RESULTS = Path(os.environ["RESULTS"])
LINK = "10mbit"
DURATION = "20s"
START_RATE = "5mbit"


def main():
    workdir = RESULTS / "pion-gcc"
    workdir.mkdir()
    path = Path3(LINK)
    try:
        flow = Flow(path, workdir, "flow", "pion-gcc", DURATION, start_rate=START_RATE)
        send_err, recv_err = flow.wait()
    finally:
        path.remove()
    (workdir / "stderr.json").write_text(json.dumps({"send": send_err, "recv": recv_err}))


main()
