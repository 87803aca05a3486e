# SPDX-License-Identifier: MIT
"""The evaluation's metrics (ARCHITECTURE.md "Metrics"), as plain functions of measured data.

- frame delay: capture to the arrival of the frame's last packet (rtflow's frame log);
- stall duration: the time during which frame delay exceeds 190 ms, each frame standing for
  the time until the next capture; a frame that never arrived whole is stalled (rtflow.py);
- max and p99 frame delay: over the frames that arrived whole (nearest rank); frames that
  never did are counted apart, as the share of frames lost;
- RT throughput: payload bytes of the frames that arrived whole, over the window;
- PLT: first request to the last byte of the page; degradation = PLT under a scheduler −
  PLT under FQ for the same page (same controller and repetition);
- JFI: Jain's index (Σx)² / (n Σx²) of per-flow throughputs;
- sender backlog: the most media the RT sender held back (pacer or application queue),
  in ms at its target rate. A paced UDP sender (GCC, pacing at 2.5x its target) holds
  next to nothing unless it did not get the CPU; its frame delays then measure the host;
- step response (issue 12 "Know the controllers"), after the link's capacity falls: the
  time to the sender's first rate decrease (its target below 95 % of its value at the
  step), the time until the frames' queueing delay (frame delay above the least delay of
  the 2 s before the step) is back under 50 ms after its peak and stays there for 1 s
  with no frame lost, and the largest frame delay.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Iterable, Sequence

import numpy as np
from scipy.stats import binomtest

from confucius import rtflow

STALL_THRESHOLD_S = rtflow.STALL_THRESHOLD_S
LONG_PLT_S = 2.0  # seed 000 §7.2: "the threshold for good user experience"


def in_window(frames: Iterable[rtflow.Frame], start_ns: int, end_ns: int) -> list[rtflow.Frame]:
    """The frames captured in [start_ns, end_ns)."""
    return [f for f in frames if start_ns <= f.capture_ns < end_ns]


def stall_seconds(frames: Sequence[rtflow.Frame]) -> float:
    return rtflow.stall_duration(frames)


def delivered_delays(frames: Iterable[rtflow.Frame]) -> list[float]:
    return [f.delay_ms for f in frames if f.complete and f.delay_ms is not None]


def nearest_rank(values: Sequence[float], percent: float) -> float:
    """The `percent` percentile by the nearest-rank method; NaN without values."""
    if not 0 <= percent <= 100:
        raise ValueError(f"percentile must be within [0, 100], got {percent}")
    ordered = sorted(values)
    if not ordered:
        return math.nan
    return ordered[max(1, math.ceil(percent / 100 * len(ordered))) - 1]


def max_delay_ms(frames: Sequence[rtflow.Frame]) -> float:
    delays = delivered_delays(frames)
    return max(delays) if delays else math.nan


def lost_share(frames: Sequence[rtflow.Frame]) -> float:
    return sum(not f.complete for f in frames) / len(frames) if frames else math.nan


def goodput_bps(frames: Iterable[rtflow.Frame], start_ns: int, end_ns: int) -> float:
    """Payload of the frames captured in the window that arrived whole, per second."""
    if end_ns <= start_ns:
        return math.nan
    delivered = sum(f.size_bytes or 0 for f in in_window(frames, start_ns, end_ns) if f.complete)
    return delivered * 8 / ((end_ns - start_ns) / 1e9)


def sender_backlog_ms(samples: Iterable[tuple[float, float | None]]) -> float:
    """Largest backlog over (target bit/s, queued bytes) samples, in ms at the target."""
    held = [queued * 8 / target * 1e3 for target, queued in samples if queued is not None and target > 0]
    return max(held) if held else math.nan


def jfi(throughputs: Sequence[float]) -> float:
    """Jain's fairness index; 1 means equal shares, 1/n one flow takes everything."""
    values = [x for x in throughputs if not math.isnan(x)]
    if not values:
        return math.nan
    square_sum = sum(x * x for x in values)
    if square_sum == 0:
        return math.nan
    return sum(values) ** 2 / (len(values) * square_sum)


def mean(values: Iterable[float]) -> float:
    finite = [v for v in values if v is not None and not math.isnan(v)]
    return sum(finite) / len(finite) if finite else math.nan


def share(flags: Iterable[bool]) -> float:
    flags = list(flags)
    return sum(flags) / len(flags) if flags else math.nan


def degradation(plt_s: dict, baseline_s: dict) -> tuple[float, float, int]:
    """PLT degradation against the baseline over the pages both measured (same keys):
    (mean difference in s, total difference over the baseline's total, pages paired)."""
    keys = [k for k in plt_s if k in baseline_s and plt_s[k] is not None and baseline_s[k] is not None]
    if not keys:
        return math.nan, math.nan, 0
    diffs = [plt_s[k] - baseline_s[k] for k in keys]
    base = sum(baseline_s[k] for k in keys)
    return sum(diffs) / len(diffs), sum(diffs) / base if base else math.nan, len(keys)


def ratio_of_sums(pairs: Sequence[tuple[float, float]]) -> float:
    """Σa / Σb over paired (a, b): two schedulers' totals over the same pages (NaN when Σb is 0)."""
    denominator = sum(b for _, b in pairs)
    return sum(a for a, _ in pairs) / denominator if denominator else math.nan


