# SPDX-License-Identifier: MIT
"""One run of a scenario, inside the lab VM: `python -m confucius.lab.guest SPEC.json`.

The host (runner.py) writes the run's spec (format `confucius-lab-run/1`), the pages and
the hosts file into the run's results folder and boots the VM with this module as the
script. Here:

1. the topology (topology.Topology) with the scheduler under test at the bottleneck, its
   classes and filters, one server address per Web domain;
2. the long-lived parts: qdisc statistics sampled with one `tc -s -j -batch` process,
   Confucius's flows sampled over netlink (fast around each page load), the Web server,
   irtt probes, iperf3 bulk flows;
3. the real-time flow(s) and the page loads, in one of two modes:
   - `episodes` (default): for each page a fresh RT flow warms up until it has converged,
     then the page loads, then the flow runs on until its frames have been on time for a
     while (the tail), and stops. Every load meets an RT flow in the same state: GCC
     recovers from a back-off additively (tens of kbit/s per second), so a flow kept
     running would meet each page at a rate that depends on how earlier pages treated it
     (a scheduler that protects it would face a faster flow next time);
   - `continuous`: one RT flow for the whole run, as in the seeds' simulations; each load
     waits until the flow has converged again since the previous load ended;
   without pages, the RT flow warms up and runs for the scenario's duration.
   A bandwidth trace plays from each load's start in episodes (the same pattern for every
   scheduler's load; the first rate before), from the start in continuous runs, and from
   the end of the warm-up in runs without pages.
4. Everything is written to scratch space in the guest's memory (9p writes are slow) and
   copied into the results folder at the end, with `events.json`: the timeline of the run
   (CLOCK_MONOTONIC ns, the clock of rtflow's logs) that results.py reads.

Converged: the RT flow has run `min` seconds and the mean of its target rate (rtflow's
rate log) over the last `hold` seconds is within ±`tolerance` of the mean over the `hold`
seconds before: its level has stopped moving. A controller that ramps up (GCC gains 8 %/s
when far from its estimate) fails this; one that saws around a level (GCC near its
estimate, the TCP mode's rate rule) passes. At `max` seconds the load starts anyway,
recorded as not converged.

Calm (the end of a tail): the frames captured over the last `calm` seconds all arrived whole
within the stall threshold.

No busy loops: the main thread sleeps between polls of the logs, the sampler between samples.
"""

from __future__ import annotations

import collections
import csv
import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from confucius import metrics, rtflow
from confucius.lab import rtnl, topology

SPEC_FORMAT = "confucius-lab-run/1"
EVENTS_FORMAT = "confucius-lab-events/1"
SCRATCH = Path("/tmp/lab-run")
POLL_S = 0.25
# Fewest rate-log rows (one per 50 ms) a convergence window must hold.
MIN_ROWS = 10
CALM_S = 2.0
# After a tail, before the RT flow stops: frames still in flight must not be cut off.
DRAIN_S = 0.5
# Between episodes: every qdisc forgets a flow that sent nothing for this long (Confucius
# after one reweight interval, 250 ms by default).
IDLE_S = 1.0
# Confucius's flows are sampled this often around each page load, from this long before it.
FLOW_FAST_S = 0.02
FLOW_LEAD_S = 2.0
IRTT_PORT = 2112
WRITE_RESULTS_S = 120.0       # longest wait for irtt or iperf3 to write its results when stopped
IPERF_BASE_PORT = 5201
RT_DURATION = "86400s"  # stopped by a signal long before
# The RT flow's sender and receiver stand for machines of their own. In this one guest they
# would wait for a vCPU behind the page load's web client and server (~70 connections), and
# under TCG such waits reach hundreds of ms: a sender that paces at 2.5x its target then
# holds seconds of media, which measures the emulator, not the scheduler under test. With
# `cpu = "realtime"` (the default) both ends run SCHED_FIFO; packet forwarding, the qdiscs
# and every other process are unchanged, and so the same for every scheduler.
RT_CPU_PREFIX = {"realtime": ["chrt", "--fifo", "10"], "shared": []}


def now_ns() -> int:
    return time.monotonic_ns()


