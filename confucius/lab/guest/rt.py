# SPDX-License-Identifier: MIT
"""The real-time flow: one start of the spec's RT flow(s) (rtflow's sender and receiver per
flow) and what the guest reads from their logs while they run (the target rate, the frames)."""

from __future__ import annotations

import csv
from dataclasses import dataclass, field
from pathlib import Path

from confucius import metrics, rtflow

from .. import topology
from ..contract import GUEST_TIMING, GuestEvents, RtSpec, SessionEvent, SessionFlow, Warmup
from .base import Processes, in_ns, now_ns, wait_until

# Fewest rate-log rows (one per 50 ms) a convergence window must hold.
MIN_ROWS = 10
CALM_S = GUEST_TIMING.calm_s
RT_DURATION = "86400s"  # stopped by a signal long before
# The RT flow's sender and receiver stand for machines of their own. In this one guest they
# would wait for a vCPU behind the page load's web client and server (~70 connections), and
# under TCG such waits reach hundreds of ms: a sender that paces at 2.5x its target then
# holds seconds of media, which measures the emulator, not the scheduler under test. With
# `cpu = "realtime"` (the default) both ends run SCHED_FIFO; packet forwarding, the qdiscs
# and every other process are unchanged, and so the same for every scheduler.
RT_CPU_PREFIX = {"realtime": ["chrt", "--fifo", "10"], "shared": []}


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


def fresh_logs(base: Path) -> tuple[Path, Path]:
    """The frame and rate logs of one RT flow, at `base`-frames.csv and -rate.csv. A
    warm-up that was replaced left its logs there: they are removed, so that the new
    session's tails cannot read them before its programs create the logs again and
    then resume in the middle of a row of the new ones."""
    logs = Path(f"{base}-frames.csv"), Path(f"{base}-rate.csv")
    for stale in logs:
        stale.unlink(missing_ok=True)
    return logs


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


@dataclass
class Warm:
    """How a session's warm-up ended."""
    warmup_s: float
    converged: bool
    rt_target_bps: list[float | None]    # each flow's mean target over the last hold
    warmups: int = 1                     # sessions warmed up, this one included


@dataclass
class RtSession:
    """One start of the scenario's RT flow(s), a Runner; logs in scratch/rt/s<index>-f<flow>-*."""
    index: int
    spec: RtSpec
    procs: Processes
    scratch: Path
    started_ns: int = 0
    stopped_ns: int = 0
    rates: list[RateWatch] = field(default_factory=list)
    frames: list[FrameWatch] = field(default_factory=list)
    files: list[SessionFlow] = field(default_factory=list)

    def _name(self, role: str, number: int) -> str:
        return f"rt-{role}-s{self.index}-f{number}"

    def start(self) -> None:
        rt_dir = self.scratch / "rt"
        rt_dir.mkdir(exist_ok=True)
        cpu = RT_CPU_PREFIX[self.spec.cpu]
        for number, flow in enumerate(self.spec.flows):
            frame_log, rate_log = fresh_logs(rt_dir / f"s{self.index}-f{number}")
            self.procs.start(self._name("recv", number),
                             in_ns(topology.CLIENT, [*cpu, *rtflow.recv_command(f"0.0.0.0:{flow.port}",
                                                                                 frame_log=frame_log)]),
                             wait_for="listening")
            options = {"cca": flow.cca, "rate": flow.rate, "fps": self.spec.fps,
                       "duration": RT_DURATION, "rate_log": rate_log}
            if flow.mode != "fixed":
                options.update(start_rate=self.spec.start_rate, min_rate=self.spec.min_rate,
                               max_rate=self.spec.max_rate)
            if flow.mode != "tcp":
                options["retransmit_window"] = self.spec.retransmit_window
            self.procs.start(self._name("send", number),
                             in_ns(topology.SERVER, [*cpu, *rtflow.send_command(
                                 f"{topology.CLIENT_ADDRESS}:{flow.port}", mode=flow.mode, **options)]))
            self.rates.append(RateWatch(rate_log))
            self.frames.append(FrameWatch(frame_log))
            self.files.append(SessionFlow(flow=number, label=flow.label, port=flow.port,
                                          frames=str(frame_log.relative_to(self.scratch)),
                                          rates=str(rate_log.relative_to(self.scratch))))
        self.started_ns = now_ns()

    def check(self) -> None:
        """Raise if a sender or receiver of this session has stopped by itself."""
        for number in range(len(self.spec.flows)):
            for role in ("send", "recv"):
                name = self._name(role, number)
                proc = self.procs.running.get(name)
                if proc is not None and proc.poll() is not None:
                    text = (self.procs.logs / f"{name}.err").read_text()[-1500:]
                    raise RuntimeError(f"rtflow {role} stopped (exit {proc.returncode}):\n{text}")

    def converged(self, since_ns: int, warmup: Warmup) -> bool:
        self.check()
        return all(r.converged(since_ns, warmup.hold_s, warmup.tolerance) for r in self.rates)

    def calm(self, since_ns: int) -> bool:
        self.check()
        return all(f.calm(since_ns, CALM_S) for f in self.frames)

    def targets_bps(self, since_ns: int) -> list[float | None]:
        return [r.mean_bps(since_ns) for r in self.rates]

    def warm_up(self, warmup: Warmup) -> Warm:
        """Wait until converged (after `min_s`), at most `max_s` from the start."""
        earliest = self.started_ns + int(warmup.min_s * 1e9)
        deadline = self.started_ns + int(warmup.max_s * 1e9)
        converged = wait_until(lambda: now_ns() >= earliest and self.converged(self.started_ns, warmup),
                               deadline)
        return Warm((now_ns() - self.started_ns) / 1e9, converged,
                    self.targets_bps(now_ns() - int(warmup.hold_s * 1e9)))

    def settled_low(self, warm: Warm, min_share: float) -> bool:
        """Whether a rate-adaptive flow's target after the warm-up stands below `min_share`
        of its fair share of the link (fixed-rate flows never do)."""
        return any(flow.mode != "fixed" and (target is None or target < min_share * flow.fair_bps)
                   for flow, target in zip(self.spec.flows, warm.rt_target_bps))

    def stop(self) -> None:
        for number in range(len(self.spec.flows)):
            self.procs.stop(self._name("send", number), timeout=10)
        for number in range(len(self.spec.flows)):
            # The receiver stops on the sender's bye; if every bye was lost, on a signal.
            self.procs.wait(self._name("recv", number), timeout=5)
        self.stopped_ns = now_ns()

    def record(self, events: GuestEvents) -> None:
        events.sessions.append(SessionEvent(index=self.index, started_ns=self.started_ns,
                                            stopped_ns=self.stopped_ns, flows=self.files))
