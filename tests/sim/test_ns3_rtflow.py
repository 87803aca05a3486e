# SPDX-License-Identifier: MIT
"""rtflow's video flow in ns-3 (sim/ns3/apps/rt-flow.cc, and its TCP mode in rt-tcp-flow.cc),
driven by the same Rust rate controllers (and the TCP mode's rate adapter) as tools/rtflow
through tools/rtcontrol's C ABI; figures in simulated time."""

import json
import statistics
import subprocess
from pathlib import Path

import pytest

from confucius import metrics, rtflow
from confucius.web.client_report import parse_report

REPO = Path(__file__).resolve().parents[2]
BOTTLENECK = REPO / "build" / "sim" / "bottleneck"
LINK_BPS = 20e6
ANCHOR_MS = 520     # samples count from web-start (500 ms) + RTT/2 (20 ms)


def video(controller: str, tmp_path: Path, *args: str, seconds: int = 30) -> tuple[dict, list]:
    """The video alone at the demo's bottleneck (20 Mbit/s, 40 ms, 1000 packets, FIFO); `args`
    come after these and override them."""
    log = tmp_path / f"{controller}_frames.csv"
    out = subprocess.run([str(BOTTLENECK), "--scheduler=pfifo", f"--rt={controller}", "--web-flows=0",
                          "--rate=20Mbps", "--rtt=40ms", "--buffer=1000", f"--duration={seconds}s", "--drain=1s",
                          f"--frame-log={log}", *args],
                         check=True, capture_output=True, text=True, timeout=300).stdout
    return json.loads(out), rtflow.read_frames(log)


def link_share(run: dict, first_s: float, last_s: float) -> float:
    window = [r["rt_bytes"] for r in run["samples"]
              if first_s * 1000 - ANCHOR_MS < r["time_ms"] <= last_s * 1000 - ANCHOR_MS]
    return sum(window) * 8 / (len(window) * 0.050) / LINK_BPS


@pytest.fixture(scope="module")
def gcc(tmp_path_factory):
    return video("gcc", tmp_path_factory.mktemp("gcc"), seconds=60)


def test_gcc_alone_fills_most_of_a_constant_link(gcc):
    # GCC's sawtooth (back to 0.85 x after each overuse, slow growth near the top) averages
    # 0.78 of the link over 10-60 s here, starting at 5 Mbit/s (0.79 from 1 Mbit/s); over
    # 10-30 s alone it is 0.73-0.82 by phase. The lab's rtflow in UML: 74-82 % (tests/README.md).
    run, _ = gcc
    assert 0.75 <= link_share(run, 10, 60) <= 1.0


def test_gcc_cuts_its_first_overshoot_before_its_queue_stands_100_ms(tmp_path):
    # Alone on 20 Mbit/s from 5 Mbit/s, GCC overshoots the link; the lab's rtflow cuts at
    # 2.20 s with its smoothed RTT at 117 ms (UML, the demo's warm-up: 21.2 -> 16.8 Mbit/s),
    # ns-3's at 1.95 s and 71 ms (-> 17.0) now that each datagram of a pacer round has its
    # own send time. With one time per round, GCC's inter-arrival filter took each round
    # as one burst and cut only at 3.50 s, with 267 ms.
    log = tmp_path / "rates.csv"
    video("gcc", tmp_path, f"--rate-log={log}", seconds=5)
    rates = rtflow.read_rates(log)
    cut = next(b for a, b in zip(rates, rates[1:]) if b.target_bps < 0.95 * a.target_bps)
    print(f"first cut at {cut.time_ns / 1e9:.2f} s to {cut.target_bps / 1e6:.1f} Mbit/s, sRTT {cut.srtt_ms:.0f} ms")
    assert cut.time_ns < 3e9 and cut.srtt_ms < 140      # 40 ms of path, under 100 ms of queue


def test_gcc_frames_are_logged_as_rtflow_logs_them(gcc):
    run, frames = gcc
    assert len(frames) == 60 * 60                      # 60 fps for 60 s, read by the lab's reader
    assert sum(f.key for f in frames) == 30            # a key frame every 2 s
    assert all(f.complete for f in frames)             # nothing lost in a 1000-packet FIFO
    assert run["received"]["rt"] == run["sent"]["rt"]
    settled = [f for f in frames if f.capture_ns >= 10e9]
    assert 20 < metrics.delay_percentile(settled, 50) < 60   # one-way 20 ms + queueing