def ratio_interval(pairs: Sequence[tuple[float, float]], confidence: float = 0.95,
                   resamples: int = 10_000, seed: int = 0) -> tuple[float, float]:
    """Percentile bootstrap interval of Σa / Σb over paired (a, b), resampling the pairs
    (pages): how far two schedulers' ratio could move with another sample of pages.
    Seeded, so that a report is reproducible."""
    if len(pairs) < 2:
        return math.nan, math.nan
    values = np.asarray(pairs, dtype=float)
    picks = np.random.default_rng(seed).integers(0, len(values), size=(resamples, len(values)))
    numerator, denominator = values[picks, 0].sum(axis=1), values[picks, 1].sum(axis=1)
    ratios = numerator[denominator > 0] / denominator[denominator > 0]
    tail = (1 - confidence) / 2 * 100
    low, high = np.percentile(ratios, [tail, 100 - tail])
    return float(low), float(high)


def share_interval(flags: Sequence[bool], confidence: float = 0.95) -> tuple[float, float]:
    """Wilson score interval of the share of true flags."""
    if not flags:
        return math.nan, math.nan
    interval = binomtest(sum(flags), len(flags)).proportion_ci(confidence, method="wilson")
    return float(interval.low), float(interval.high)


@dataclass(frozen=True)
class LoadMetrics:
    """A page load's RT metrics over its window (all RT flows of the session together)."""
    stall_s: float
    max_delay_ms: float
    p99_delay_ms: float
    lost_share: float
    rt_bps: float
    delays_ms: list[float]


def load_metrics(per_flow: Sequence[Sequence[rtflow.Frame]], start_ns: int, end_ns: int) -> LoadMetrics:
    """The RT metrics of the window [start_ns, end_ns), from each RT flow's frames."""
    flows = [in_window(f, start_ns, end_ns) for f in per_flow]
    every = [f for flow in flows for f in flow]
    delays = delivered_delays(every)
    return LoadMetrics(stall_s=sum(stall_seconds(f) for f in flows),
                       max_delay_ms=max(delays) if delays else math.nan,
                       p99_delay_ms=nearest_rank(delays, 99), lost_share=lost_share(every),
                       rt_bps=sum(goodput_bps(f, start_ns, end_ns) for f in flows), delays_ms=delays)


def load_jfi(connections: Iterable[tuple[int, int, int]], per_flow: Sequence[Sequence[rtflow.Frame]],
             first_request_ns: int, plt_s: float | None) -> float:
    """JFI of the page's connections' throughputs while active — (bytes, opened_ns,
    last_byte_ns) — and of the RT flows' over the load: a fair scheduler gives flows
    that are active together equal rates."""
    rates = [b * 8 / ((end - start) / 1e9) for b, start, end in connections if b and end > start]
    end = first_request_ns + round((plt_s or 0) * 1e9)
    if end > first_request_ns:
        rates += [goodput_bps(f, first_request_ns, end) for f in per_flow]
    return jfi(rates)


STEP_DECREASE = 0.95       # a target below this share of its value at the step is a decrease
STEP_SETTLED_MS = 50.0     # queueing delay "back under 50 ms" (issue 12)
STEP_SETTLED_FOR_NS = 1_000_000_000
STEP_BASE_NS = 2_000_000_000


@dataclass(frozen=True)
class StepResponse:
    """How an RT sender answered a fall of capacity at `at_ns`; times in s from the step,
    NaN when it did not happen before the next change of capacity."""
    first_decrease_s: float
    settled_s: float
    peak_delay_ms: float


def _first_decrease_s(rates: Sequence[rtflow.RateSample], at_ns: int, end_ns: int) -> float:
    before = [r for r in rates if r.time_ns <= at_ns]
    if not before:
        return math.nan
    floor = STEP_DECREASE * before[-1].target_bps
    return next(((r.time_ns - at_ns) / 1e9 for r in rates
                 if at_ns < r.time_ns < end_ns and r.target_bps < floor), math.nan)


def _settled_s(frames: Sequence[rtflow.Frame], base_ms: float, at_ns: int, end_ns: int) -> float:
    """The first capture time, from the largest delay after the step on, after which every
    frame for STEP_SETTLED_FOR_NS arrived whole and within STEP_SETTLED_MS of the base
    delay (a queue that builds late is not settled before it has)."""
    after = in_window(frames, at_ns, end_ns)
    delays = [f.delay_ms if f.complete else -math.inf for f in after]
    if delays and max(delays) - base_ms >= STEP_SETTLED_MS:
        after = after[delays.index(max(delays)):]
    good = [f.complete and f.delay_ms - base_ms < STEP_SETTLED_MS for f in after]
    run_start = None
    for frame, ok in zip(after, good):
        if not ok:
            run_start = None
            continue
        if run_start is None:
            run_start = frame.capture_ns
        if frame.capture_ns - run_start >= STEP_SETTLED_FOR_NS:
            return (run_start - at_ns) / 1e9
    return math.nan


def step_response(frames: Sequence[rtflow.Frame], rates: Sequence[rtflow.RateSample],
                  at_ns: int, end_ns: int) -> StepResponse:
    """The response to a fall of capacity at `at_ns`, until the next change at `end_ns`."""
    base = delivered_delays(in_window(frames, at_ns - STEP_BASE_NS, at_ns))
    base_ms = min(base) if base else math.nan
    return StepResponse(first_decrease_s=_first_decrease_s(rates, at_ns, end_ns),
                        settled_s=_settled_s(frames, base_ms, at_ns, end_ns) if base else math.nan,
                        peak_delay_ms=max_delay_ms(in_window(frames, at_ns, end_ns)))
