# SPDX-License-Identifier: MIT
"""The real-time video flow tool (tools/rtflow) from Python: where its binary is, the
command lines that start a sender and a receiver, and its logs read back as records.

    recv = recv_command("0.0.0.0:5000", frame_log="frames.csv")
    send = send_command("10.0.2.1:5000", mode="gcc", duration="30s", rate_log="rate.csv")
    ...                                   # run them (in their network namespaces)
    frames = read_frames("frames.csv")
    print(stall_duration(frames), delay_percentile(frames, 95))

All timestamps in the logs are CLOCK_MONOTONIC nanoseconds (Python's time.monotonic_ns()).
The log formats are described in tools/rtflow/README.md.
"""

from __future__ import annotations

import csv
import math
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Sequence

REPO = Path(__file__).resolve().parents[1]
BINARY = REPO / "build" / "cargo" / "release" / "rtflow"
MODES = ("gcc", "copa", "fixed", "tcp")
# ITU-T G.1070's threshold, used by the seeds for a stall.
STALL_THRESHOLD_S = 0.190

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


def _stalled(frame: Frame, threshold_s: float) -> bool:
    return not frame.complete or frame.delay_ms is None or frame.delay_ms > threshold_s * 1e3


def stall_duration(frames: Iterable[Frame], threshold_s: float = STALL_THRESHOLD_S) -> float:
    """Seconds of video during which frame delay exceeded `threshold_s`.

    Each frame stands for the time until the next frame's capture (the last one for the
    median frame interval). A frame counts as stalled when its delay exceeds the threshold
    or when it never arrived whole: the viewer sees a frozen picture either way."""
    ordered = sorted(frames, key=lambda f: f.capture_ns)
    if not ordered:
        return 0.0
    gaps = [b.capture_ns - a.capture_ns for a, b in zip(ordered, ordered[1:])]
    last_gap = sorted(gaps)[len(gaps) // 2] if gaps else 0
    spans = gaps + [last_gap]
    return sum(span for frame, span in zip(ordered, spans) if _stalled(frame, threshold_s)) / 1e9


def delay_percentile(frames: Iterable[Frame], percent: float) -> float:
    """The `percent` percentile of frame delay in ms, counting frames that never arrived
    whole as infinitely late (nearest-rank method). NaN without frames."""
    delays = sorted(math.inf if f.delay_ms is None or not f.complete else f.delay_ms for f in frames)
    if not delays:
        return math.nan
    if not 0 <= percent <= 100:
        raise ValueError(f"percentile must be within [0, 100], got {percent}")
    rank = max(1, math.ceil(percent / 100 * len(delays)))
    return delays[rank - 1]
