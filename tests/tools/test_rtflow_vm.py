# SPDX-License-Identifier: MIT
"""rtflow on real sockets through a real bottleneck, in the lab's User-Mode Linux kernel in
virtual time (one boot runs guest_rtflow.py): every frame logged, every mode streams, GCC
settles on most of the link with small frame delay and follows a rate cut.

The path is three network namespaces, sender -- router -- receiver, with a 20 Mbit/s `tbf`
on the router's egress and no added delay (tests/tools/rtpath.py). In virtual time (inf-cpu)
CPU work takes no guest time, so the host's load cannot delay a packet or a timer: on the
host, a busy machine once left GCC at 12.5 of 20 Mbit/s and logged 235 of 240 frames.
"""

import json
import statistics
from pathlib import Path

import pytest

from confucius import metrics, rtflow

pytestmark = pytest.mark.vm
GUEST = Path(__file__).with_name("guest_rtflow.py")
CUT_AT_S = 14.0   # guest_rtflow.CUT_AT_S


class Case:
    """One case's logs and stderr, as the guest left them in its folder."""

    def __init__(self, folder: Path):
        self.frames = rtflow.read_frames(folder / "flow_frames.csv")
        self.rates = rtflow.read_rates(folder / "flow_rate.csv")
        err = json.loads((folder / "stderr.json").read_text())
        self.send_err, self.recv_err = err["send"], err["recv"]


@pytest.fixture(scope="module")
def cases(rtflow_binary, boot_guest):
    results = boot_guest(GUEST, "rtflow", timeout=900)
    return {folder.name: Case(folder) for folder in results.iterdir() if (folder / "stderr.json").is_file()}


def _seconds_from_start(samples, start_ns: int, first_s: float, last_s: float):
    return [s for s in samples if first_s <= (s.time_ns - start_ns) / 1e9 < last_s]


def _frames_between(frames, start_ns: int, first_s: float, last_s: float):
    return [f for f in frames if first_s <= (f.capture_ns - start_ns) / 1e9 < last_s]


