# SPDX-License-Identifier: MIT
"""The engines' supervision without a kernel: the timeout counts the clock it is given, and
UML's watchdog tells a guest that spins or is held from one that advances."""

import subprocess
import sys
import time

from confucius.lab import uml
from confucius.lab.engine import supervise


def test_the_timeout_counts_the_clock_it_is_given(tmp_path):
    guest_seconds = iter([0.0, 3.0, 30.0])
    result = supervise(["sleep", "600"], "nonce", tmp_path, timeout=10, echo=False,
                       clock=lambda: next(guest_seconds))
    # Three looks a watch interval apart, not the command's 600 s.
    assert result.timed_out and result.returncode is None and result.duration < 60


def test_a_guest_whose_clock_and_cpu_stand_still_is_held(tmp_path):
    beat = tmp_path / "alive"
    beat.write_text("1")
    idle = subprocess.Popen(["sleep", "600"], start_new_session=True)
    spinning = subprocess.Popen([sys.executable, "-c", "while True: pass"], start_new_session=True)
    try:
        held, advancing = uml._Heartbeat(beat, stall=600, held=1), uml._Heartbeat(beat, stall=600, held=1)
        assert not held(idle) and not advancing(spinning)
        time.sleep(1.5)
        # Neither clock nor CPU moved for the idle one; the spinning one used CPU (a spin
        # is `stall`'s business, with its own bound).
        assert held(idle) and not advancing(spinning)
    finally:
        for proc in (idle, spinning):
            proc.kill()
            proc.wait()
