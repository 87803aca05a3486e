# SPDX-License-Identifier: MIT
"""Where the RT flow's stalls happened: while the page loaded or after its last byte, and,
under a scheduler that exposes its flows, how much of the late frames' delay the RT flow's
queue in the qdisc accounts for. What it does not account for waited in the sender (a
window-limited sender such as Copa holds its frames back when its share falls) or on the
path."""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass

from confucius import metrics

from .data import PageResult, frames_of_page, rt_view


@dataclass(frozen=True)
class LoadStall:
    """One load of the first RT flow."""
    during_s: float           # stall while the page loaded (frames captured before its last byte)
    after_s: float            # stall after its last byte, in the load's tail
    late_delay_ms: float      # the largest delay of a late frame that arrived, while the page loaded
    queue_wait_ms: float      # the RT flow's largest head-of-line wait in the qdisc then (NaN: no samples)

    @property
    def queue_share(self) -> float:
        """How much of the worst late frame's delay its queue in the qdisc could explain."""
        return self.queue_wait_ms / self.late_delay_ms if self.late_delay_ms > 0 else math.nan


def load_stall(db, result: PageResult) -> LoadStall:
    frames = frames_of_page(db, result, before_s=0.0)
    end = result.page_end_ns
    during, after = metrics.stall_split(frames, end)
    late = [f.delay_ms for f in frames if f.capture_ns < end and f.complete and f.delay_ms is not None
            and not metrics.on_time(f.complete, f.delay_ms)]
    waits = [q.sojourn_ms for q in rt_view(db, result, before_s=0.0).qdisc if q.time_ns < end]
    return LoadStall(during, after, max(late, default=math.nan), max(waits, default=math.nan))


@dataclass(frozen=True)
class StallRow:
    scheduler: str
    controller: str
    loads: int
    during_s: float           # mean stall per load while the page loaded
    after_s: float            # mean stall per load after the page's last byte
    loads_during: int         # loads that stalled while the page loaded
    loads_after: int
    queue_share: float        # median over the loads that stalled while the page loaded and have
                              # qdisc samples: LoadStall.queue_share (NaN without any)


def stall_rows(db, results: list[PageResult]) -> list[StallRow]:
    """One row per scheduler and controller, in the order the loads come."""
    groups: dict[tuple[str, str], list[LoadStall]] = {}
    for result in results:
        groups.setdefault((result.scheduler, result.controller), []).append(load_stall(db, result))
    rows = []
    for (scheduler, controller), loads in groups.items():
        shares = [s.queue_share for s in loads if s.during_s > 0 and not math.isnan(s.queue_share)]
        rows.append(StallRow(scheduler, controller, len(loads), statistics.fmean(s.during_s for s in loads),
                             statistics.fmean(s.after_s for s in loads), sum(s.during_s > 0 for s in loads),
                             sum(s.after_s > 0 for s in loads),
                             statistics.median(shares) if shares else math.nan))
    return rows