def test_copa_streams_through_the_same_abi(tmp_path):
    run, frames = video("copa", tmp_path)
    assert link_share(run, 10, 30) >= 0.5
    assert statistics.mean(f.complete for f in frames) > 0.99


def test_fixed_rate_sends_its_rate(tmp_path):
    run, _ = video("fixed", tmp_path, "--rt-start-rate=5Mbps")
    assert link_share(run, 5, 30) * LINK_BPS == pytest.approx(5e6, rel=0.03)


def test_lost_pieces_of_recent_frames_are_sent_once_more(tmp_path):
    # A 2 Mbit/s video beside 22.5 Mbit/s of UDP through 30 packets of FIFO loses a
    # packet of about a third of its frames (219 of 577 frames incomplete when measured).
    # With rtflow's NACK and RTX the loss report brings each lost piece back once, ahead
    # of new media, while its frame is younger than the window: nearly every frame then
    # arrives whole, the resent ones a round trip late.
    def lossy(window: str) -> list:
        _, frames = video("fixed", tmp_path, "--rt-start-rate=2Mbps", "--web=udp", "--web-flows=9",
                          "--web-rate=2.5Mbps", "--buffer=30", f"--ns3::RtFlowSender::RetransmitWindow={window}",
                          seconds=10)
        return frames
    lost_for_good = lossy("0s")
    resent = lossy("200ms")
    incomplete = [statistics.mean(not f.complete for f in frames) for frames in (lost_for_good, resent)]
    print(f"frames incomplete: {incomplete[0]:.1%} without resending, {incomplete[1]:.1%} with")
    assert incomplete[0] > 0.2 and incomplete[1] < 0.05
    late = [f.delay_ms for f in resent if f.complete and f.delay_ms > 60]   # 20 ms one way + a round trip
    assert len(late) > 0.1 * len(resent) and max(late) < 200 + 60           # each within its window


def test_bad_video_options_are_refused():
    result = subprocess.run([str(BOTTLENECK), "--rt=gcc", "--rt-start-rate=10kbps"],
                            capture_output=True, text=True, timeout=60)
    assert result.returncode != 0 and "0 < MinRate <= StartRate <= MaxRate" in result.stderr
    for bad in ("bbr", "tcp-reno", "gcc,udp", "gcc,,copa"):
        result = subprocess.run([str(BOTTLENECK), f"--rt={bad}"], capture_output=True, text=True, timeout=60)
        assert result.returncode == 2 and "rt must be udp, or videos' controllers (gcc, copa, fixed, tcp-bbr" \
            in result.stderr
    result = subprocess.run([str(BOTTLENECK), "--rt=gcc,"], capture_output=True, text=True, timeout=60)
    assert result.returncode == 2 and "rt names no flow: 'gcc,'" in result.stderr
    result = subprocess.run([str(BOTTLENECK), "--rt=tcp-bbr", "--rt-start-rate=10kbps"],
                            capture_output=True, text=True, timeout=60)
    assert result.returncode != 0 and "0 < MinRate <= StartRate <= MaxRate" in result.stderr


def page_load_beside_gcc(scheduler: str, tmp_path: Path) -> tuple[dict, list]:
    """GCC settles for 10 s, then 9 TCP Cubic transfers of 250 KB start (a page's objects)."""
    return video("gcc", tmp_path, f"--scheduler={scheduler}", "--web=tcp", "--web-flows=9",
                 "--web-bytes=250000", "--web-start=10s", seconds=20)


def test_a_page_load_stalls_gcc_under_fq_codel_and_hardly_under_confucius(tmp_path):
    # Seed 000 Fig. 2 in ns-3 (measured: FQ-CoDel stall 1.43 s, max frame delay 913 ms;
    # confucius with its adaptive pace 0.05 s and 194 ms; the page in 1.22 and 2.03 s). The
    # nine flows arrive with a key frame, GCC at 17.4 Mbit/s: Alg. 2 halves its share at
    # once, before any tick pace adaptive could hold (docs/ALGORITHM.md). With one send time
    # per pacer round GCC had settled at 13 Mbit/s and confucius gave 0 s and 128 ms.
    # Confucius pays for the protection in page time (issue 47): the bound says only that
    # the page is not starved. (With ns-3's own TCP defaults, 1 s least RTO, FQ-CoDel's
    # page took 1.84 s.)
    results = {}
    for scheduler in ("fq_codel", "confucius"):
        run, frames = page_load_beside_gcc(scheduler, tmp_path)
        assert len(run["web_done_ms"]) == 9                          # every object arrived
        load = [f for f in frames if 10e9 <= f.capture_ns < 14e9]
        results[scheduler] = (metrics.stall_duration(load), metrics.max_delay_ms(load),
                              max(run["web_done_ms"]))
    assert results["fq_codel"][0] > 0.5 and results["confucius"][0] < results["fq_codel"][0] / 2
    assert results["confucius"][1] < results["fq_codel"][1] / 3
    assert results["fq_codel"][1] > metrics.STALL_THRESHOLD_S * 1000
    assert results["confucius"][2] < 2 * results["fq_codel"][2]      # the page is not starved


