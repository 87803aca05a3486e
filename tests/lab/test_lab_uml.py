# SPDX-License-Identifier: MIT
"""The uml engine: our User-Mode Linux kernel boots the same guest environment as the qemu
engine, loads our module, shapes at its rate in virtual time, and a guest whose clock
stands still is ended with nothing left running."""

import fcntl
import json
import math
import os
import re
import resource
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from confucius.lab import uml
from confucius.lab.guest import fidelity
from confucius.lab.engine import GUEST_RESULTS, MACHINE_LOCK, in_guest

pytestmark = [
    pytest.mark.skipif(not uml.KERNEL_BINARY.is_file(), reason="no UML kernel: run `make uml`"),
    # The guest is root in its own kernel; on the host its files are written by this user.
    pytest.mark.skipif(os.geteuid() != 0, reason="the UML guest writes the host's files as root"),
]


def test_boots_the_lab_environment_and_pings_across_namespaces(tmp_path):
    result = uml.run("""
        set -e
        uname -r; echo "results=$RESULTS cwd=$PWD"
        touch "$RESULTS/written-inside"
        ip netns add a; ip netns add b
        ip link add va netns a type veth peer name vb netns b
        ip -n a addr add 10.9.0.1/24 dev va; ip -n a link set va up
        ip -n b addr add 10.9.0.2/24 dev vb; ip -n b link set vb up
        ip netns exec b tc qdisc add dev vb root netem delay 10ms
        ip netns exec a ping -c 3 -i 0.2 10.9.0.2
    """, results_dir=tmp_path, timeout=60)
    result.check()
    assert result.kernel.startswith("6.1.")
    assert f"results={GUEST_RESULTS} cwd={uml.REPO}" in result.output
    assert (tmp_path / "written-inside").is_file()
    # netem's 10 ms one way, exactly: the guest's clock is virtual.
    assert "3 received" in result.output and "rtt min/avg/max/mdev = 10.0" in result.output
    assert "Linux version" in (tmp_path / "dmesg.txt").read_text()
    # The boot finished; how long it took is the host's wall time, a figure, not a check.
    assert result.boot_time is not None
    print(f"booted in {result.boot_time:.1f} s of wall time")


def test_our_module_loads_by_name_and_shapes(tmp_path):
    if not (uml.PROJECT_MODULES / "sch_confucius.ko").is_file():
        pytest.skip("no sch_confucius.ko for UML: run `make kmod-uml`")
    result = uml.run("""
        set -e
        ip link add d0 type veth peer name d1
        tc qdisc add dev d0 root confucius bandwidth 20mbit
        tc qdisc show dev d0
        grep -w sch_confucius /proc/modules
    """, results_dir=tmp_path, timeout=60)
    result.check()
    assert "qdisc confucius 8001: root" in result.output and "bandwidth 20Mbit" in result.output


def test_a_guest_whose_clock_stands_still_is_ended_with_nothing_left(tmp_path):
    # In inf-cpu mode a busy loop takes no guest time: the heartbeat stops while the
    # guest uses the host's CPU.
    result = uml.run("echo spinning; while :; do :; done", results_dir=tmp_path, timeout=120,
                     stall=2)
    assert result.stalled and not result.timed_out and result.returncode is None
    assert "spinning" in result.output
    with pytest.raises(uml.LabError, match="stopped advancing"):
        result.check()
    assert orphaned_uml_processes() == []


def test_a_guest_that_computes_on_a_busy_host_is_not_ended(tmp_path):
    # Its CPU work takes no guest time either, and with three CPU hogs per host core it
    # takes more wall time than `stall` and than the timeout (measured: 17-18 s): the
    # watchdog counts the guest's CPU seconds and the timeout the guest's seconds. The
    # computation takes a quarter of `stall` on the host; in the guest, beside the hogs, its
    # session used 1.5-1.9 times that between two heartbeats (on a loaded host), and once
    # over twice that, which made half of `stall` too little.
    stall, timeout = 8.0, 4.0
    command = compute_for(stall / 4)
    # Each hog in a session of its own: under the kernel's autogroup the host shares its CPU
    # between sessions first, and the guest's session (uml.run starts one) took half of it
    # beside one session of hogs (3.5 s with autogroup, 15.7 s without).
    hogs = [subprocess.Popen([sys.executable, "-c", "while True: pass"], start_new_session=True)
            for _ in range(3 * os.cpu_count())]
    try:
        result = uml.run(command, results_dir=tmp_path, timeout=timeout, stall=stall)
    finally:
        for hog in hogs:
            hog.kill()
            hog.wait()
    result.check()
    print(f"{command}: {result.duration:.1f} s of wall time for the guest's computation")
    assert "computed" in result.output and result.duration > max(stall, timeout)


