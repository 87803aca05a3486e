# SPDX-License-Identifier: MIT
"""The per-flow sampler: Confucius's flows at the bottleneck over netlink (rtnl.py)."""

from __future__ import annotations

import collections
import json
import threading
import time
from pathlib import Path

from .. import rtnl, topology
from ..contract import GUEST_TIMING, FlowSamples, GuestEvents
from .base import log, now_ns

FLOW_FAST_S, FLOW_LEAD_S = GUEST_TIMING.flow_fast_s, GUEST_TIMING.flow_lead_s


class FlowSampler(threading.Thread):
    """Confucius's flows at the bottleneck (its classes 1:8000+bucket), one class dump per
    sample over one netlink socket, into flows.jsonl: every FLOW_FAST_S from the time given
    to `arm()` on, at `interval_s` otherwise. Armed, it keeps the last FLOW_LEAD_S of fast samples in
    memory and writes them only if `record_load()` follows (a page load starts), so every load is
    seen from FLOW_LEAD_S before it without keeping whole warm-ups at 50 samples a second;
    `relax()` (the load's tail ended) goes back to the slow pace. Lines are in time order
    except the lead, which is written when the load starts.

    A Runner: `start` samples only a Confucius bottleneck (`enabled`); otherwise arm,
    record_load and relax change nothing that is written."""

    def __init__(self, path: Path, interval_s: float, dev: str = topology.BOTTLENECK[1], enabled: bool = True):
        super().__init__(daemon=True)
        self.path, self.interval_s, self.dev, self.enabled = path, interval_s, dev, enabled
        self.halt = threading.Event()
        self.recording = False
        self.armed_from_ns: int | None = None
        self.lead: collections.deque[str] = collections.deque(maxlen=round(FLOW_LEAD_S / FLOW_FAST_S))
        self.samples = self.written = self.cpu_ns = self.last_written = 0

    def start(self) -> None:
        if self.enabled:
            super().start()

    def arm(self, from_ns: int) -> None:
        """Sample fast from `from_ns` on (FLOW_LEAD_S before a load can start at the earliest)."""
        self.armed_from_ns = from_ns - int(FLOW_LEAD_S * 1e9)

    def record_load(self) -> None:
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

    def stop(self) -> None:
        if self.is_alive():
            self.halt.set()
            self.join(timeout=5)

    def statistics(self) -> FlowSamples:
        """How much was sampled and what a sample cost this thread in CPU time."""
        return FlowSamples(samples=self.samples, written=self.written,
                           cpu_ms_per_sample=self.cpu_ns / 1e6 / max(self.samples, 1))

    def record(self, events: GuestEvents) -> None:
        if self.enabled:
            events.flow_samples = self.statistics()
            log(f"flow samples: {events.flow_samples}")