def in_ns(namespace: str, argv: list[str]) -> list[str]:
    return ["ip", "netns", "exec", namespace, *map(str, argv)]


def log(message: str) -> None:
    print(f"[guest {time.monotonic():9.3f}] {message}", flush=True)


# --------------------------------------------------------------------------- processes

def _drain(source, target) -> None:
    with target:
        shutil.copyfileobj(source, target)


class Processes:
    """The run's background programs, each with its stderr in scratch/logs/<name>.err."""

    def __init__(self, scratch: Path):
        self.logs = scratch / "logs"
        self.logs.mkdir(parents=True, exist_ok=True)
        self.running: dict[str, subprocess.Popen] = {}

    def start(self, name: str, argv: list[str], stdout=None, wait_for: str | None = None) -> subprocess.Popen:
        """Start `argv`; with `wait_for`, until its stderr shows that text (then it goes to the log)."""
        err = subprocess.PIPE if wait_for else open(self.logs / f"{name}.err", "w")
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=stdout or subprocess.DEVNULL,
                                stderr=err, text=True)
        self.running[name] = proc
        if wait_for:
            self._wait_for(name, proc, wait_for)
        return proc

    def _wait_for(self, name: str, proc: subprocess.Popen, text: str) -> None:
        first = proc.stderr.readline()
        rest = open(self.logs / f"{name}.err", "w")
        rest.write(first)
        threading.Thread(target=_drain, args=(proc.stderr, rest), daemon=True).start()
        if text not in first:
            raise RuntimeError(f"{name} did not start: {first.strip() or 'no output'}")

    def signal(self, name: str, number: int) -> None:
        proc = self.running.get(name)
        if proc is not None and proc.poll() is None:
            proc.send_signal(number)

    def stop(self, name: str, timeout: float = 5.0) -> int | None:
        proc = self.running.pop(name, None)
        if proc is None:
            return None
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
        try:
            return proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            return proc.wait()

    def wait(self, name: str, timeout: float) -> int | None:
        proc = self.running.get(name)
        try:
            code = proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            return self.stop(name)
        self.running.pop(name)
        return code

    def stop_all(self) -> None:
        for name in list(self.running):
            self.stop(name)


# --------------------------------------------------------------------------- log readers

class CsvTail:
    """Reads the rows a program has appended to its CSV log since the last call."""

    def __init__(self, path: Path):
        self.path = path
        self.offset = 0
        self.partial = ""
        self.header: list[str] | None = None

    def rows(self) -> list[dict[str, str]]:
        try:
            with self.path.open() as handle:
                handle.seek(self.offset)
                text = handle.read()
                self.offset = handle.tell()
        except FileNotFoundError:
            return []
        lines = (self.partial + text).split("\n")
        self.partial = lines.pop()  # a line still being written
        parsed = list(csv.reader(lines))
        if self.header is None and parsed:
            self.header = parsed.pop(0)
        return [dict(zip(self.header, row)) for row in parsed if row]


class RateWatch:
    """The target rate of one RT flow over time, from its sender's rate log."""

    def __init__(self, path: Path):
        self.tail = CsvTail(path)
        self.samples: list[tuple[int, float]] = []

    def update(self) -> None:
        self.samples += [(int(r["time_ns"]), float(r["target_bps"])) for r in self.tail.rows()]

    def converged(self, since_ns: int, hold_s: float, tolerance: float) -> bool:
        """The mean target over the last `hold_s` of the log is within `tolerance` of the
        mean over the `hold_s` before, both windows after `since_ns`."""
        self.update()
        if not self.samples:
            return False
        last = self.samples[-1][0]
        hold = int(hold_s * 1e9)
        if last - 2 * hold < since_ns:
            return False
        earlier = [v for t, v in self.samples if last - 2 * hold <= t < last - hold]
        later = [v for t, v in self.samples if t >= last - hold]
        if len(earlier) < MIN_ROWS or len(later) < MIN_ROWS:
            return False  # the log has gaps: the sender was not running on time
        before, now = sum(earlier) / len(earlier), sum(later) / len(later)
        return before > 0 and abs(now - before) <= tolerance * before

    def mean_bps(self, since_ns: int) -> float | None:
        values = [v for t, v in self.samples if t >= since_ns]
        return sum(values) / len(values) if values else None