def test_the_timeout_counts_the_guest_s_seconds(tmp_path, monkeypatch):
    # Idle time is skipped in inf-cpu: the guest's 10 s pass at once, and end the run.
    # (That the clock is the guest's: tests/lab/test_lab_supervise.py, and the busy host above.)
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    result = uml.run("echo sleeping; sleep 3600; echo woke", results_dir=tmp_path / "run", timeout=10)
    assert result.timed_out and not result.stalled
    assert "sleeping" in result.output and "woke" not in result.output
    print(f"10 s of guest time took {result.duration:.1f} s of wall time")
    # The killed kernel's pid file and control socket went with the run, not into ~/.uml.
    assert not (home / ".uml").exists()


def test_a_run_boots_whatever_home_is(tmp_path, monkeypatch):
    # UML 6.1 made ~/.uml at boot and crashed (make_umid) when it could not.
    monkeypatch.setenv("HOME", str(tmp_path / "no-such-home"))
    uml.run("true", results_dir=tmp_path / "run", timeout=30).check()


def compute_for(cpu_s: float) -> str:
    """A guest command that computes without a pause for about `cpu_s` of this host's CPU
    seconds, measured here: hosts differ (150 million additions took 1.9 CPU-s on one
    machine, 3.7 on another, where a fixed count met the watchdog's bound)."""
    count = 30_000_000
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run([sys.executable, "-c", f"sum(range({count}))"], check=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    spent = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
    return f"python3 -c 'sum(range({round(count * cpu_s / spent)}))' && echo computed"


def test_a_lab_run_stopped_by_sigterm_leaves_no_kernel_running(tmp_path):
    # What a user's `kill`, or a CI job's time-out, sends: the run ends, and so does its VM.
    confucius = Path(sys.executable).with_name("confucius")
    run = subprocess.Popen([confucius, "lab", "run", "scenarios/demo.toml", "--engine", "uml",
                            "--db", tmp_path / "demo.sqlite", "--results", tmp_path / "runs"],
                           cwd=uml.REPO, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    sessions = kernel_sessions_under(run.pid, wait=60)
    assert sessions, "the run booted no UML kernel within 60 s"
    run.send_signal(signal.SIGTERM)
    assert run.wait(timeout=30) == 128 + signal.SIGTERM, run.stderr.read().decode()[-2000:]
    assert [uml.session_processes(s) for s in sessions] == [[] for _ in sessions]


def kernel_sessions_under(parent: int, wait: float) -> set[int]:
    """Sessions of the UML kernels that `parent` started, once there is one (each kernel
    leads a session of its own)."""
    deadline = time.monotonic() + wait
    while time.monotonic() < deadline:
        found = {pid for pid, fields in uml.process_stats()
                 if int(fields[1]) == parent and int(fields[3]) == pid}
        if found:
            return found
        time.sleep(0.2)
    return set()


def orphaned_uml_processes() -> list[int]:
    """Host processes of UML kernels booted from this checkout (the guest's processes are
    forks of the kernel's, with its command line) whose run has ended: its control folder
    (LAB_CTL), removed once the run's processes are gone, no longer exists. Other runs may
    be under way meanwhile."""
    mine = f"init={uml.INIT_SCRIPT}".encode()
    found = []
    for entry in Path("/proc").iterdir():
        try:
            words = (entry / "cmdline").read_bytes().split(b"\0") if entry.name.isdigit() else []
        except OSError:
            continue  # gone meanwhile
        ctl = [w.removeprefix(b"LAB_CTL=") for w in words if w.startswith(b"LAB_CTL=")]
        if mine in words and ctl and not Path(ctl[0].decode()).exists():
            found.append(int(entry.name))
    return found


# Measured in the default time mode, inf-cpu (vm/README.md, "Time modes"): with on-off
# traffic, saturating traffic and two CPU hogs on the host alike, every 5 ms window held at
# most the packets the rate allows, rounded up, plus the shaper's bucket: none for
# confucius, two packets for the topology's HTB under UML. At 20 Mbit/s: 9 and 11 of 8.25.
@pytest.mark.parametrize("qdisc, own, bucket_packets",
                         [("pfifo limit 1000", False, 2), ("confucius bandwidth {rate}", True, 0)],
                         ids=["htb", "confucius"])
@pytest.mark.parametrize("rate", ["20mbit", "100mbit"])
def test_the_bottleneck_keeps_its_rate_in_every_5ms_window(tmp_path, qdisc, own, bucket_packets, rate):
    if own and not (uml.PROJECT_MODULES / "sch_confucius.ko").is_file():
        pytest.skip("no sch_confucius.ko for UML: run `make kmod-uml`")
    args = ["--qdisc", qdisc.format(rate=rate), "--rate", rate, "--duration", "2s", "--period", "100ms",
            *(["--own"] if own else [])]
    report = fidelity_report(tmp_path, *args)
    print(report)
    window_packets = report["rate_bps"] * fidelity.WINDOW_S / 8 / fidelity.WIRE_BYTES
    allowed_bps = (math.ceil(window_packets) + bucket_packets) * fidelity.WIRE_BYTES * 8 / fidelity.WINDOW_S
    assert report["packets"] > 1000
    assert report["max_window_bps"] <= allowed_bps
    # While the queue holds packets they leave one transmission time apart.
    assert report["median_gap_us"] == pytest.approx(report["expected_gap_us"], rel=0.01)


def fidelity_report(tmp_path, *args: str) -> dict:
    result = uml.run('exec python -m confucius.lab.guest.fidelity "$@"', args=list(args), results_dir=tmp_path,
                     timeout=120)
    result.check()
    return json.loads(result.output.splitlines()[-1])


def test_two_cpu_hogs_on_the_host_change_nothing_the_guest_measures(tmp_path):
    # Measured: with inf-cpu every figure of the fidelity check came out the same, to the
    # packet, idle and beside two hogs (vm/README.md, "Time modes"); so no tolerance.
    args = ("--qdisc", "pfifo limit 1000", "--rate", "20mbit", "--duration", "2s", "--period", "100ms")
    idle = fidelity_report(tmp_path / "idle", *args)
    hogs = [subprocess.Popen(["sh", "-c", "while :; do :; done"]) for _ in range(2)]
    try:
        loaded = fidelity_report(tmp_path / "loaded", *args)
    finally:
        for hog in hogs:
            hog.kill()
            hog.wait()
    print("idle:  ", idle)
    print("loaded:", loaded)
    assert loaded == idle



def test_runs_in_virtual_cpu_time_need_no_machine_slot(tmp_path, monkeypatch):
    """Two inf-cpu runs may share the host (no figure moves); a real-time mode waits its turn."""
    import fcntl
    import threading

    from confucius.lab import engine

    monkeypatch.setattr(engine, "MACHINE_LOCK", tmp_path / "machine.lock")
    with open(engine.MACHINE_LOCK, "a") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        with uml._slot("inf-cpu"):
            pass
        entered = threading.Event()

        def take_basic_slot():
            with uml._slot("basic"):
                entered.set()

        waiter = threading.Thread(target=take_basic_slot)
        waiter.start()
        assert not entered.wait(0.3)
        fcntl.flock(held, fcntl.LOCK_UN)
    waiter.join(10)
    assert entered.is_set()


RECORD_SCENARIO = """
name = "record"
engine = "uml"
duration = "10s"
[link]
rate = "20mbit"
buffer = 500
[schedulers]
names = ["drr-1:5"]
[rt]
controllers = ["gcc"]
"""

RECORD_SCRIPT = """
import json, os, subprocess, sys
from pathlib import Path
from confucius.lab import topology
from confucius.lab.contract import RunSpec
from confucius.lab.guest.run import build_topology
spec = RunSpec.read(Path(sys.argv[1]))
ran = build_topology(spec)
tc = lambda *argv: subprocess.run(["tc", "-n", topology.ROUTER, *argv], capture_output=True, text=True, check=True).stdout
json.dump({"ran": ran, "qdiscs": json.loads(tc("-j", "qdisc", "show", "dev", "rtr-cli")),
           "classes": tc("class", "show", "dev", "rtr-cli"),
           "filters": tc("filter", "show", "dev", "rtr-cli", "parent", "10:")},
          open(os.path.join(os.environ["RESULTS"], "record.json"), "w"))
"""


def test_the_guest_installs_the_run_s_record_of_the_bottleneck_and_nothing_else(tmp_path):
    from confucius.experiment import scenario as sc
    from confucius.lab import runner

    path = tmp_path / "record.toml"
    path.write_text(RECORD_SCENARIO)
    scenario = sc.load(path)
    task = runner.plan(scenario, None)[0]
    spec = runner.build_spec(scenario, task, {})
    spec.write(tmp_path / "spec.json")
    uml.run('exec python -c "$1" "$2"', args=[RECORD_SCRIPT, in_guest(tmp_path, tmp_path / "spec.json")], results_dir=tmp_path,
            timeout=120).check()
    found = json.loads((tmp_path / "record.json").read_text())
    # What the guest ran is the record, which is what the runs row stores.
    assert found["ran"] == spec.tc_commands == runner.bottleneck_commands(scenario, task.cell)
    assert json.loads(runner._run_row(scenario, task, spec, tmp_path, {}, None)["tc_commands"]) == found["ran"]
    # And the kernel holds what the record says: HTB at the link rate with UML's bucket (two
    # packets, 3028 bytes, which the kernel keeps in its time units: a few bytes less),
    # DRR under it with the RT class and the rest at 1:5, a pfifo of the buffer in each, the
    # two filters; nothing else at the bottleneck. (tc prints no JSON for classes.)
    assert sorted((q["kind"], q["handle"]) for q in found["qdiscs"]) == [
        ("drr", "10:"), ("htb", "1:"), ("pfifo", "101:"), ("pfifo", "102:")]
    assert all(q["options"]["limit"] == 500 for q in found["qdiscs"] if q["kind"] == "pfifo")
    htb = re.search(r"class htb 1:1 root leaf 10: prio 0 rate 20Mbit ceil 20Mbit burst (\d+)b", found["classes"])
    assert htb and 3000 <= int(htb[1]) <= 3028
    assert "class drr 10:1 root leaf 101: quantum 1514b" in found["classes"]
    assert "class drr 10:2 root leaf 102: quantum 7570b" in found["classes"]
    assert found["classes"].count("class ") == 3
    assert found["filters"].count("flowid 10:1") == 1 and found["filters"].count("flowid 10:2") == 1


def test_a_run_that_waits_for_the_machine_says_so_and_then_runs(tmp_path):
    # A real-time run takes the machine-wide slot; while another holds it, it says why it
    # waits (and its timeout, which counts from the VM's start, is not spent waiting).
    command = [sys.executable, "-m", "confucius", "lab", "vm", "run", "--engine", "uml", "--time-mode",
               "real", "--quiet", "--timeout", "60", "--results", str(tmp_path), "--command", "true"]
    with open(MACHINE_LOCK, "a") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            pytest.skip("another lab VM holds this machine: the test must hold its slot itself")
        waiting = subprocess.Popen(command, stderr=subprocess.PIPE, text=True)
        note = waiting.stderr.readline()
        time.sleep(1)
        assert waiting.poll() is None
    _, rest = waiting.communicate(timeout=120)
    print(note.strip())
    assert "another lab VM holds this machine" in note and "waiting" in note
    assert waiting.returncode == 0, rest
