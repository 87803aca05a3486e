# SPDX-License-Identifier: MIT
"""The real-time flow tool (tools/rtflow) on real sockets through a real bottleneck.

The network tests build, per test, three network namespaces of this host joined by veth
pairs, sender -- router -- receiver, with a `tbf` bottleneck on the router's egress to
the receiver (this host's kernel has tbf but no netem, so the path has no added delay).
They need root and are skipped without it; every namespace is removed afterwards.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import statistics
import subprocess
import time
import uuid
from pathlib import Path

import pytest

from confucius import metrics, rtflow

REPO = Path(__file__).resolve().parents[2]
CARGO = shutil.which("cargo") or str(Path.home() / ".cargo" / "bin" / "cargo")
PORT = 5000

needs_root = pytest.mark.skipif(os.geteuid() != 0 or shutil.which("ip") is None,
                                reason="network namespaces need root and iproute2")


def _cargo(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([CARGO, *args, "--release", "--manifest-path", str(REPO / "tools" / "Cargo.toml"),
                           "--target-dir", str(REPO / "build" / "cargo"), "-p", "rtflow"],
                          capture_output=True, text=True, timeout=900)


@pytest.fixture(scope="session")
def rtflow_binary() -> Path:
    """The binary, rebuilt first if its sources changed (a no-op when up to date)."""
    built = _cargo("build")
    assert built.returncode == 0, built.stderr
    return rtflow.binary()


def _run(argv: list[str], **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run(argv, capture_output=True, text=True, timeout=60, **kwargs)


class Path3:
    """sender -- router -- receiver namespaces; the router shapes towards the receiver."""

    def __init__(self, rate: str):
        self.tag = "rf" + uuid.uuid4().hex[:6]
        self.ns = {role: f"{self.tag}{role}" for role in ("s", "r", "c")}
        self.receiver_addr = "10.201.2.1"
        try:
            self._build(rate)
        except Exception:
            self.remove()
            raise

    def _ip(self, *args: str) -> None:
        done = _run(["ip", *args])
        assert done.returncode == 0, f"ip {' '.join(args)}: {done.stderr}"

    def exec_argv(self, role: str, argv: list[str]) -> list[str]:
        return ["ip", "netns", "exec", self.ns[role], *argv]

    def _build(self, rate: str) -> None:
        s, r, c = self.ns["s"], self.ns["r"], self.ns["c"]
        for ns in self.ns.values():
            self._ip("netns", "add", ns)
            self._ip("-n", ns, "link", "set", "lo", "up")
        links = [(s, f"{self.tag}a", "10.201.1.1/24", r, f"{self.tag}b", "10.201.1.2/24"),
                 (r, f"{self.tag}c", "10.201.2.2/24", c, f"{self.tag}d", "10.201.2.1/24")]
        for ns1, dev1, addr1, ns2, dev2, addr2 in links:
            self._ip("link", "add", dev1, "netns", ns1, "type", "veth", "peer", "name", dev2, "netns", ns2)
            for ns, dev, addr in ((ns1, dev1, addr1), (ns2, dev2, addr2)):
                self._ip("-n", ns, "addr", "add", addr, "dev", dev)
                self._ip("-n", ns, "link", "set", dev, "up")
        self._ip("-n", s, "route", "add", "default", "via", "10.201.1.2")
        self._ip("-n", c, "route", "add", "default", "via", "10.201.2.2")
        assert _run(self.exec_argv("r", ["sysctl", "-qw", "net.ipv4.ip_forward=1"])).returncode == 0
        self.shape("add", rate)

    def shape(self, verb: str, rate: str) -> None:
        tc = ["tc", "qdisc", verb, "dev", f"{self.tag}c", "root", "tbf", "rate", rate, "burst", "32k",
              "latency", "50ms"]
        done = _run(self.exec_argv("r", tc))
        assert done.returncode == 0, done.stderr

    def remove(self) -> None:
        for ns in self.ns.values():
            subprocess.run(["ip", "netns", "del", ns], capture_output=True)


@pytest.fixture
def bottleneck():
    """Makes `Path3`s and removes them after the test."""
    made: list[Path3] = []

    def make(rate: str = "20mbit") -> Path3:
        made.append(Path3(rate))
        return made[-1]

    yield make
    for path in made:
        path.remove()


class Flow:
    """One receiver and one sender across a `Path3`, with their logs."""

    def __init__(self, path: Path3, workdir: Path, name: str, mode: str, duration: str, **options):
        self.frame_log = workdir / f"{name}_frames.csv"
        self.rate_log = workdir / f"{name}_rate.csv"
        recv = rtflow.recv_command(f"0.0.0.0:{PORT}", frame_log=self.frame_log, duration="120s")
        self.receiver = subprocess.Popen(path.exec_argv("c", recv), stderr=subprocess.PIPE, text=True)
        ready = self.receiver.stderr.readline()
        assert "listening" in ready, ready
        send = rtflow.send_command(f"{path.receiver_addr}:{PORT}", mode=mode, duration=duration,
                                   rate_log=self.rate_log, **options)
        self.sender = subprocess.Popen(path.exec_argv("s", send), stderr=subprocess.PIPE, text=True)

    def wait(self, timeout: float = 120) -> tuple[str, str]:
        try:
            _, send_err = self.sender.communicate(timeout=timeout)
            _, recv_err = self.receiver.communicate(timeout=15)
        finally:
            for process in (self.sender, self.receiver):
                if process.poll() is None:
                    process.kill()
                    process.wait()
        assert self.sender.returncode == 0, send_err
        assert self.receiver.returncode == 0, recv_err
        return send_err, recv_err

    def frames(self) -> list[rtflow.Frame]:
        return rtflow.read_frames(self.frame_log)

    def rates(self) -> list[rtflow.RateSample]:
        return rtflow.read_rates(self.rate_log)


def _seconds_from_start(samples, start_ns: int, first_s: float, last_s: float):
    return [s for s in samples if first_s <= (s.time_ns - start_ns) / 1e9 < last_s]


def _frames_between(frames, start_ns: int, first_s: float, last_s: float):
    return [f for f in frames if first_s <= (f.capture_ns - start_ns) / 1e9 < last_s]


# ------------------------------------------------------------------------ command line

def test_bad_arguments_are_refused_with_a_message_and_create_nothing(rtflow_binary, tmp_path):
    log = tmp_path / "rate.csv"
    cases = [
        (["send", "--to", "not-an-address"], "invalid socket address"),
        (["send", "--to", "127.0.0.1:9", "--mode", "fixed", "--rate-log", str(log)], "--mode fixed needs --rate"),
        (["send", "--to", "127.0.0.1:9", "--start-rate", "20 furlongs"], "expected a number with one of the units"),
        (["send", "--to", "127.0.0.1:9", "--mode", "tcp", "--rate-log", str(log)], "--cca is required"),
        (["send", "--to", "127.0.0.1:9", "--min-rate", "5mbit", "--start-rate", "1mbit"], "--min-rate <= --start-rate"),
        (["send", "--to", "127.0.0.1:9", "--mode", "quic"], "invalid value 'quic'"),
        (["recv", "--listen", "127.0.0.1:0", "--frame-log", str(tmp_path / "no" / "such" / "dir.csv")],
         "cannot create log"),
    ]
    for args, message in cases:
        done = _run([str(rtflow_binary), *args])
        assert done.returncode != 0, args
        assert message in done.stderr, (args, done.stderr)
    assert not log.exists()


def test_help_names_every_mode(rtflow_binary):
    done = _run([str(rtflow_binary), "send", "--help"])
    assert done.returncode == 0
    for mode in rtflow.MODES:
        assert f"- {mode}:" in done.stdout


def test_rust_unit_tests_pass():
    done = _cargo("test")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "test result: ok" in done.stdout


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.mark.parametrize("mode", ["fixed", "tcp"])
def test_sigterm_stops_both_sides_cleanly_with_their_logs_written(rtflow_binary, tmp_path, mode):
    port = _free_port()
    frame_log, rate_log = tmp_path / "frames.csv", tmp_path / "rate.csv"
    receiver = subprocess.Popen(rtflow.recv_command(f"127.0.0.1:{port}", frame_log=frame_log),
                                stderr=subprocess.PIPE, text=True)
    assert "listening" in receiver.stderr.readline()
    options = {"cca": "reno"} if mode == "tcp" else {"rate": "2mbit"}
    sender = subprocess.Popen(rtflow.send_command(f"127.0.0.1:{port}", mode=mode, duration="60s",
                                                  rate_log=rate_log, **options),
                              stderr=subprocess.PIPE, text=True)
    time.sleep(2)
    began = time.monotonic()
    sender.send_signal(signal.SIGTERM)
    _, send_err = sender.communicate(timeout=10)
    # The sender's bye (UDP) or close (TCP) ends the receiver too.
    _, recv_err = receiver.communicate(timeout=10)
    assert time.monotonic() - began < 3
    assert sender.returncode == 0 and receiver.returncode == 0, send_err + recv_err
    frames, rates = rtflow.read_frames(frame_log), rtflow.read_rates(rate_log)
    assert 100 <= len(frames) <= 140 and sum(f.complete for f in frames) >= 100
    assert 1.5 <= (rates[-1].time_ns - rates[0].time_ns) / 1e9 <= 2.5
    assert "frames complete" in recv_err


def test_sigint_stops_a_waiting_receiver_with_an_empty_log(rtflow_binary, tmp_path):
    frame_log = tmp_path / "frames.csv"
    receiver = subprocess.Popen(rtflow.recv_command(f"127.0.0.1:{_free_port()}", frame_log=frame_log),
                                stderr=subprocess.PIPE, text=True)
    assert "listening" in receiver.stderr.readline()
    receiver.send_signal(signal.SIGINT)
    _, err = receiver.communicate(timeout=5)
    assert receiver.returncode == 0, err
    assert rtflow.read_frames(frame_log) == []


# --------------------------------------------------------------------- through a link

@needs_root
def test_frames_flow_and_every_frame_is_logged(rtflow_binary, bottleneck, tmp_path):
    flow = Flow(bottleneck("20mbit"), tmp_path, "fixed", "fixed", "4s", rate="5mbit")
    send_err, recv_err = flow.wait()
    frames, rates = flow.frames(), flow.rates()
    assert "mean target 5.00Mbit" in send_err
    # 60 fps for 4 s, every frame whole, in order, on schedule, a key frame every 2 s.
    assert 235 <= len(frames) <= 241
    assert [f.frame_id for f in frames] == list(range(len(frames)))
    assert all(f.complete and f.packets == f.packets_received for f in frames)
    assert [f.frame_id for f in frames if f.key] == [0, 120, 240][: 1 + (len(frames) - 1) // 120]
    gaps = [b.capture_ns - a.capture_ns for a, b in zip(frames, frames[1:])]
    assert min(gaps) >= 16_666_666 and max(gaps) <= 16_666_667
    # 5 Mbit/s on a 20 Mbit/s link: no queue, so frames are quick (the tail is left to
    # the scheduling of a busy test machine).
    assert metrics.delay_percentile(frames, 95) < 40
    key, delta = frames[120], frames[121]
    assert 3.9 < key.size_bytes / delta.size_bytes < 4.1
    payload_bps = sum(f.size_bytes for f in frames) * 8 / (len(frames) / 60)
    assert 0.90 * 5e6 < payload_bps < 5e6  # the rest is packet headers
    assert {r.target_bps for r in rates} == {5e6}
    assert statistics.mean(r.acked_bps for r in rates[5:-2] if r.acked_bps is not None) > 4.5e6
    assert "240 frames complete, 0 incomplete" in recv_err or "241 frames complete" in recv_err


def _available_ccas() -> list[str]:
    text = Path("/proc/sys/net/ipv4/tcp_available_congestion_control").read_text()
    return [c for c in ("bbr", "cubic", "reno", "vegas") if c in text.split()]


@needs_root
@pytest.mark.parametrize("mode", ["gcc", "copa", *[f"tcp-{cca}" for cca in _available_ccas()]])
def test_every_mode_streams_through_the_bottleneck(rtflow_binary, bottleneck, tmp_path, mode):
    options = {"cca": mode.removeprefix("tcp-"), "mode": "tcp"} if mode.startswith("tcp-") else {"mode": mode}
    flow = Flow(bottleneck("20mbit"), tmp_path, mode, duration="6s", **options)
    send_err, _ = flow.wait()
    frames, rates = flow.frames(), flow.rates()
    if mode.startswith("tcp-"):
        assert f"tcp ({options['cca']})" in send_err
    # 6 s at 60 fps is 360 frames; those still in the sender's pacer at the end never reach
    # the receiver's log. Copa on this path (no propagation delay) reads CPU scheduling
    # jitter as queueing delay: with the host's cores busy its window collapses to a few
    # packets and its pacer holds up to 1-2 s of media (241-346 of 360 frames logged in
    # such runs, 355-359 on a quiet host). Streaming, not loss-free, is what this test is
    # about; a sender that stops sends far fewer.
    assert len(frames) >= (300 if mode != "copa" else 180)
    # Copa is window-bound at a 32 KB tbf burst and loses frames: 6 % measured on a quiet
    # host, 11-27 % during the test suite.
    assert sum(f.complete for f in frames) >= 0.6 * len(frames)
    late = _seconds_from_start(rates, rates[0].time_ns, 3, 6)
    delivered = statistics.mean(r.acked_bps for r in late if r.acked_bps is not None)
    assert 2e6 < delivered < 20.5e6
    assert all(r.target_bps <= 100e6 for r in rates)


@needs_root
def test_gcc_alone_converges_to_most_of_the_link_with_small_frame_delay(rtflow_binary, bottleneck, tmp_path):
    flow = Flow(bottleneck("20mbit"), tmp_path, "gcc", "gcc", "30s")
    flow.wait()
    frames, rates = flow.frames(), flow.rates()
    start = rates[0].time_ns
    settled = _seconds_from_start(rates, start, 10, 30)
    # GCC's sawtooth: back off to 0.85 x the acknowledged rate when the queue grows, then
    # creep up again. Measured here (no propagation delay): 73-81 % of the link on average
    # (tools/rtflow/README.md); where the AIMD first sets its capacity estimate decides.
    assert statistics.mean(r.target_bps for r in settled) >= 0.7 * 20e6
    assert statistics.mean(r.acked_bps for r in settled if r.acked_bps) >= 0.7 * 20e6
    assert max(r.target_bps for r in settled) <= 1.2 * 20e6
    steady = _frames_between(frames, start, 10, 29)
    assert sum(f.complete for f in steady) >= 0.9 * len(steady)
    assert metrics.delay_percentile([f for f in steady if f.complete], 50) < 20
    assert metrics.delay_percentile([f for f in steady if f.complete], 95) < 80


@needs_root
def test_gcc_follows_a_rate_cut_and_frame_delay_recovers(rtflow_binary, bottleneck, tmp_path):
    path = bottleneck("20mbit")
    flow = Flow(path, tmp_path, "cut", "gcc", "28s")
    # Cut the link from 20 to 5 Mbit/s once GCC has settled.
    cut_at = 14.0
    try:
        flow.sender.wait(timeout=cut_at)
    except subprocess.TimeoutExpired:
        path.shape("change", "5mbit")
    flow.wait()
    frames, rates = flow.frames(), flow.rates()
    start = rates[0].time_ns
    cut_ns = next(r.time_ns for r in rates if (r.time_ns - start) / 1e9 >= cut_at - 0.5)
    before = _frames_between(frames, start, 8, cut_at - 1)
    shock = _frames_between(frames, start, cut_at - 0.5, cut_at + 3)
    after = _frames_between(frames, start, 24, 28)
    assert metrics.delay_percentile(before, 95) < 80
    # The old rate meets a quarter of the link: frames queue (or are lost) at the bottleneck.
    assert metrics.delay_percentile(shock, 100) > 2 * metrics.delay_percentile(before, 95)
    # GCC comes down to the new link rate and the delay comes back.
    # GCC saws around the link and its probes overshoot it briefly (5.59 Mbit/s seen once):
    # the level within 5 %, every sample within 20 % (as alone on the link, above).
    late_rates = [r for r in rates if r.time_ns > cut_ns + 8e9]
    assert statistics.mean(r.target_bps for r in late_rates) <= 1.05 * 5e6
    assert max(r.target_bps for r in late_rates) <= 1.2 * 5e6
    assert metrics.delay_percentile(after, 95) < 80
    assert metrics.stall_duration(after) == 0