class FrameWatch:
    """Frames of one RT flow as its receiver logs them (written when complete or given up)."""

    def __init__(self, path: Path):
        self.tail = CsvTail(path)
        self.frames: list[tuple[int, bool]] = []  # capture time, on time

    def update(self) -> None:
        for r in self.tail.rows():
            on_time = metrics.on_time(r["complete"] == "1", float(r["delay_ms"]) if r["delay_ms"] else None)
            self.frames.append((int(r["capture_ns"]), on_time))

    def calm(self, since_ns: int, calm_s: float) -> bool:
        """The frames captured over the last `calm_s` logged, all after `since_ns`, were on time."""
        self.update()
        if not self.frames:
            return False
        last = max(t for t, _ in self.frames)
        start = last - int(calm_s * 1e9)
        if start < since_ns:
            return False
        return all(ok for t, ok in self.frames if t >= start)


# --------------------------------------------------------------------------- RT flows

@dataclass
class RtSession:
    """One start of the scenario's RT flow(s); logs in scratch/rt/s<index>-f<flow>-*."""
    index: int
    spec: dict
    procs: Processes
    scratch: Path
    started_ns: int = 0
    stopped_ns: int = 0
    rates: list[RateWatch] = field(default_factory=list)
    frames: list[FrameWatch] = field(default_factory=list)
    files: list[dict] = field(default_factory=list)

    def start(self) -> None:
        rt_dir = self.scratch / "rt"
        rt_dir.mkdir(exist_ok=True)
        cpu = RT_CPU_PREFIX[self.spec["cpu"]]
        for number, flow in enumerate(self.spec["flows"]):
            base = rt_dir / f"s{self.index}-f{number}"
            frame_log, rate_log = Path(f"{base}-frames.csv"), Path(f"{base}-rate.csv")
            port = flow["port"]
            self.procs.start(f"rt-recv-s{self.index}-f{number}",
                             in_ns(topology.CLIENT, [*cpu, *rtflow.recv_command(f"0.0.0.0:{port}",
                                                                                 frame_log=frame_log)]),
                             wait_for="listening")
            options = {"cca": flow.get("cca"), "rate": flow.get("rate"), "fps": self.spec["fps"],
                       "duration": RT_DURATION, "rate_log": rate_log}
            if flow["mode"] != "fixed":
                options.update(start_rate=self.spec["start_rate"], min_rate=self.spec["min_rate"],
                               max_rate=self.spec["max_rate"])
            if flow["mode"] != "tcp":
                options["retransmit_window"] = self.spec["retransmit_window"]
            self.procs.start(f"rt-send-s{self.index}-f{number}",
                             in_ns(topology.SERVER, [*cpu, *rtflow.send_command(
                                 f"{topology.CLIENT_ADDRESS}:{port}", mode=flow["mode"], **options)]))
            self.rates.append(RateWatch(rate_log))
            self.frames.append(FrameWatch(frame_log))
            self.files.append({"flow": number, "label": flow["label"], "port": port,
                               "frames": str(frame_log.relative_to(self.scratch)),
                               "rates": str(rate_log.relative_to(self.scratch))})
        self.started_ns = now_ns()

    def check(self) -> None:
        """Raise if a sender or receiver of this session has stopped by itself."""
        for number in range(len(self.spec["flows"])):
            for role in ("send", "recv"):
                name = f"rt-{role}-s{self.index}-f{number}"
                proc = self.procs.running.get(name)
                if proc is not None and proc.poll() is not None:
                    text = (self.procs.logs / f"{name}.err").read_text()[-1500:]
                    raise RuntimeError(f"rtflow {role} stopped (exit {proc.returncode}):\n{text}")

    def converged(self, since_ns: int, warmup: dict) -> bool:
        self.check()
        return all(r.converged(since_ns, warmup["hold_s"], warmup["tolerance"]) for r in self.rates)

    def calm(self, since_ns: int) -> bool:
        self.check()
        return all(f.calm(since_ns, CALM_S) for f in self.frames)

    def warm_up(self, warmup: dict) -> dict:
        """Wait until converged (after `min_s`), at most `max_s` from the start."""
        earliest = self.started_ns + int(warmup["min_s"] * 1e9)
        deadline = self.started_ns + int(warmup["max_s"] * 1e9)
        converged = wait_until(lambda: now_ns() >= earliest and self.converged(self.started_ns, warmup),
                               deadline)
        return {"warmup_s": (now_ns() - self.started_ns) / 1e9, "converged": converged,
                "rt_target_bps": [r.mean_bps(now_ns() - int(warmup["hold_s"] * 1e9)) for r in self.rates]}

    def settled_low(self, warm: dict, min_share: float) -> bool:
        """Whether a rate-adaptive flow's target after the warm-up stands below `min_share`
        of its fair share of the link (fixed-rate flows never do)."""
        return any(flow["mode"] != "fixed" and (target is None or target < min_share * flow["fair_bps"])
                   for flow, target in zip(self.spec["flows"], warm["rt_target_bps"]))

    def stop(self) -> None:
        for number in range(len(self.spec["flows"])):
            self.procs.stop(f"rt-send-s{self.index}-f{number}", timeout=10)
        for number in range(len(self.spec["flows"])):
            # The receiver stops on the sender's bye; if every bye was lost, on a signal.
            self.procs.wait(f"rt-recv-s{self.index}-f{number}", timeout=5)
        self.stopped_ns = now_ns()

    def record(self) -> dict:
        return {"index": self.index, "started_ns": self.started_ns, "stopped_ns": self.stopped_ns,
                "flows": self.files}


