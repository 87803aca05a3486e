# SPDX-License-Identifier: MIT
"""The contract between the host and the lab VM: what the host asks the guest to run
(`RunSpec`, spec.json) and the timeline the guest gives back (`GuestEvents`, events.json).

Both are records (confucius/experiment/records.py) serialised as JSON with a format string
that carries the version. Each side validates what it reads: `from_dict` refuses a missing
or unknown key, a value of the wrong type and another format, with an error that names the
field by its path (`rt.flows[1].port`). As in Flent's result sets, what a result was measured under travels
with it: the results folder holds the spec beside the guest's files, and the `runs` row
stores the same spec.

Standard library only (and the records it is made of): the guest imports this module inside
the VM. It is the only module of the lab that host code and the guest (lab/guest/) share.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar, Literal

# The scenario's parts that the spec carries as they are, what every record is made of, and
# the error a record that breaks the contract raises (the guest reads it from here).
from confucius.experiment.records import Bulk, ContractError, Document, Flent, Probes, Record, Warmup  # noqa: F401

SPEC_FORMAT = "confucius-lab-run/1"
# The RT flow's modes (rtflow's --mode; scenario.py reads controllers into them).
RT_MODES = ("gcc", "pion-gcc", "copa", "tcp", "fixed")
RtMode = Literal[RT_MODES]
# How a run spends its time (guest/schedule.py): page loads after warmed-up RT flows, one
# RT flow throughout, an RT flow for a fixed duration, or Flent's tests one after another.
RUN_MODES = ("episodes", "continuous", "timed", "flent")
RunMode = Literal[RUN_MODES]
EVENTS_FORMAT = "confucius-lab-events/1"
# Flent's program, in the virtualenv that both sides run (the guest runs the host's root).
FLENT = Path(sys.executable).parent / "flent"


# --------------------------------------------------------------------------- the guest's timing

@dataclass(frozen=True)
class GuestTiming:
    """How long the guest waits between its steps, and at most for its tools (guest seconds).
    The host's VM timeouts (runner.vm_timeout, flent_files.allowance_per_test_s) and the
    simulator's episodes (sim/plan.py, sim/store.py, which copy the lab's schedule) are made
    of the same figures, so they live here rather than in the guest's modules."""
    # Between episodes: every qdisc forgets a flow that sent nothing for this long (Confucius
    # after one reweight interval, 250 ms by default).
    idle_s: float = 1.0
    # After a tail, before the RT flow stops: frames still in flight must not be cut off.
    drain_s: float = 0.5
    # A load's tail ends once the RT flow's frames were on time for this long (guest/rt.py).
    calm_s: float = 2.0
    # Confucius's flows are sampled this often around each page load, from this long before it.
    flow_fast_s: float = 0.02
    flow_lead_s: float = 2.0
    # Longest wait for irtt or iperf3 to write its results when stopped.
    write_results_s: float = 120.0
    # Longest a Flent test may overrun its own length (Flent's delays, start and data file).
    flent_overrun_s: float = 120.0

    def flent_test_budget_s(self, flent: Flent) -> float:
        """The longest one Flent test may take in guest time: its length, Flent's delay
        before and after the loads, and its start and data file."""
        return flent.length_s + self.flent_overrun_s


GUEST_TIMING = GuestTiming()
# The line before each sample of `ss -tin` a guest writes (the server's sockets beside a
# Flent test, a bulk flow's sender): the sample's time after it.
SS_TIME_MARK = "Time: "


# --------------------------------------------------------------------------- the run's spec

@dataclass(frozen=True)
class TopologySpec(Record):
    rtt: str                        # netem's delay, as tc writes it ("40ms")
    kind: str                       # the tc kind of the scheduler under test
    shaping: str                    # topology.SHAPINGS
    clients: int = 1                # client hosts behind the bottleneck (topology.MAX_CLIENTS)
    nat: bool = False               # the router masquerades towards the server


@dataclass(frozen=True)
class TraceSpec(Record):
    path: str
    scale: float
    offset_s: float


@dataclass(frozen=True)
class RtFlowSpec(Record):
    mode: RtMode
    cca: str | None
    rate: str | None                # fixed rate, as rtflow reads it ("2000000bit")
    label: str
    port: int
    fair_bps: float                 # its share of the link (runner.fair_share_bps)


