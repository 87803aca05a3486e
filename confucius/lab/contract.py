# SPDX-License-Identifier: MIT
"""The contract between the host and the lab VM: what the host asks the guest to run
(`RunSpec`, spec.json) and the timeline the guest gives back (`GuestEvents`, events.json).

Both are dataclasses serialised as JSON with a format string that carries the version.
Each side validates what it reads: `from_dict` refuses a missing or unknown key, a value of
the wrong type and another format, with an error that names the field by its path
(`rt.flows[1].port`). As in Flent's result sets, what a result was measured under travels
with it: the results folder holds the spec beside the guest's files, and the `runs` row
stores the same spec.

Standard library only: the guest imports this module inside the VM.
"""

from __future__ import annotations

import dataclasses
import json
import types
import typing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Literal, Union

SPEC_FORMAT = "confucius-lab-run/1"
# The RT flow's modes (rtflow's --mode; scenario.py reads controllers into them).
RT_MODES = ("gcc", "pion-gcc", "copa", "tcp", "fixed")
RtMode = Literal[RT_MODES]
# How a run spends its time (guest/schedule.py): page loads after warmed-up RT flows, one
# RT flow throughout, an RT flow for a fixed duration, or Flent's tests one after another.
RUN_MODES = ("episodes", "continuous", "timed", "flent")
RunMode = Literal[RUN_MODES]
# The Flent tests a scenario can run (guest/flent.py); lab/flent.py summarises each.
FLENT_TESTS = ("rrul", "rrul_be", "tcp_nup", "voip")
EVENTS_FORMAT = "confucius-lab-events/1"


class ContractError(ValueError):
    """A spec or events file that does not follow the contract; names the field."""


# --------------------------------------------------------------------------- validation

def _type_name(hint) -> str:
    return getattr(hint, "__name__", None) or str(hint).replace("typing.", "")


def _decode(hint, value, where: str):
    """`value` checked against the type `hint`; nested records become dataclasses."""
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if hint is Any:
        return value
    if origin in (Union, types.UnionType):
        if value is None and type(None) in args:
            return None
        (inner,) = [a for a in args if a is not type(None)]
        return _decode(inner, value, where)
    if origin is Literal:
        if value not in args:
            raise ContractError(f"{where}: {value!r} is not one of {', '.join(map(repr, args))}")
        return value
    if origin is list:
        _expect(isinstance(value, list), value, "a list", where)
        return [_decode(args[0], item, f"{where}[{n}]") for n, item in enumerate(value)]
    if origin is dict:
        _expect(isinstance(value, dict) and all(isinstance(k, str) for k in value), value, "an object", where)
        return {k: _decode(args[1], v, f"{where}.{k}") for k, v in value.items()}
    if dataclasses.is_dataclass(hint):
        return hint.from_dict(value, where)
    _expect(_is_scalar(hint, value), value, f"a {_type_name(hint)}", where)
    return value


def _is_scalar(hint, value) -> bool:
    if hint is float:  # JSON does not tell 3 from 3.0
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if hint is int:
        return isinstance(value, int) and not isinstance(value, bool)
    return isinstance(value, hint)


def _expect(ok: bool, value, what: str, where: str) -> None:
    if not ok:
        raise ContractError(f"{where}: expected {what}, got {type(value).__name__} {value!r:.60}")


class Record:
    """A dataclass that reads itself from JSON values, checked field by field."""

    @classmethod
    def from_dict(cls, data, where: str = ""):
        _expect(isinstance(data, dict), data, "an object", where or cls.__name__)
        fields = {f.name: f for f in dataclasses.fields(cls)}
        unknown = sorted(set(data) - set(fields))
        if unknown:
            raise ContractError(f"{where + ': ' if where else ''}unknown key {', '.join(unknown)}")
        hints = typing.get_type_hints(cls)
        values = {}
        for key, spec in fields.items():
            path = f"{where}.{key}" if where else key
            if key not in data:
                if spec.default is dataclasses.MISSING and spec.default_factory is dataclasses.MISSING:
                    raise ContractError(f"{path}: missing key")
                continue
            values[key] = _decode(hints[key], data[key], path)
        return cls(**values)

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)


class Document(Record):
    """A record that is a file of its own, with its format (the contract's version)."""
    FORMAT: ClassVar[str]

    @classmethod
    def parse(cls, data, source: str = ""):
        source = source or cls.__name__
        if not isinstance(data, dict) or data.get("format") != cls.FORMAT:
            found = data.get("format") if isinstance(data, dict) else None
            raise ContractError(f"{source}: format: expected {cls.FORMAT!r}, got {found!r}")
        try:
            return cls.from_dict(data)
        except ContractError as err:
            raise ContractError(f"{source}: {err}") from None

    @classmethod
    def read(cls, path: Path):
        try:
            data = json.loads(path.read_text())
        except ValueError as err:
            raise ContractError(f"{path}: not JSON: {err}") from None
        return cls.parse(data, str(path))

    def write(self, path: Path) -> None:
        """Write the file, after the same check its reader makes."""
        data = self.to_dict()
        type(self).parse(data, str(path))
        path.write_text(json.dumps(data, indent=1) + "\n")


# --------------------------------------------------------------------------- the run's spec

@dataclass(frozen=True)
class TopologySpec(Record):
    rtt: str                        # netem's delay, as tc writes it ("40ms")
    kind: str                       # the tc kind of the scheduler under test
    shaping: str                    # topology.SHAPINGS


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
class Warmup(Record):
    """When the RT flow counts as converged: it has run `min_s`, and its mean target rate
    over the last `hold_s` is within ±`tolerance` of the mean over the `hold_s` before
    (guest/rt.py); at `max_s` the load starts anyway. A rate-adaptive flow that converged
    below `min_share` of its fair share of the link is warmed up afresh, at most `retries`
    times (a warm-up that settles low is a lab defect, not data). Each load then waits a
    further `PageSpec.phase_s`, drawn for it from [0, `phase_s`). The scenario's and the
    spec's (scenario.py reads it)."""
    min_s: float
    max_s: float
    hold_s: float
    tolerance: float
    min_share: float
    retries: int
    phase_s: float = 0.0


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


@dataclass(frozen=True)
class Bulk(Record):
    """A bulk TCP flow beside the RT flow (iperf3), as the scenario gives it."""
    cca: str
    start_s: float
    duration_s: float | None        # None: until the run ends


@dataclass(frozen=True)
class Probes(Record):
    """RTT probes (irtt), as the scenario gives them."""
    interval_s: float


@dataclass(frozen=True)
class Flent(Record):
    """Flent's tests, as the scenario gives them: each runs for `length_s` (Flent's -l;
    its loads start after Flent's own 5 s delay), sampled every `step_s` (-s);
    `upload_streams` is tcp_nup's number of TCP uploads."""
    tests: list[Literal[FLENT_TESTS]]
    length_s: int
    step_s: float
    upload_streams: int


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
