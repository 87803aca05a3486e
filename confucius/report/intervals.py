# SPDX-License-Identifier: MIT
"""How sure the report's figures are: confidence intervals over the pages measured.

Statistics over the metrics (confucius/metrics.py), not metrics themselves: they say how
far a figure could move with another sample of pages.
"""

from __future__ import annotations

import math
from typing import Sequence

import numpy as np

from confucius import metrics


def ratio_interval(pairs: Sequence[tuple[float, float]], confidence: float = 0.95,
                   resamples: int = 10_000, seed: int = 0) -> tuple[float, float]:
    """Percentile bootstrap interval of Σa / Σb (metrics.ratio_of_sums) over paired (a, b),
    resampling the pairs (pages): how far two schedulers' ratio could move with another
    sample of pages. Seeded, and of the pairs in sorted order, so that a report is
    reproducible from the same pages whatever order a database holds them in (a merge
    of kept sittings numbers them otherwise)."""
    if len(pairs) < 2:
        return math.nan, math.nan
    values = np.asarray(sorted(pairs), dtype=float)
    picks = np.random.default_rng(seed).integers(0, len(values), size=(resamples, len(values)))
    numerator, denominator = values[picks, 0].sum(axis=1), values[picks, 1].sum(axis=1)
    ratios = numerator[denominator > 0] / denominator[denominator > 0]
    tail = (1 - confidence) / 2 * 100
    low, high = np.percentile(ratios, [tail, 100 - tail])
    return float(low), float(high)


def reduction(pairs: Sequence[tuple[float, float]]) -> tuple[float, float, float]:
    """1 − Σmine/Σtheirs over paired (mine, theirs), with its interval: paper 000's
    "reduces the stall duration by 60 %"."""
    low, high = ratio_interval(pairs)
    return 1 - metrics.ratio_of_sums(pairs), 1 - high, 1 - low


def change(pairs: Sequence[tuple[float, float]]) -> tuple[float, float, float]:
    """Σmine/Σtheirs − 1 over paired (mine, theirs), with its interval: a PLT "against fq"
    (NaN throughout without pairs)."""
    low, high = ratio_interval(pairs)
    return metrics.ratio_of_sums(pairs) - 1, low - 1, high - 1


def share_interval(flags: Sequence[bool], confidence: float = 0.95) -> tuple[float, float]:
    """Wilson score interval of the share of true flags (metrics.share)."""
    if not flags:
        return math.nan, math.nan
    from scipy.stats import binomtest  # scipy.stats takes seconds to import: only when a report needs it

    interval = binomtest(sum(flags), len(flags)).proportion_ci(confidence, method="wilson")
    return float(interval.low), float(interval.high)
