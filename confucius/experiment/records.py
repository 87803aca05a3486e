# SPDX-License-Identifier: MIT
"""Typed records that read themselves from JSON, checked field by field, and the parts of a
scenario that travel as they are into what an engine is told (the lab's RunSpec).

`Record.from_dict` refuses a missing or unknown key, a value of the wrong type and (for a
`Document`, a file of its own) another format, with an error that names the field by its
path (`rt.flows[1].port`).

Standard library only: the lab's guest reads its spec through these inside the VM.
"""

from __future__ import annotations

import dataclasses
import json
import types
import typing
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, Literal, Union

# The Flent tests a scenario can run (lab/guest/flent.py); lab/flent_files.py summarises each.
FLENT_TESTS = ("rrul", "rrul_be", "tcp_nup", "tcp_ndown", "voip", "voip-rrul", "rtt_fair", "rtt_fair_var")
# The tests that load one server per RTT (Flent's -H each), and how many they take.
FLENT_RTT_FAIR_SERVERS = {"rtt_fair": (4, 4), "rtt_fair_var": (2, 15)}


class ContractError(ValueError):
    """A record (a spec, an events file) that does not follow its contract; names the field."""


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


# --------------------------------------------------------------------------- a scenario's parts

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


# Client hosts the lab's topology can put behind the bottleneck (lab/topology.CLIENT_HOSTS).
MAX_CLIENTS = 2


@dataclass(frozen=True)
class Bulk(Record):
    """A bulk TCP flow beside the RT flow (iperf3), as the scenario gives it."""
    cca: str
    start_s: float
    duration_s: float | None        # None: until the run ends
    host: int = 1                   # the client host that downloads it ([link] clients)


@dataclass(frozen=True)
class Probes(Record):
    """RTT probes (irtt), as the scenario gives them."""
    interval_s: float


@dataclass(frozen=True)
class Flent(Record):
    """Flent's tests, as the scenario gives them: each runs for `length_s` (Flent's -l;
    its loads start after Flent's own 5 s delay), sampled every `step_s` (-s);
    `upload_streams` is tcp_nup's number of TCP uploads; `server_rtts_s` the round trips
    of rtt_fair's servers, one server address each (topology.add_rtt_servers)."""
    tests: list[Literal[FLENT_TESTS]]
    length_s: int
    step_s: float
    upload_streams: int
    server_rtts_s: list[float] = dataclasses.field(default_factory=list)
