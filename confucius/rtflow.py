# SPDX-License-Identifier: MIT
"""The real-time video flow tool (tools/rtflow) from Python: where its binary is, the
command lines that start a sender and a receiver, and its logs read back as records.

    recv = recv_command("0.0.0.0:5000", frame_log="frames.csv")
    send = send_command("10.0.2.1:5000", mode="gcc", duration="30s", rate_log="rate.csv")
    ...                                   # run them (in their network namespaces)
    frames = read_frames("frames.csv")
    print(metrics.stall_duration(frames))   # confucius.metrics: every metric of the logs

All timestamps in the logs are CLOCK_MONOTONIC nanoseconds (Python's time.monotonic_ns()).
The log formats are described in tools/rtflow/README.md.
"""

from __future__ import annotations

import csv
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

REPO = Path(__file__).resolve().parents[1]
BINARY = REPO / "build" / "cargo" / "release" / "rtflow"
MODES = ("gcc", "pion-gcc", "copa", "fixed", "tcp")

FRAME_COLUMNS = ("frame_id", "capture_ns", "key", "size_bytes", "packets", "packets_received",
                 "first_arrival_ns", "last_arrival_ns", "delay_ms", "complete")
RATE_COLUMNS = ("time_ns", "target_bps", "pacing_bps", "sent_bps", "acked_bps", "srtt_ms", "loss",
                "in_flight_bytes", "queue_bytes", "cwnd_bytes")


class RtflowError(RuntimeError):
    """The binary is missing or a log cannot be read."""


def binary() -> Path:
    """The built rtflow binary (`make tools` builds it)."""
    if not os.access(BINARY, os.X_OK):
        raise RtflowError(f"rtflow is not built: {BINARY} is missing; run `make tools`")
    return BINARY


def _flags(options: dict) -> list[str]:
    args = []
    for name, value in options.items():
        if value is None:
            continue
        args += [f"--{name.replace('_', '-')}", str(value)]
    return args


def send_command(to: str, *, mode: str = "gcc", **options) -> list[str]:
    """argv of a sender: `send_command("10.0.2.1:5000", mode="tcp", cca="bbr",
    duration="30s", rate_log="rate.csv")`. Options are rtflow's flags with `_` for `-`;
    `None` leaves a flag out. The binary checks the values and says what is wrong."""
    if mode not in MODES:
        raise ValueError(f"unknown rtflow mode {mode!r}: expected one of {', '.join(MODES)}")
    return [str(binary()), "send", "--to", to, "--mode", mode, *_flags(options)]


def recv_command(listen: str, **options) -> list[str]:
    """argv of a receiver: `recv_command("0.0.0.0:5000", frame_log="frames.csv")`."""
    return [str(binary()), "recv", "--listen", listen, *_flags(options)]


@dataclass(frozen=True)
class Frame:
    """One row of the receiver's frame log. Times in ns (CLOCK_MONOTONIC)."""
    frame_id: int
    capture_ns: int
    key: bool | None
    size_bytes: int | None
    packets: int | None
    packets_received: int | None
    first_arrival_ns: int | None
    last_arrival_ns: int | None
    delay_ms: float | None
    complete: bool


@dataclass(frozen=True)
class RateSample:
    """One row of the sender's rate log. Rates in bit/s, `loss` a fraction."""
    time_ns: int
    target_bps: float
    pacing_bps: float
    sent_bps: float | None
    acked_bps: float | None
    srtt_ms: float | None
    loss: float | None
    in_flight_bytes: int | None
    queue_bytes: int | None
    cwnd_bytes: int | None


def _optional(kind):
    return lambda text: kind(text) if text != "" else None


_FRAME_TYPES = (int, int, _optional(lambda t: t == "1"), _optional(int), _optional(int), _optional(int),
                _optional(int), _optional(int), _optional(float), lambda t: t == "1")
_RATE_TYPES = (int, float, float, _optional(float), _optional(float), _optional(float), _optional(float),
               _optional(int), _optional(int), _optional(int))


def _read(path: os.PathLike, columns: Sequence[str], types: Sequence, record):
    path = Path(path)
    try:
        with path.open(newline="") as handle:
            rows = csv.reader(handle)
            header = next(rows, None)
            if header is None or tuple(header) != columns:
                raise RtflowError(f"{path}: not an rtflow log with columns {','.join(columns)}")
            return [record(*(kind(field) for kind, field in zip(types, row, strict=True)))
                    for row in rows]
    except (ValueError, OSError) as err:
        raise RtflowError(f"cannot read rtflow log {path}: {err}") from err


def read_frames(path: os.PathLike) -> list[Frame]:
    """The receiver's frame log, in frame order."""
    frames = _read(path, FRAME_COLUMNS, _FRAME_TYPES, Frame)
    return sorted(frames, key=lambda f: f.frame_id)


def read_rates(path: os.PathLike) -> list[RateSample]:
    """The sender's rate log, in time order."""
    return _read(path, RATE_COLUMNS, _RATE_TYPES, RateSample)