# ----------------------------------------------------------------------------- TCP mode

TCP_SECONDS = 20


@pytest.fixture(scope="module", params=["tcp-bbr", "tcp-cubic"])
def tcp_alone(request, tmp_path_factory):
    """rtflow's TCP mode alone on 20 Mbit/s, 40 ms under fq_codel (1000 packets): in the
    demo's 1000-packet FIFO Cubic fills the buffer instead (sim/README.md, "TCP mode")."""
    run, frames = video(request.param, tmp_path_factory.mktemp(request.param), "--scheduler=fq_codel",
                        seconds=TCP_SECONDS)
    return request.param, run, frames


def test_the_tcp_mode_alone_fills_the_link_with_bounded_frame_delay(tcp_alone):
    # Measured over 5-20 s (after the ramp; share with IP and TCP headers): BBR 0.99 of the
    # link, frame delay p50 58 / p99 115 ms; Cubic 0.94, p50 44 / p99 140 ms.
    controller, run, frames = tcp_alone
    share = link_share(run, 5, TCP_SECONDS)
    settled = [f for f in frames if f.capture_ns >= 5e9]
    p50, p99 = metrics.delay_percentile(settled, 50), metrics.delay_percentile(settled, 99)
    print(f"{controller}: link share {share:.3f}, frame delay p50 {p50:.1f} ms, p99 {p99:.1f} ms")
    assert 0.85 <= share <= 1.01
    assert 20 < p50 < 90 and p99 < 250


def test_the_tcp_modes_frames_are_all_accounted(tcp_alone):
    # Every frame captured is in the receiver's log (read back from the byte stream, whole,
    # in order) or still waited in the sender when it stopped.
    _, run, frames = tcp_alone
    assert [f.frame_id for f in frames] == list(range(len(frames)))
    assert all(f.complete and f.packets is None for f in frames)   # rtflow's TCP rows
    assert len(frames) + run["videos"][0]["frames_waiting"] == run["videos"][0]["frames"]
    assert run["videos"][0]["frames"] == 60 * TCP_SECONDS - 2           # from connect (one RTT) to stop
    assert sum(f.key for f in frames) == TCP_SECONDS // 2
    assert run["received"]["rt"] <= run["sent"]["rt"]


def test_the_tcp_mode_beside_a_page_load_lets_it_finish(tmp_path):
    page = tmp_path / "small.page"
    page.write_text("root a.com 20000 -\n" + "".join(f"x{i} a.com 200000 root\n" for i in range(4)) +
                    "y0 b.com 500000 root\n")
    run, frames = video("tcp-cubic", tmp_path, "--scheduler=confucius", f"--page={page}", "--web-start=5s",
                        "--page-tail=3s", "--calm=2s", "--late=0.19s", "--drain=0.5s", seconds=20)
    load = parse_report(json.dumps(run["page"]["report"]))
    assert load.ok and run["page"]["objects_done"] == 6 and 0.3 < run["page"]["plt_s"] < 5
    assert len(load.objects) == 6 and all(o.last_byte is not None for o in load.objects)
    assert run["simulated_s"] < 20                  # stopped by the page's tail, once the video was calm
    load_end_ns = 5e9 + run["page"]["plt_s"] * 1e9
    during = [f for f in frames if 5e9 <= f.capture_ns < load_end_ns]
    print(f"tcp-cubic under confucius beside the page: PLT {run['page']['plt_s']:.2f} s, stall "
          f"{metrics.stall_duration(during):.2f} s, max frame delay {metrics.max_delay_ms(during):.0f} ms")
    # The video went on through the load: every frame of it arrived, and later ones too.
    assert [f.frame_id for f in frames] == list(range(len(frames)))
    assert frames[-1].capture_ns > load_end_ns and len(during) >= 60 * run["page"]["plt_s"] - 1
