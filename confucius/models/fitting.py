# SPDX-License-Identifier: MIT
"""Fitting the per-CCA models' parameters from measured throughputs, as paper 003 §II-E and
§III-G do, so that the lab's own runs can replace the paper's Mininet values.

- Training aggressiveness (Eq. 6): in a shared buffer with the same number of flows per CCA,
  g_i = (per-flow throughput of CCA i) / (mean over CCAs of the per-flow throughputs).
- Relative aggressiveness (§II-E): for each pair, the log of the per-flow throughput ratio
  against the proportion x_i of CCA i's flows, fitted by least squares to
  ln g_ij = ln w + m·x_i.

Input files are CSV with a header: `cca,thr` for a shared-buffer run, and
`cca_i,cca_j,x_i,thr_i,thr_j` for pairwise runs (throughputs as numbers or with tc rate units
such as `12mbit`; only their ratios matter).
"""

import csv
import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..units import UnitError, parse_rate
from .aggressiveness import AggressivenessParams
from .validate import ModelInputError, finite


@dataclass(frozen=True)
class RelativeFit:
    i: str
    j: str
    w: float
    m: float
    r_squared: float    # of the linear fit in log space
    samples: int


def training_aggressiveness(per_flow_throughput: dict) -> dict:
    """g_i (Eq. 6) from per-flow average throughputs measured with equal flow counts."""
    if len(per_flow_throughput) < 2:
        raise ModelInputError("need throughputs of at least two CCAs")
    values = {c.lower(): _positive_rate(c, v) for c, v in per_flow_throughput.items()}
    mean = sum(values.values()) / len(values)
    return {c: v / mean for c, v in values.items()}


def relative_aggressiveness(x_i, ratio) -> tuple:
    """(w, m, R²) of g_ij(x) = w·e^(m·x), fitted to ln(ratio) by least squares."""
    x = np.array([finite("x_i", v) for v in x_i])
    ratio = np.array([finite("throughput ratio", v) for v in ratio])
    if np.any((x < 0) | (x > 1)):
        raise ModelInputError("x_i is a proportion of flows and must lie in [0, 1]")
    if np.any(ratio <= 0):
        raise ModelInputError("throughput ratios must be positive (a starved CCA has no "
                              "finite log-ratio; leave that sample out)")
    if len(np.unique(x)) < 2:
        raise ModelInputError("need samples at two or more different proportions x_i to fit "
                              "how aggressiveness changes with x_i")
    y = np.log(ratio)
    m, log_w = np.polyfit(x, y, 1)
    residual = y - (log_w + m * x)
    spread = np.sum((y - y.mean()) ** 2)
    r2 = 1.0 - np.sum(residual ** 2) / spread if spread > 0 else 1.0
    return math.exp(log_w), float(m), float(r2)


def fit_pairs(rows) -> list:
    """RelativeFit per unordered pair, from rows (cca_i, cca_j, x_i, thr_i, thr_j). Rows that
    name a pair in the other order are turned around (x_j = 1 − x_i in a two-CCA buffer)."""
    samples = {}
    for cca_i, cca_j, x_i, thr_i, thr_j in rows:
        i, j = cca_i.lower(), cca_j.lower()
        if i == j:
            raise ModelInputError(f"a pairwise sample needs two different CCAs, got {i} twice")
        ratio = _positive_rate(i, thr_i) / _positive_rate(j, thr_j)
        x = finite("x_i", x_i)
        key = (i, j) if (j, i) not in samples else (j, i)
        if key != (i, j):
            x, ratio = 1 - x, 1 / ratio
        samples.setdefault(key, []).append((x, ratio))
    fits = []
    for (i, j), points in samples.items():
        xs, ratios = zip(*points)
        w, m, r2 = relative_aggressiveness(xs, ratios)
        fits.append(RelativeFit(i, j, w, m, r2, len(points)))
    return fits


def params_from_fits(g: dict, fits: list, base: AggressivenessParams | None = None
                     ) -> AggressivenessParams:
    """Parameters from fitted values; anything not measured is taken from `base`."""
    measured = [*g, *(c for f in fits for c in (f.i, f.j))]
    ccas = tuple(dict.fromkeys([*(base.ccas if base else ()), *measured]))
    own = AggressivenessParams(ccas, g, {(f.i, f.j): (f.w, f.m) for f in fits})
    return own.merged_over(base) if base is not None else own


def read_shared_csv(path: Path) -> dict:
    """`cca,thr` rows -> per-flow throughput per CCA (repeated CCAs are averaged)."""
    rows = _read_csv(path, ("cca", "thr"))
    values = {}
    for row in rows:
        values.setdefault(row["cca"].strip().lower(), []).append(_rate(row["thr"], path))
    return {c: sum(v) / len(v) for c, v in values.items()}


def read_pairs_csv(path: Path) -> list:
    """`cca_i,cca_j,x_i,thr_i,thr_j` rows -> tuples for `fit_pairs`."""
    rows = _read_csv(path, ("cca_i", "cca_j", "x_i", "thr_i", "thr_j"))
    out = []
    for row in rows:
        try:
            x = float(row["x_i"])
        except ValueError:
            raise ModelInputError(f"{path}: x_i must be a number, got {row['x_i']!r}")
        out.append((row["cca_i"].strip(), row["cca_j"].strip(), x,
                    _rate(row["thr_i"], path), _rate(row["thr_j"], path)))
    return out


def _read_csv(path: Path, columns: tuple) -> list:
    try:
        with open(path, newline="") as f:
            reader = csv.DictReader(f)
            missing = [c for c in columns if c not in (reader.fieldnames or [])]
            if missing:
                raise ModelInputError(f"{path}: missing column(s) {', '.join(missing)}; "
                                      f"expected a header {','.join(columns)}")
            rows = list(reader)
    except OSError as err:
        raise ModelInputError(f"cannot read {path}: {err.strerror}")
    if not rows:
        raise ModelInputError(f"{path} has no data rows")
    return rows


def _rate(text: str, path: Path) -> float:
    try:
        return parse_rate((text or "").strip())
    except UnitError as err:
        raise ModelInputError(f"{path}: {err}")


def _positive_rate(cca: str, value: float) -> float:
    value = finite(f"throughput of {cca}", value)
    if value <= 0:
        raise ModelInputError(f"throughput of {cca} must be positive, got {value:g}")
    return value
