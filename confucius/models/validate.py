# SPDX-License-Identifier: MIT
"""Checks on model inputs: impossible values are refused with a message naming them."""

import math
from typing import Iterable


class ModelInputError(ValueError):
    """An input the models cannot work with (negative rate, F1 outside (0, 1], ...)."""


def unknown(what: str, name: str, known: Iterable[str], lead: str = "choose from",
            then: str = "") -> ModelInputError:
    """The error for a name that is none of `known`: it names them all."""
    return ModelInputError(f"unknown {what} {name!r}: {lead} {', '.join(known)}{then}")


def finite(name: str, value: float) -> float:
    value = float(value)
    if not math.isfinite(value):
        raise ModelInputError(f"{name} must be a finite number, got {value!r}")
    return value


def positive(name: str, value: float) -> float:
    value = finite(name, value)
    if value <= 0:
        raise ModelInputError(f"{name} must be positive, got {value:g}")
    return value


def non_negative(name: str, value: float) -> float:
    value = finite(name, value)
    if value < 0:
        raise ModelInputError(f"{name} must not be negative, got {value:g}")
    return value


def f1_score(name: str, value: float) -> float:
    """A classifier accuracy: F1 lies in (0, 1]."""
    value = finite(name, value)
    if not 0 < value <= 1:
        raise ModelInputError(f"{name} must lie in (0, 1], got {value:g}")
    return value


def flow_count(name: str, value) -> int:
    try:
        number = float(value)
    except (TypeError, ValueError):
        number = math.nan
    if isinstance(value, bool) or not number.is_integer() or number < 0:
        raise ModelInputError(f"{name} must be a whole number of flows >= 0, got {value!r}")
    return int(number)
