# SPDX-License-Identifier: MIT
"""What a run measured, as every engine hands it to the database (`RunData`), and what
one run gives back to the process that stores it (`Measurement`).

Every time is on the run's clock in ns: the guest's CLOCK_MONOTONIC in the lab (rtflow's
clock), the simulator's clock in ns-3. The lab's guest folder is read into these records by
lab/run_folder.py, a simulated task by sim/store.py.

A measurement is *disturbed* when the RT sender could not run on time: its rate log has a
row every 50 ms, and a gap of more than DISTURBED_GAP_MS means the emulated machine did not
get the CPU (other work on the host) — frame delays then measure the host, not the
scheduler. Disturbed measurements are kept but marked invalid, and the matrix runs them again.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from confucius import rtflow
from confucius.web.client_report import PageLoad

DISTURBED_GAP_MS = 250.0


class ResultsError(ValueError):
    """A results folder that cannot be read, with what is missing or malformed."""


@dataclass
class RtFlowLog:
    session: int
    number: int
    label: str
    port: int
    frames: list[rtflow.Frame]
    rates: list[rtflow.RateSample]

    def max_gap_ms(self, start_ns: int, end_ns: int) -> float:
        """Longest time between consecutive rate-log rows inside [start_ns, end_ns]."""
        times = [r.time_ns for r in self.rates if start_ns <= r.time_ns <= end_ns]
        return max((b - a for a, b in zip(times, times[1:])), default=0) / 1e6


@dataclass
class Session:
    index: int
    started_ns: int
    stopped_ns: int
    flows: list[RtFlowLog]


@dataclass
class PageRecord:
    number: int
    key: str                 # the scenario's name for it (amazon, p0003, a file path)
    unit_key: str            # this page under this run's conditions (resume identity)
    page_id: str
    session: int
    started_ns: int          # when the runner started the client
    load_start_ns: int | None  # the client's own start (its first connection attempt)
    window_end_ns: int
    exit: int
    error: str | None
    load: PageLoad | None
    warmup_s: float | None
    converged: bool | None
    warmups: int | None      # RT flows warmed up before the load (a low one is replaced)
    calm: bool | None
    rt_target_bps: list[float | None]
    sender_max_gap_ms: float

    @property
    def valid(self) -> bool:
        return self.load is not None and self.sender_max_gap_ms <= DISTURBED_GAP_MS

    @property
    def invalid_reason(self) -> str | None:
        if self.load is None:
            return f"no report from web-client (exit {self.exit}): {self.error or ''}".strip()
        if self.sender_max_gap_ms > DISTURBED_GAP_MS:
            return f"disturbed: RT sender paused {self.sender_max_gap_ms:.0f} ms"
        return None

    @property
    def first_request_ns(self) -> int | None:
        requests = [o.request for o in self.load.objects if o.request is not None] if self.load else []
        if self.load_start_ns is None or not requests:
            return None
        return self.load_start_ns + round(min(requests) * 1e9)


@dataclass
class BulkFlow:
    number: int
    cca: str
    started_ns: int | None
    samples: list[tuple[int, float]]   # interval end (ns), bit/s
    bytes: int
    error: str | None
    rtts: list[tuple[int, float]] = field(default_factory=list)   # its sender's smoothed RTT: time (ns), ms


@dataclass
class FlentTest:
    """One Flent test of the run: what the guest reported of it (the lab contract's
    FlentEvent), its data file and summary (lab/flent_files.py's FlentSummary), or why there is none."""
    number: int
    event: Any
    data_file: Path | None
    summary: Any
    error: str | None
    plot: Path | None = None         # Flent's plot, drawn on the host (lab/runner.py)
    plot_error: str | None = None


@dataclass
class RunData:
    """What one run measured, whichever engine ran it: the RT sessions and their flows'
    logs, the page loads, the scheduler's samples, probes, bulk flows and Flent's tests."""
    directory: Path | None              # its results folder (None: the simulator keeps none)
    sessions: list[Session]
    pages: list[PageRecord]
    qdisc_samples: list[tuple[int, list[dict]]]
    qdisc_flows: list[tuple[int, list[dict]]]  # Confucius's flows (rtnl.flow_xstats), in time order
    probes: list[tuple[int, float | None]]     # send time (ns), RTT ms (None: lost)
    bulk: list[BulkFlow]
    measured: Any = None                       # runs without pages: the measured span (the lab contract's Measured)
    flent: list[FlentTest] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    # With more than one client host: each host's received bytes over time (ns, [host 1's, ...]).
    host_bytes: list[tuple[int, list[int]]] = field(default_factory=list)

    def rt_flows(self) -> list[RtFlowLog]:
        return [f for s in self.sessions for f in s.flows]

    @property
    def measured_gap_ms(self) -> float | None:
        if self.measured is None:
            return None
        return max((f.max_gap_ms(self.measured.from_ns, self.measured.to_ns) for f in self.rt_flows()),
                   default=0.0)


@dataclass
class Measurement:
    """What one task's run gave, for the database: its `runs` row, the run's data (None
    where nothing can be trusted) and the error (None if it went well)."""
    row: dict
    data: RunData | None
    error: str | None


@dataclass(frozen=True)
class HostSample:
    """The host's load average and CPU time (jiffies) at one moment."""
    load: tuple[float, float, float]
    steal: int
    total: int

    @classmethod
    def now(cls) -> "HostSample":
        # /proc/stat's first line: user nice system idle iowait irq softirq steal guest guest_nice;
        # guest time is already counted in user, so the total is the first eight.
        ticks = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:9]]
        return cls(os.getloadavg(), ticks[7], sum(ticks))


def host_load(before: HostSample, after: HostSample) -> dict:
    """What the host did during a run. The load average misses a host that is itself a VM
    starved by its hypervisor; `steal` is the share of CPU time taken from it meanwhile."""
    elapsed = after.total - before.total
    return {"before": list(before.load), "after": list(after.load),
            "steal": (after.steal - before.steal) / elapsed if elapsed > 0 else 0.0}


def read_samples(path: Path, key: str) -> list[tuple[int, list[dict]]]:
    """(time_ns, record[key]) of a sampler's JSONL file (qdisc.jsonl, flows.jsonl; the
    simulator writes the same), in time order (none if absent)."""
    if not path.is_file():
        return []
    samples = []
    for line in path.read_text().splitlines():
        try:
            record = json.loads(line)
        except ValueError:
            continue  # a sample cut short when the run ended
        samples.append((record["time_ns"], record[key]))
    return sorted(samples, key=lambda sample: sample[0])
