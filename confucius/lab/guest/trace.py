# SPDX-License-Identifier: MIT
"""A bandwidth trace played at the bottleneck."""

from __future__ import annotations

import threading
from pathlib import Path

from .. import topology
from ..contract import TraceSpec
from .base import now_ns


class TracePlayer:
    """The bottleneck's rate from a bandwidth trace (from `offset_s` on, times `scale`),
    played from a chosen moment, over and over, until stopped; when it is not playing the
    link runs at the trace's first rate. Episodes start it with each page load, so every
    scheduler's load meets the same bandwidth pattern whatever its warm-up took."""

    def __init__(self, trace: TraceSpec, scratch: Path, shaping: str):
        self.shaping = shaping
        points = [(t, bps) for t, bps in topology.read_trace(Path(trace.path)) if t >= trace.offset_s]
        self.path = scratch / "trace.log"
        self.path.write_text("".join(f"{t - points[0][0]:.3f} {bps / 1e6:.6f}\n" for t, bps in points))
        self.scale = trace.scale
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