def wait_until(condition, deadline_ns: int) -> bool:
    """Poll `condition` until it holds (True) or the deadline passes (False)."""
    while True:
        if condition():
            return True
        if now_ns() >= deadline_ns:
            return False
        time.sleep(POLL_S)


# --------------------------------------------------------------------------- background

class StatsSampler(threading.Thread):
    """`tc -s -j qdisc show` of the bottleneck every `interval_s`, from one tc process."""

    def __init__(self, path: Path, interval_s: float, dev: str = topology.BOTTLENECK[1]):
        super().__init__(daemon=True)
        self.path, self.interval_s, self.dev = path, interval_s, dev
        self.halt = threading.Event()
        self.samples = 0

    def run(self) -> None:
        ns, dev = topology.ROUTER, self.dev
        tc = subprocess.Popen(["tc", "-s", "-j", "-n", ns, "-batch", "-"], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        with self.path.open("w") as out:
            next_at = time.monotonic()
            while not self.halt.is_set():
                taken = now_ns()
                tc.stdin.write(f"qdisc show dev {dev}\n")
                tc.stdin.flush()
                line = tc.stdout.readline()
                if not line:
                    break
                out.write(f'{{"time_ns": {taken}, "qdiscs": {line.strip()}}}\n')
                self.samples += 1
                next_at += self.interval_s
                self.halt.wait(max(0.0, next_at - time.monotonic()))
        tc.stdin.close()
        tc.wait()

    def stop(self) -> None:
        self.halt.set()
        self.join(timeout=5)


class FlowSampler(threading.Thread):
    """Confucius's flows at the bottleneck (its classes 1:8000+bucket), one class dump per
    sample over one netlink socket, into flows.jsonl: every FLOW_FAST_S from the time given
    to `arm()` on, at `interval_s` otherwise. Armed, it keeps the last FLOW_LEAD_S of fast samples in
    memory and writes them only if `record()` follows (a page load starts), so every load is
    seen from FLOW_LEAD_S before it without keeping whole warm-ups at 50 samples a second;
    `relax()` (the load's tail ended) goes back to the slow pace. Lines are in time order
    except the lead, which is written when the load starts."""

    def __init__(self, path: Path, interval_s: float, dev: str = topology.BOTTLENECK[1]):
        super().__init__(daemon=True)
        self.path, self.interval_s, self.dev = path, interval_s, dev
        self.halt = threading.Event()
        self.recording = False
        self.armed_from_ns: int | None = None
        self.lead: collections.deque[str] = collections.deque(maxlen=round(FLOW_LEAD_S / FLOW_FAST_S))
        self.samples = self.written = self.cpu_ns = self.last_written = 0

    def arm(self, from_ns: int) -> None:
        """Sample fast from `from_ns` on (FLOW_LEAD_S before a load can start at the earliest)."""
        self.armed_from_ns = from_ns - int(FLOW_LEAD_S * 1e9)

    def record(self) -> None:
        self.recording = True

    def relax(self) -> None:
        self.recording, self.armed_from_ns = False, None

    @property
    def fast(self) -> bool:
        return self.recording or (self.armed_from_ns is not None and now_ns() >= self.armed_from_ns)

    def run(self) -> None:
        ns, dev = topology.ROUTER, self.dev
        with rtnl.ClassDump(ns) as dump, self.path.open("w") as out:
            index = dump.index(dev)
            next_at = time.monotonic()
            while not self.halt.is_set():
                taken, cpu = now_ns(), time.thread_time_ns()
                line = json.dumps({"time_ns": taken, "flows": dump.confucius_flows(index)}) + "\n"
                self.cpu_ns += time.thread_time_ns() - cpu
                self.samples += 1
                self._keep(out, taken, line)
                next_at = max(next_at + (FLOW_FAST_S if self.fast else self.interval_s), time.monotonic())
                self.halt.wait(next_at - time.monotonic())

    def _keep(self, out, taken: int, line: str) -> None:
        """Write the sample, hold it as lead, or drop it (a fast sample between slow ones)."""
        if self.recording:
            out.writelines(self.lead)
            self.written += len(self.lead)
        if self.recording or not self.fast:
            self.lead.clear()
        if self.recording or taken - self.last_written >= self.interval_s * 1e9:
            out.write(line)
            self.written += 1
            self.last_written = taken
        elif self.fast:
            self.lead.append(line)

    def stop(self) -> dict | None:
        """Stop; how much was sampled and what a sample cost this thread in CPU time."""
        if not self.is_alive():
            return None  # never started: not a Confucius bottleneck
        self.halt.set()
        self.join(timeout=5)
        return {"samples": self.samples, "written": self.written,
                "cpu_ms_per_sample": self.cpu_ns / 1e6 / max(self.samples, 1)}


class TracePlayer:
    """The bottleneck's rate from a bandwidth trace (from `offset_s` on, times `scale`),
    played from a chosen moment, over and over, until stopped; when it is not playing the
    link runs at the trace's first rate. Episodes start it with each page load, so every
    scheduler's load meets the same bandwidth pattern whatever its warm-up took."""

    def __init__(self, trace: dict, scratch: Path, shaping: str):
        self.shaping = shaping
        points = [(t, bps) for t, bps in topology.read_trace(Path(trace["path"])) if t >= trace["offset_s"]]
        self.path = scratch / "trace.log"
        self.path.write_text("".join(f"{t - points[0][0]:.3f} {bps / 1e6:.6f}\n" for t, bps in points))
        self.scale = trace["scale"]
        self.first_bps = max(points[0][1] * self.scale, topology.MIN_RATE_BPS)
        self.halt: threading.Event | None = None
        self.thread: threading.Thread | None = None

    def play(self) -> int:
        self.stop()
        self.halt = threading.Event()
        self.thread = threading.Thread(target=self._loop, args=(self.halt,), daemon=True)
        started = now_ns()
        self.thread.start()
        return started

    def _loop(self, halt: threading.Event) -> None:
        while not halt.is_set():
            topology.follow_trace(self.path, scale=self.scale, stop=halt, shaping=self.shaping)

    def stop(self) -> None:
        if self.thread is None:
            return
        self.halt.set()
        self.thread.join(timeout=10)
        self.thread = None
        topology.set_rate(f"{self.first_bps:.0f}bit", self.shaping)


def start_bulk(spec: dict, procs: Processes, scratch: Path, t0_ns: int,
               started: dict) -> list[threading.Timer]:
    """iperf3 flows server -> client through the bottleneck, each at its start time (noted
    in `started`: iperf3's own times count from its start)."""
    timers = []

    def start(number: int, argv: list[str], out) -> None:
        started[number] = now_ns()
        procs.start(f"bulk-{number}", argv, stdout=out)

    for number, bulk in enumerate(spec["bulk"]):
        port = IPERF_BASE_PORT + number
        procs.start(f"bulk-server-{number}", in_ns(topology.SERVER, ["iperf3", "-s", "-1", "-p", port,
                                                                     "-B", topology.SERVER_ADDRESS]))
        seconds = bulk["duration_s"] or 86400
        argv = in_ns(topology.CLIENT, ["iperf3", "-c", topology.SERVER_ADDRESS, "-p", port, "-R",
                                       "-C", bulk["cca"], "-t", f"{seconds:g}", "-i", "0.5", "-J"])
        out = open(scratch / f"bulk-{number}.json", "w")
        delay = max(0.0, t0_ns / 1e9 + bulk["start_s"] - time.monotonic())
        timer = threading.Timer(delay, start, args=(number, argv, out))
        timer.start()
        timers.append(timer)
    return timers


def start_probes(spec: dict, procs: Processes, scratch: Path) -> None:
    procs.start("irtt-server", in_ns(topology.SERVER, ["irtt", "server", "-b",
                                                       f"{topology.SERVER_ADDRESS}:{IRTT_PORT}"]))
    time.sleep(0.5)
    procs.start("irtt-client", in_ns(topology.CLIENT, [
        "irtt", "client", "-i", f"{spec['probes']['interval_s'] * 1e3:g}ms", "-d", "24h", "-q",
        "-o", scratch / "irtt.json", f"{topology.SERVER_ADDRESS}:{IRTT_PORT}"]))


def stop_writers(spec: dict, procs: Processes) -> None:
    """irtt and iperf3 write their JSON when stopped: thousands of round trips or intervals
    take them many seconds under TCG, longer than the default wait before a kill (which
    left empty files)."""
    names = [f"bulk-{number}" for number in range(len(spec["bulk"]))]
    if spec["probes"]:
        names.append("irtt-client")
    names = [name for name in names if name in procs.running]
    for name in names:
        procs.signal(name, signal.SIGTERM)
    for name in names:  # one signal only: a second one makes irtt quit without writing
        procs.wait(name, timeout=WRITE_RESULTS_S)


# --------------------------------------------------------------------------- page loads

def load_page(spec: dict, page: dict, number: int, scratch: Path) -> dict:
    web = spec["web"]
    out = scratch / "pages" / f"{number}.json"
    out.parent.mkdir(exist_ok=True)
    argv = in_ns(topology.CLIENT, [spec["binaries"]["web_client"], "--page", page["file"],
                                   "--hosts", spec["hosts"], "--cca", web["cca"],
                                   "--max-per-domain", web["max_per_domain"],
                                   "--timeout", f"{web['timeout_s']:g}s", "--out", out])
    log(f"page {number} ({page['id']})")
    started = now_ns()
    done = subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True, text=True,
                          timeout=web["timeout_s"] + 30)
    return {"number": number, "id": page["id"], "started_ns": started, "ended_ns": now_ns(),
            "exit": done.returncode, "stderr": done.stderr[-2000:], "report": f"pages/{number}.json"}


