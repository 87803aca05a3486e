# SPDX-License-Identifier: MIT
"""The real-time flow tool (tools/rtflow) on this host: its command line, its Rust unit
tests and how it stops on a signal, over loopback. Its behaviour through a bottleneck
(rates, frame delays, GCC's reactions) is measured in virtual time: test_rtflow_vm.py.
"""

from __future__ import annotations

import signal
import socket
import subprocess
import time
from pathlib import Path

import pytest

from confucius import rtflow
from rtpath import cargo, go_test, run



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
        (["send", "--to", "127.0.0.1:9", "--mode", "pion-gcc", "--rate", "2mbit", "--rate-log", str(log)],
         "--rate applies to --mode fixed only"),
        (["send", "--to", "127.0.0.1:9", "--mode", "pion-gcc", "--cca", "bbr", "--rate-log", str(log)],
         "--cca is required with --mode tcp and applies to it only"),
        (["send", "--to", "127.0.0.1:9", "--mode", "pion-gcc", "--max-rate", "1mbit", "--start-rate", "2mbit",
          "--rate-log", str(log)], "--start-rate <= --max-rate"),
        (["send", "--to", "127.0.0.1:9", "--mode", "pion-gcc", "--pacing-factor", "0.5", "--rate-log", str(log)],
         "--pacing-factor must be between 1 and 100"),
        (["recv", "--listen", "127.0.0.1:0", "--frame-log", str(tmp_path / "no" / "such" / "dir.csv")],
         "cannot create log"),
    ]
    for args, message in cases:
        done = run([str(rtflow_binary), *args])
        assert done.returncode != 0, args
        assert message in done.stderr, (args, done.stderr)
    assert not log.exists()


def test_help_names_every_mode(rtflow_binary):
    done = run([str(rtflow_binary), "send", "--help"])
    assert done.returncode == 0
    for mode in rtflow.MODES:
        assert f"- {mode}:" in done.stdout


def test_rust_unit_tests_pass():
    # rtflow's own, and its controllers' (tools/rtcontrol, shared with the simulator).
    done = cargo("test", packages=("rtflow", "rtcontrol"))
    assert done.returncode == 0, done.stdout + done.stderr
    assert "test result: ok" in done.stdout


def test_pion_gcc_go_unit_tests_pass():
    """tools/piongcc's own tests (feedback to TWCC packets, Pion's estimator fed through the
    archive's functions), with the modules go.sum pins, as rtflow's build.rs builds it."""
    done = go_test()
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.startswith("ok"), done.stdout


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


# pion-gcc too: its Go runtime (tools/piongcc) must leave rtflow's signal handling alone.
SIGTERM_OPTIONS = {"fixed": {"rate": "2mbit"}, "tcp": {"cca": "reno"}, "pion-gcc": {"start_rate": "2mbit"}}


@pytest.mark.parametrize("mode", sorted(SIGTERM_OPTIONS))
def test_sigterm_stops_both_sides_cleanly_with_their_logs_written(rtflow_binary, tmp_path, mode):
    port = _free_port()
    frame_log, rate_log = tmp_path / "frames.csv", tmp_path / "rate.csv"
    receiver = subprocess.Popen(rtflow.recv_command(f"127.0.0.1:{port}", frame_log=frame_log),
                                stderr=subprocess.PIPE, text=True)
    assert "listening" in receiver.stderr.readline()
    sender = subprocess.Popen(rtflow.send_command(f"127.0.0.1:{port}", mode=mode, duration="60s",
                                                  rate_log=rate_log, **SIGTERM_OPTIONS[mode]),
                              stderr=subprocess.PIPE, text=True)
    time.sleep(2)
    began = time.monotonic()
    sender.send_signal(signal.SIGTERM)
    _, send_err = sender.communicate(timeout=10)
    # The sender's bye (UDP) or close (TCP) ends the receiver too.
    _, recv_err = receiver.communicate(timeout=10)
    stopped_s = time.monotonic() - began
    assert sender.returncode == 0 and receiver.returncode == 0, send_err + recv_err
    frames, rates = rtflow.read_frames(frame_log), rtflow.read_rates(rate_log)
    print(f"{mode}: stopped in {stopped_s:.3f} s, {len(frames)} frames, rate log over "
          f"{(rates[-1].time_ns - rates[0].time_ns) / 1e9:.2f} s")
    assert stopped_s < 3
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
