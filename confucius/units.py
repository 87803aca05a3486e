# SPDX-License-Identifier: MIT
"""Quantities as people write them: rates, times and sizes, with tc's units.

The suffixes follow tc(8) so that what works on the tc command line works here:
rates in bit/s (`bit`, `kbit`, `mbit`, `gbit`, `tbit`; `bps`, `kbps`, `mbps` are *bytes*
per second as in tc), times in seconds (`us`, `ms`, `s`, also `usec`, `msec`, `sec`), sizes
in bytes (`b`, `kb`, `mb`, `gb` with 1024 multiples, as in tc). A bare number takes the
default unit of the quantity (bit/s, seconds, bytes). Case is ignored.
"""

import re

_NUMBER = re.compile(r"^\s*([0-9]*\.?[0-9]+(?:[eE][-+]?[0-9]+)?)\s*([a-zA-Z/]*)\s*$")

_RATE_UNITS = {
    "": 1, "bit": 1, "kbit": 1e3, "mbit": 1e6, "gbit": 1e9, "tbit": 1e12,
    "bps": 8, "kbps": 8e3, "mbps": 8e6, "gbps": 8e9, "tbps": 8e12,
    "kibit": 1024, "mibit": 1024**2, "gibit": 1024**3,
}
_TIME_UNITS = {
    "": 1, "s": 1, "sec": 1, "secs": 1, "ms": 1e-3, "msec": 1e-3, "msecs": 1e-3,
    "us": 1e-6, "usec": 1e-6, "usecs": 1e-6, "ns": 1e-9, "nsec": 1e-9,
}
_SIZE_UNITS = {
    "": 1, "b": 1, "k": 1024, "kb": 1024, "m": 1024**2, "mb": 1024**2, "g": 1024**3,
    "gb": 1024**3, "kbit": 1024 / 8, "mbit": 1024**2 / 8, "gbit": 1024**3 / 8,
}


class UnitError(ValueError):
    """A quantity that cannot be read, with a message that says what was expected."""


def _parse(text, units: dict, what: str, example: str) -> float:
    if isinstance(text, (int, float)) and not isinstance(text, bool):
        value = float(text)
    else:
        match = _NUMBER.match(str(text))
        unit = match.group(2).lower() if match else None
        if unit is None or unit not in units:
            raise UnitError(f"cannot read {what} {text!r}: expected a number with one of the "
                            f"units {', '.join(u for u in units if u)} (e.g. {example})")
        value = float(match.group(1)) * units[unit]
    if value < 0:
        raise UnitError(f"{what} must not be negative: {text!r}")
    return value


def parse_rate(text) -> float:
    """A rate in bit/s: `parse_rate("20mbit") == 20e6`."""
    return _parse(text, _RATE_UNITS, "rate", "20mbit")


def parse_time(text) -> float:
    """A duration in seconds: `parse_time("40ms") == 0.04`."""
    return _parse(text, _TIME_UNITS, "time", "40ms")


def parse_size(text) -> float:
    """A size in bytes: `parse_size("32mb") == 32 * 2**20`."""
    return _parse(text, _SIZE_UNITS, "size", "15kb")


def format_rate(bps: float) -> str:
    """tc's way of printing a rate: the largest unit that keeps the number >= 1."""
    for unit, scale in (("Gbit", 1e9), ("Mbit", 1e6), ("Kbit", 1e3)):
        if bps >= scale:
            return f"{bps / scale:g}{unit}"
    return f"{bps:g}bit"


def format_time(seconds: float) -> str:
    if seconds >= 1:
        return f"{seconds:g}s"
    if seconds >= 1e-3:
        return f"{seconds * 1e3:g}ms"
    return f"{seconds * 1e6:g}us"