def tail(session: RtSession, since_ns: int, settle_s: float) -> dict:
    """Keep the RT flow running until its frames have been on time for a while."""
    deadline = since_ns + int(settle_s * 1e9)
    calm = wait_until(lambda: session.calm(since_ns), deadline)
    return {"window_end_ns": now_ns(), "calm": calm}


def earliest_load_ns(session: RtSession, warmup: dict) -> int:
    """The earliest a load can follow the session's start: its warm-up's minimum, and two
    `hold` windows of rate log (RtSession.converged)."""
    return session.started_ns + int(max(warmup["min_s"], 2 * warmup["hold_s"]) * 1e9)


def warmed_session(number: int, spec: dict, procs: Processes, scratch: Path,
                   flows: FlowSampler) -> tuple[RtSession, dict]:
    """A fresh RT session, warmed up. One that settled below its share of the link is
    stopped and replaced, at most `retries` times; the warm-up returned counts them all."""
    warmup, attempt = spec["warmup"], 1
    while True:
        session = RtSession(number, spec["rt"], procs, scratch)
        session.start()
        flows.arm(earliest_load_ns(session, warmup))
        warm = session.warm_up(warmup)
        if attempt > warmup["retries"] or not session.settled_low(warm, warmup["min_share"]):
            return session, {**warm, "warmups": attempt}
        session.stop()
        flows.relax()
        time.sleep(IDLE_S)
        attempt += 1