def test_frames_flow_and_every_frame_is_logged(cases):
    flow = cases["fixed"]
    frames, rates = flow.frames, flow.rates
    print(len(frames), metrics.delay_percentile(frames, 95), flow.recv_err.strip().splitlines()[-1:])
    assert "mean target 5.00Mbit" in flow.send_err
    # 60 fps for 4 s, every frame whole, in order, on schedule, a key frame every 2 s.
    assert 235 <= len(frames) <= 241
    assert [f.frame_id for f in frames] == list(range(len(frames)))
    assert all(f.complete and f.packets == f.packets_received for f in frames)
    assert [f.frame_id for f in frames if f.key] == [0, 120, 240][: 1 + (len(frames) - 1) // 120]
    gaps = [b.capture_ns - a.capture_ns for a, b in zip(frames, frames[1:])]
    assert min(gaps) >= 16_666_666 and max(gaps) <= 16_666_667
    # 5 Mbit/s on a 20 Mbit/s link: no queue, so frames are quick.
    assert metrics.delay_percentile(frames, 95) < 40
    key, delta = frames[120], frames[121]
    assert 3.9 < key.size_bytes / delta.size_bytes < 4.1
    payload_bps = sum(f.size_bytes for f in frames) * 8 / (len(frames) / 60)
    assert 0.90 * 5e6 < payload_bps < 5e6  # the rest is packet headers
    assert {r.target_bps for r in rates} == {5e6}
    assert statistics.mean(r.acked_bps for r in rates[5:-2] if r.acked_bps is not None) > 4.5e6
    assert "240 frames complete, 0 incomplete" in flow.recv_err or "241 frames complete" in flow.recv_err


@pytest.mark.parametrize("mode", ["gcc", "copa", "tcp-bbr", "tcp-cubic", "tcp-reno", "tcp-vegas"])
def test_every_mode_streams_through_the_bottleneck(cases, mode):
    flow = cases[mode]
    frames, rates = flow.frames, flow.rates
    late = _seconds_from_start(rates, rates[0].time_ns, 3, 6)
    delivered = statistics.mean(r.acked_bps for r in late if r.acked_bps is not None)
    print(mode, len(frames), sum(f.complete for f in frames), round(delivered / 1e6, 2))
    if mode.startswith("tcp-"):
        assert f"tcp ({mode.removeprefix('tcp-')})" in flow.send_err
    # 6 s at 60 fps is 360 frames; those still in the sender's pacer at the end never reach
    # the receiver's log. Streaming, not loss-free, is what this test is about.
    assert len(frames) >= 300
    assert sum(f.complete for f in frames) >= 0.6 * len(frames)
    assert 2e6 < delivered < 20.5e6
    assert all(r.target_bps <= 100e6 for r in rates)


def test_gcc_alone_converges_to_most_of_the_link_with_small_frame_delay(cases):
    flow = cases["gcc-alone"]
    frames, rates = flow.frames, flow.rates
    start = rates[0].time_ns
    settled = _seconds_from_start(rates, start, 10, 30)
    steady = [f for f in _frames_between(frames, start, 10, 29)]
    complete = [f for f in steady if f.complete]
    print(statistics.mean(r.target_bps for r in settled) / 1e6,
          statistics.mean(r.acked_bps for r in settled if r.acked_bps) / 1e6,
          max(r.target_bps for r in settled) / 1e6, len(complete), len(steady),
          metrics.delay_percentile(complete, 50), metrics.delay_percentile(complete, 95))
    # GCC's sawtooth: back off to 0.85 x the acknowledged rate when the queue grows, then
    # creep up again.
    # Measured in 7 boots (one with two CPU hogs): mean target 14.9-16.5 Mbit/s (74-82 %),
    # p50 2.2 ms, p95 16-31 ms, every steady frame complete.
    assert statistics.mean(r.target_bps for r in settled) >= 0.7 * 20e6
    assert statistics.mean(r.acked_bps for r in settled if r.acked_bps) >= 0.7 * 20e6
    assert max(r.target_bps for r in settled) <= 1.2 * 20e6
    assert len(complete) >= 0.9 * len(steady)
    assert metrics.delay_percentile(complete, 50) < 20
    assert metrics.delay_percentile(complete, 95) < 80


def test_gcc_follows_a_rate_cut_and_frame_delay_recovers(cases):
    flow = cases["gcc-cut"]
    frames, rates = flow.frames, flow.rates
    start = rates[0].time_ns
    cut_ns = next(r.time_ns for r in rates if (r.time_ns - start) / 1e9 >= CUT_AT_S - 0.5)
    before = _frames_between(frames, start, 8, CUT_AT_S - 1)
    shock = _frames_between(frames, start, CUT_AT_S - 0.5, CUT_AT_S + 3)
    after = _frames_between(frames, start, 24, 28)
    late_rates = [r for r in rates if r.time_ns > cut_ns + 8e9]
    print(metrics.delay_percentile(before, 95), metrics.delay_percentile(shock, 100),
          statistics.mean(r.target_bps for r in late_rates) / 1e6, max(r.target_bps for r in late_rates) / 1e6,
          metrics.delay_percentile(after, 95), metrics.stall_duration(after))
    assert metrics.delay_percentile(before, 95) < 80
    # The old rate meets a quarter of the link: frames queue (or are lost) at the bottleneck.
    assert metrics.delay_percentile(shock, 100) > 2 * metrics.delay_percentile(before, 95)
    # GCC comes down to the new link rate and the delay comes back.
    assert statistics.mean(r.target_bps for r in late_rates) <= 1.05 * 5e6
    assert max(r.target_bps for r in late_rates) <= 1.2 * 5e6
    # Measured in 7 boots (one with two CPU hogs on the host): the p95 after the cut was
    # 1.1 ms three times, 38, 40, 47 and 83 ms (GCC's sawtooth on a 5 Mbit/s link, where a
    # frame takes 17 ms to send, can leave a few frames queued at the end): 150 ms is
    # nearly twice the worst and under the 190 ms stall threshold.
    assert metrics.delay_percentile(after, 95) < 150
    assert metrics.stall_duration(after) == 0
