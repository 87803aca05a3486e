# SPDX-License-Identifier: MIT
"""What every tool of the guest shares: the clock, namespaces, the background programs,
and `Runner`, the one interface each tool's runner follows."""

from __future__ import annotations

import shutil
import signal
import subprocess
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from ..contract import GuestEvents, RunSpec

POLL_S = 0.25


def now_ns() -> int:
    return time.monotonic_ns()


def in_ns(namespace: str, argv: list) -> list[str]:
    return ["ip", "netns", "exec", namespace, *map(str, argv)]


def log(message: str) -> None:
    print(f"[guest {time.monotonic():9.3f}] {message}", flush=True)


def wait_until(condition, deadline_ns: int) -> bool:
    """Poll `condition` until it holds (True) or the deadline passes (False)."""
    while True:
        if condition():
            return True
        if now_ns() >= deadline_ns:
            return False
        time.sleep(POLL_S)


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


@dataclass
class Context:
    """What every runner of one run works with."""
    spec: RunSpec
    scratch: Path        # in the guest's memory; copied to the results folder at the end
    procs: Processes


class Runner(Protocol):
    """One tool of the run. `start` sets it going; `stop` asks it to end (programs that
    write their results when stopped may take a while); `record` waits until it has ended
    and notes what the timeline needs in the run's events. The run stops every runner
    before it records any, so slow writers end side by side."""

    def start(self) -> None: ...

    def stop(self) -> None: ...

    def record(self, events: GuestEvents) -> None: ...