def run_episodes(spec: dict, procs: Processes, scratch: Path, trace: TracePlayer | None,
                 flows: FlowSampler) -> tuple[list, list]:
    sessions, pages = [], []
    previous_start = 0
    for number, page in enumerate(spec["pages"]):
        session, warm = warmed_session(number, spec, procs, scratch, flows)
        sessions.append(session)
        wait_until(lambda: False, previous_start + int(spec["web"]["interval_s"] * 1e9))
        trace_start = trace.play() if trace else None
        flows.record()
        load = load_page(spec, page, number, scratch)
        previous_start = load["started_ns"]
        load.update(warm, session=number, trace_start_ns=trace_start,
                    **tail(session, load["ended_ns"], spec["web"]["settle_s"]))
        flows.relax()
        pages.append(load)
        if trace:
            trace.stop()
        time.sleep(DRAIN_S)
        session.stop()
        time.sleep(IDLE_S)
    return sessions, pages


def run_continuous(spec: dict, procs: Processes, scratch: Path, trace: TracePlayer | None,
                   flows: FlowSampler) -> tuple[list, list]:
    """Loads follow one another: each load's window ends where the next one starts, so the
    flows are sampled fast from the first load to the last one's tail."""
    if trace:
        trace.play()
    session, warm = warmed_session(0, spec, procs, scratch, flows)
    pages = []
    previous_start, previous_end = 0, session.started_ns
    for number, page in enumerate(spec["pages"]):
        earliest = previous_start + int(spec["web"]["interval_s"] * 1e9)
        latest = max(earliest, previous_end + int(spec["web"]["settle_s"] * 1e9))
        wait_until(lambda: False, earliest)
        if number == 0:
            converged = warm["converged"]
        else:
            converged = wait_until(lambda: session.converged(previous_end, spec["warmup"]), latest)
        flows.record()
        load = load_page(spec, page, number, scratch)
        load.update(session=0, warmup_s=warm["warmup_s"] if number == 0 else None,
                    warmups=warm["warmups"] if number == 0 else None, converged=converged,
                    rt_target_bps=[r.mean_bps(load["started_ns"] - int(spec["warmup"]["hold_s"] * 1e9))
                                   for r in session.rates])
        if pages:
            pages[-1]["window_end_ns"] = load["started_ns"]
        previous_start, previous_end = load["started_ns"], load["ended_ns"]
        pages.append(load)
    if pages:
        pages[-1].update(tail(session, previous_end, spec["web"]["settle_s"]))
    flows.relax()
    time.sleep(DRAIN_S)
    session.stop()
    return [session], pages


