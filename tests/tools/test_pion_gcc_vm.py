# SPDX-License-Identifier: MIT
"""rtflow's pion-gcc mode (Pion's GCC, tools/piongcc) alone on a shaped link, in the lab's
User-Mode Linux kernel in virtual time (one boot runs guest_pion_gcc.py): it streams its
frames and its target settles on a measured share of the link.

The path is rtpath.Path3 with a 10 Mbit/s `tbf` and no added delay; the flow starts at
5 Mbit/s and runs 20 s. Pion's delay-based increase is multiplicative at 8 %/s at most
(draft-ietf-rmcat-gcc), so it needs ~9 s to climb from 5 to 10 Mbit/s: the share is taken
over seconds 12-20.
"""

import json
import statistics
from pathlib import Path

import pytest

from confucius import metrics, rtflow

pytestmark = pytest.mark.vm
GUEST = Path(__file__).with_name("guest_pion_gcc.py")
LINK_BPS = 10e6     # guest_pion_gcc.LINK
SETTLED_S = (12, 20)
# Measured: target 1.043-1.060 of the link, acked 0.986-0.990. Pion's target stops near the
# link rate, a little above it: its arrival groups stop closing once the bottleneck is busy
# without 5 ms gaps (tools/rtflow/README.md), so tbf's queue stays full and drops packets,
# and how many frames lose a packet depends on the guest's random numbers: 781, 877, 877,
# 877, 798, 798 of 1200 complete with seeds 1-6, and 714 in an unseeded boot of a clean
# clone's CI, which failed the earlier bound of 0.6. The boot is seeded (it repeats
# exactly); the bounds hold for every seed measured: 10 % under the measured shares, 20 %
# over the link, and half the frames complete.
SHARE_FLOOR, SHARE_CEILING = 0.9, 1.2
COMPLETE_FLOOR = 0.5


@pytest.fixture(scope="module")
def pion(rtflow_binary, boot_guest):
    folder = boot_guest(GUEST, "pion", timeout=600) / "pion-gcc"
    err = json.loads((folder / "stderr.json").read_text())
    return (rtflow.read_frames(folder / "flow_frames.csv"), rtflow.read_rates(folder / "flow_rate.csv"),
            err["send"], err["recv"])


def test_pion_gcc_streams_and_settles_on_its_measured_share_of_the_link(pion):
    frames, rates, send_err, recv_err = pion
    start = rates[0].time_ns
    settled = [r for r in rates if SETTLED_S[0] <= (r.time_ns - start) / 1e9 < SETTLED_S[1]]
    share = statistics.mean(r.target_bps for r in settled) / LINK_BPS
    acked = statistics.mean(r.acked_bps for r in settled if r.acked_bps) / LINK_BPS
    complete = [f for f in frames if f.complete]
    print(f"pion-gcc: target {share:.3f} of the link, acked {acked:.3f}, {len(complete)}/{len(frames)} frames "
          f"complete, p95 {metrics.delay_percentile(complete, 95):.1f} ms")
    assert "rtflow send: pion-gcc" in send_err
    assert len(frames) >= 1150
    assert SHARE_FLOOR <= share <= SHARE_CEILING and acked >= SHARE_FLOOR
    assert all(r.target_bps <= 1.5 * LINK_BPS for r in settled)
    assert len(complete) >= COMPLETE_FLOOR * len(frames)