@dataclass(frozen=True)
class RtSpec(Record):
    flows: list[RtFlowSpec]
    fps: int
    start_rate: str
    min_rate: str
    max_rate: str
    retransmit_window: str
    cpu: Literal["realtime", "shared"]


@dataclass(frozen=True)
class WebSpec(Record):
    cca: str
    max_per_domain: int
    timeout_s: float
    interval_s: float
    settle_s: float


@dataclass(frozen=True)
class PageSpec(Record):
    id: str
    file: str
    key: str                        # the scenario's name for it
    unit_key: str                   # this page under this run's conditions
    phase_s: float = 0.0            # the wait between the RT flow's warm-up and this load
    http2: list[str] = field(default_factory=list)   # its domains loaded over HTTP/2 (the rest HTTP/1.1)


@dataclass(frozen=True)
class Binaries(Record):
    web_client: str
    web_server: str


@dataclass(frozen=True)
class RunSpec(Document):
    """Everything the guest needs for one run. `tc_commands` is the bottleneck's record
    (runner.bottleneck_commands), installed as it is and stored with the run."""
    format: str
    scenario: str
    cell_key: str
    mode: RunMode
    topology: TopologySpec
    tc_commands: list[str]
    trace: TraceSpec | None
    rt: RtSpec
    warmup: Warmup
    web: WebSpec | None
    pages: list[PageSpec]
    hosts: str | None
    addresses: list[str]
    bulk: list[Bulk]
    probes: Probes | None
    duration_s: float | None
    stats_interval_s: float
    binaries: Binaries
    flent: Flent | None = None

    FORMAT: ClassVar[str] = SPEC_FORMAT


# --------------------------------------------------------------------------- what comes back

@dataclass
class SessionFlow(Record):
    flow: int
    label: str
    port: int
    frames: str                     # rtflow's logs, relative to the results folder
    rates: str


@dataclass
class SessionEvent(Record):
    """One start of the RT flow(s)."""
    index: int
    started_ns: int
    stopped_ns: int
    flows: list[SessionFlow]


@dataclass
class PageEvent(Record):
    """One page load and the RT flow's state around it."""
    number: int
    id: str
    started_ns: int
    ended_ns: int
    exit: int
    stderr: str
    report: str                     # web-client's report, relative to the results folder
    session: int | None = None
    warmup_s: float | None = None   # None: a continuous run's later loads
    converged: bool | None = None
    warmups: int | None = None
    rt_target_bps: list[float | None] = field(default_factory=list)
    trace_start_ns: int | None = None
    window_end_ns: int | None = None  # the end of the load's window (its tail, or the next load)
    calm: bool | None = None


@dataclass
class Measured(Record):
    """A run without pages: the span measured after the warm-up."""
    from_ns: int
    to_ns: int
    warmup_s: float
    converged: bool
    rt_target_bps: list[float | None]


@dataclass
class FlowSamples(Record):
    samples: int
    written: int
    cpu_ms_per_sample: float


@dataclass
class FlentEvent(Record):
    """One Flent test: its data file (relative to the results folder; None if Flent wrote
    none) and Flent's own output."""
    test: str
    started_ns: int
    ended_ns: int
    exit: int
    data_file: str | None
    log: str


@dataclass
class GuestEvents(Document):
    """The guest's timeline (CLOCK_MONOTONIC ns, rtflow's clock). A guest that stopped
    part-way writes what it got to; the rest keeps its defaults."""
    format: str
    clock_offset_ns: int            # wall clock - monotonic clock
    mode: RunMode
    tc_commands: list[str] | None = None   # what the guest ran at the bottleneck
    tc_show: str | None = None
    t0_ns: int | None = None
    bulk_started_ns: dict[str, int] = field(default_factory=dict)
    pages: list[PageEvent] = field(default_factory=list)
    measured: Measured | None = None
    sessions: list[SessionEvent] = field(default_factory=list)
    end_ns: int | None = None
    stats_samples: int | None = None
    flow_samples: FlowSamples | None = None
    flent: list[FlentEvent] = field(default_factory=list)

    FORMAT: ClassVar[str] = EVENTS_FORMAT