def run_timed(spec: dict, procs: Processes, scratch: Path, trace: TracePlayer | None) -> tuple[list, dict]:
    session = RtSession(0, spec["rt"], procs, scratch)
    session.start()
    warm = session.warm_up(spec["warmup"])
    measured_from = trace.play() if trace else now_ns()
    time.sleep(spec["duration_s"])
    measured = {"from_ns": measured_from, "to_ns": now_ns(), **warm}
    time.sleep(DRAIN_S)
    session.stop()
    return [session], measured


# --------------------------------------------------------------------------- counters

def counters() -> dict:
    """Every place a packet can be dropped, per namespace: links, qdiscs, the kernel's
    SNMP counters (UDP buffer errors, IP forwarding) and the per-CPU backlog (softnet)."""
    found = {}
    for ns in (topology.SERVER, topology.ROUTER, topology.CLIENT):
        read = lambda *argv: subprocess.run(in_ns(ns, argv), capture_output=True, text=True).stdout
        found[ns] = {"links": read("ip", "-s", "-j", "link", "show"), "qdiscs": read("tc", "-s", "-j", "qdisc", "show"),
                     "snmp": read("cat", "/proc/net/snmp", "/proc/net/netstat")}
    found["softnet_stat"] = Path("/proc/net/softnet_stat").read_text()
    return found


# --------------------------------------------------------------------------- the run

def qdisc_kind(spec: dict) -> str:
    """The kind of the scheduler under test (its tc qdisc kind)."""
    return spec["topology"]["kind"]


def bottleneck_device(spec: dict) -> str:
    """The router's device whose root is the scheduler under test (topology.shaping_device)."""
    return topology.shaping_device(spec["topology"]["shaping"])


def build_topology(spec: dict) -> list[str]:
    """The dumbbell with a bare bottleneck, then the run's record of the bottleneck's tc
    commands as it is (runner.bottleneck_commands; the database stores the same list).
    Returns what was run, for the host to compare with the record."""
    topology.Topology(qdisc=None, rate=None, rtt=spec["topology"]["rtt"],
                      shaping=spec["topology"]["shaping"]).up()
    ran = topology.install_bottleneck(spec["tc_commands"])
    if spec.get("addresses"):
        topology.add_server_addresses(spec["addresses"])
    return ran


def run(spec: dict, results: Path) -> dict:
    scratch = SCRATCH
    shutil.rmtree(scratch, ignore_errors=True)
    scratch.mkdir(parents=True)
    procs = Processes(scratch)
    events = {"format": EVENTS_FORMAT, "clock_offset_ns": time.time_ns() - time.monotonic_ns(),
              "mode": spec["mode"]}
    try:
        events["tc_commands"] = build_topology(spec)
        dev = bottleneck_device(spec)
        # Every device of the router, so that the record shows where the shaper is and
        # where it is not (ingress shaping leaves the client side's egress without one).
        events["tc_show"] = subprocess.run(["tc", "-n", topology.ROUTER, "qdisc", "show"],
                                           capture_output=True, text=True).stdout
        sampler = StatsSampler(scratch / "qdisc.jsonl", spec["stats_interval_s"], dev)
        sampler.start()
        flows = FlowSampler(scratch / "flows.jsonl", spec["stats_interval_s"], dev)
        if qdisc_kind(spec) == "confucius":
            flows.start()
        trace = TracePlayer(spec["trace"], scratch, spec["topology"]["shaping"]) if spec["trace"] else None
        if spec["pages"]:
            procs.start("web-server", in_ns(topology.SERVER, [spec["binaries"]["web_server"], "--hosts",
                                                              spec["hosts"], "--cca", spec["web"]["cca"]]),
                        wait_for="listening")
        if spec["probes"]:
            start_probes(spec, procs, scratch)
        events["t0_ns"] = now_ns()
        events["bulk_started_ns"] = {}
        timers = start_bulk(spec, procs, scratch, events["t0_ns"], events["bulk_started_ns"])
        if not spec["pages"]:
            sessions, events["measured"] = run_timed(spec, procs, scratch, trace)
        elif spec["mode"] == "episodes":
            sessions, events["pages"] = run_episodes(spec, procs, scratch, trace, flows)
        else:
            sessions, events["pages"] = run_continuous(spec, procs, scratch, trace, flows)
        if trace:
            trace.stop()
        for timer in timers:
            timer.cancel()
        stop_writers(spec, procs)
        events["sessions"] = [s.record() for s in sessions]
        events["end_ns"] = now_ns()
        sampler.stop()
        events["stats_samples"] = sampler.samples
        events["flow_samples"] = flows.stop()
        log(f"flow samples: {events['flow_samples']}")
        (scratch / "counters.json").write_text(json.dumps(counters(), indent=1) + "\n")
    finally:
        procs.stop_all()
        (scratch / "events.json").write_text(json.dumps(events, indent=1) + "\n")
        # One copy at the end: the results folder is 9p, where small writes are slow.
        shutil.copytree(scratch, results, dirs_exist_ok=True)
    return events


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: python -m confucius.lab.guest SPEC.json", file=sys.stderr)
        return 2
    spec_path = Path(argv[0])
    spec = json.loads(spec_path.read_text())
    if spec.get("format") != SPEC_FORMAT:
        print(f"{spec_path}: not a {SPEC_FORMAT} spec", file=sys.stderr)
        return 2
    run(spec, Path(os.environ.get("RESULTS", spec_path.parent)))
    log("done")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
