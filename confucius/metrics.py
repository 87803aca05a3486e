# SPDX-License-Identifier: MIT
"""Every metric of the evaluation, each defined once, as a plain function of measured data.

The bottom of the package (docs/ARCHITECTURE.md): it imports nothing of the package and
nothing beyond Python's standard library, so that the lab's guest inside the VM, the lab's
database, the report, the Web corpus and the models all call the same definitions.

The papers (../shared/seeds): 000 is Confucius (arXiv 2310.18030), 002 its later version, 003
Per-CCA Queueing. A "frame" is anything with the fields of rtflow.Frame (capture_ns,
delay_ms, complete, size_bytes): frame delay is capture to the arrival of the frame's last
packet (tools/rtflow).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Iterable, Mapping, Sequence

# Paper 000 §7.1 "Metrics" (and paper 002 §V-A): a frame later than 190 ms is a stall,
# ITU-T G.1070's recommended delay for video calls (paper 000 §2.2, footnote 3).
STALL_THRESHOLD_S = 0.190
# Paper 000 §7.2, Fig. 11(b): "the threshold for good user experience" of a page load.
LONG_PLT_S = 2.0
# Paper 000 §2.3: a connection is ACTIVE while it received bytes within the last 10 ms.
ACTIVE_WINDOW_S = 0.010


# --------------------------------------------------------------------------- percentiles

def nearest_rank(values: Sequence[float], percent: float) -> float:
    """The `percent` percentile by the nearest-rank method (the smallest value with at least
    `percent` % of the values at or below it): always one of the values, never an
    interpolation between two. NaN without values.

    The papers plot frame-delay distributions (paper 000 §7.2, Fig. 12(c), 12(d)) without
    naming a percentile method; nearest rank keeps a tail figure a delay that a frame had."""
    if not 0 <= percent <= 100:
        raise ValueError(f"percentile must be within [0, 100], got {percent}")
    ordered = sorted(values)
    if not ordered:
        return math.nan
    return ordered[max(1, math.ceil(percent / 100 * len(ordered))) - 1]


def mean(values: Iterable[float | None]) -> float:
    """The mean of the values that are numbers (None and NaN left out); NaN without any."""
    finite = [v for v in values if v is not None and not math.isnan(v)]
    return sum(finite) / len(finite) if finite else math.nan


def share(flags: Iterable[bool]) -> float:
    """The share of true flags (e.g. the loads with a stall); NaN without flags."""
    flags = list(flags)
    return sum(flags) / len(flags) if flags else math.nan


def per_thousand(flags: Iterable[bool]) -> float:
    """`share` scaled to 1000 loads: the form of paper 000 Fig. 11 ("the number of runs,
    out of 1000 websites"), for samples of any size; NaN without flags."""
    return 1000 * share(flags)


# --------------------------------------------------------------------------- RT frames

def on_time(complete: bool, delay_ms: float | None, threshold_s: float = STALL_THRESHOLD_S) -> bool:
    """A frame arrived whole within the stall threshold (paper 000 §7.1). A frame that never
    arrived whole is not on time: the viewer sees a frozen picture either way."""
    return complete and delay_ms is not None and delay_ms <= threshold_s * 1e3


def in_window(frames: Iterable, start_ns: int, end_ns: int) -> list:
    """The frames captured in [start_ns, end_ns)."""
    return [f for f in frames if start_ns <= f.capture_ns < end_ns]


def stall_duration(frames: Iterable, threshold_s: float = STALL_THRESHOLD_S) -> float:
    """Seconds of video during which frame delay exceeded `threshold_s`: paper 000 §7.1
    "Stall duration for video frames is the duration for which the delay of the video frame
    is greater than 190 ms" (paper 002 §V-A alike).

    Each frame stands for the time until the next frame's capture (the last one for the
    median frame interval, the upper middle one of an even count). A frame counts as stalled
    when it is not `on_time`. 0 without frames."""
    ordered = sorted(frames, key=lambda f: f.capture_ns)
    if not ordered:
        return 0.0
    gaps = [b.capture_ns - a.capture_ns for a, b in zip(ordered, ordered[1:])]
    last_gap = sorted(gaps)[len(gaps) // 2] if gaps else 0
    spans = gaps + [last_gap]
    return sum(span for frame, span in zip(ordered, spans)
               if not on_time(frame.complete, frame.delay_ms, threshold_s)) / 1e9


def stall_split(frames: Iterable, at_ns: int, threshold_s: float = STALL_THRESHOLD_S) -> tuple[float, float]:
    """`stall_duration` of the frames captured before `at_ns` and of those captured from it
    on: a load's stall while its page loaded and after its last byte. The last frame before
    the split stands for the median frame interval, so the two parts may differ from the
    whole by a fraction of a frame."""
    frames = list(frames)
    return (stall_duration([f for f in frames if f.capture_ns < at_ns], threshold_s),
            stall_duration([f for f in frames if f.capture_ns >= at_ns], threshold_s))


def stalled(stall_s: float, longer_than_s: float = 0.0) -> bool:
    """A load during which the RT flow stalled for longer than `longer_than_s` seconds
    (`stall_duration`). Paper 000 Fig. 11(a) counts the websites "that lead to non-zero
    stalls" (the default), while its text counts those whose stall is not "negligible or
    shorter than 190 ms"; Fig. 12(a) is read at 500 ms."""
    return stall_s > longer_than_s


def delivered_delays(frames: Iterable) -> list[float]:
    """The delays (ms) of the frames that arrived whole: the distribution of paper 000
    Fig. 12(d). Frames that never did are counted apart (`lost_share`)."""
    return [f.delay_ms for f in frames if f.complete and f.delay_ms is not None]


def max_delay_ms(frames: Sequence) -> float:
    """The largest delay of a frame that arrived whole (paper 000 §7.2, Fig. 12(c)); NaN
    without one."""
    delays = delivered_delays(frames)
    return max(delays) if delays else math.nan


def delay_percentile(frames: Iterable, percent: float) -> float:
    """The `percent` percentile of frame delay in ms (`nearest_rank`), counting frames that
    never arrived whole as infinitely late. NaN without frames."""
    return nearest_rank([math.inf if f.delay_ms is None or not f.complete else f.delay_ms for f in frames],
                        percent)


def lost_share(frames: Sequence) -> float:
    """The share of frames that never arrived whole; NaN without frames."""
    return sum(not f.complete for f in frames) / len(frames) if frames else math.nan


def goodput_bps(frames: Iterable, start_ns: int, end_ns: int) -> float:
    """RT throughput: the payload of the frames captured in [start_ns, end_ns) that arrived
    whole, per second of the window (bit/s); NaN for an empty window."""
    if end_ns <= start_ns:
        return math.nan
    delivered = sum(f.size_bytes or 0 for f in in_window(frames, start_ns, end_ns) if f.complete)
    return delivered * 8 / ((end_ns - start_ns) / 1e9)


def sender_backlog_ms(samples: Iterable[tuple[float, float | None]]) -> float:
    """The most media the RT sender held back (pacer or application queue), in ms at its
    target rate, over (target bit/s, queued bytes) samples; NaN without a usable one.
    A paced UDP sender (GCC, pacing at 2.5x its target) holds next to nothing unless it did
    not get the CPU: its frame delays then measure the host, not the scheduler."""
    held = [queued * 8 / target * 1e3 for target, queued in samples if queued is not None and target > 0]
    return max(held) if held else math.nan


# --------------------------------------------------------------------------- Web pages

def plt_s(first_request_ns: int | None, last_byte_ns: int | None) -> float | None:
    """Page load time: paper 000 §7.1 "the time till the last HTTP request in a web page is
    completed", here from the page's first request to its last byte (s); None when the page
    sent no request or did not load."""
    if first_request_ns is None or last_byte_ns is None:
        return None
    return (last_byte_ns - first_request_ns) / 1e9


def long_plt(plt: float | None) -> bool:
    """A page load longer than LONG_PLT_S, or one that never finished (paper 000 §7.2,
    Fig. 11(b): "websites suffering from a long PLT of longer than 2 seconds")."""
    return plt is None or plt > LONG_PLT_S


def no_plt_penalty(plt: float, baseline: float) -> bool:
    """A page that loads no slower than under the baseline: paper 000 Fig. 12(b)'s "60 %
    of websites have no PLT degradation"."""
    return plt - baseline <= 0


def degradation(plt: Mapping, baseline: Mapping) -> tuple[float, float, int]:
    """PLT degradation, paper 000 §7.1: "the increase of delay compared to FQ", over the
    pages both measured (same keys, e.g. page, controller and repetition): (mean
    difference in s, total difference over the baseline's total, pages paired)."""
    keys = [k for k in plt if k in baseline and plt[k] is not None and baseline[k] is not None]
    if not keys:
        return math.nan, math.nan, 0
    diffs = [plt[k] - baseline[k] for k in keys]
    base = sum(baseline[k] for k in keys)
    return sum(diffs) / len(diffs), sum(diffs) / base if base else math.nan, len(keys)


def ratio_of_sums(pairs: Sequence[tuple[float, float]]) -> float:
    """Σa / Σb over paired (a, b): two schedulers' totals over the same pages (NaN when Σb
    is 0), the form of paper 000's "reduces the stall duration by 60%" (§1)."""
    denominator = sum(b for _, b in pairs)
    return sum(a for a, _ in pairs) / denominator if denominator else math.nan


def _merged(intervals: Iterable[tuple[float, float]]) -> list[list[float]]:
    merged: list[list[float]] = []
    for start, end in sorted(intervals):
        if merged and start <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], end)
        else:
            merged.append([start, end])
    return merged


def peak_active(transfers: Mapping[object, Iterable[tuple[float, float]]],
                window: float = ACTIVE_WINDOW_S) -> int:
    """Concurrent ACTIVE flows, paper 000 §2.3 (Fig. 3(b)): the peak number of connections
    that received bytes within the last `window` seconds.

    `transfers` maps a connection to the (start, end) times during which it received bytes.
    A connection counts once however many of its intervals fall in the window."""
    edges = []
    for intervals in transfers.values():
        for start, end in _merged((s, e + window) for s, e in intervals):
            edges.append((start, 1))
            edges.append((end, -1))
    # At equal times the end comes first: touching intervals never count twice.
    edges.sort(key=lambda edge: (edge[0], edge[1]))
    active = peak = 0
    for _, step in edges:
        active += step
        peak = max(peak, active)
    return peak


# --------------------------------------------------------------------------- fairness

def jfi(throughputs: Sequence[float]) -> float:
    """Jain's fairness index (Σx)² / (n Σx²) of per-flow throughputs (paper 000 §7.4,
    Fig. 13(c), Appx. Fig. 25): 1 means equal shares, 1/n one flow takes everything. NaN
    values are left out; NaN without values or when all are 0."""
    values = [x for x in throughputs if not math.isnan(x)]
    if not values:
        return math.nan
    square_sum = sum(x * x for x in values)
    if square_sum == 0:
        return math.nan
    return sum(values) ** 2 / (len(values) * square_sum)


def throughput_by_cca(flow_bps: Sequence[float], flow_ccas: Sequence[str],
                      ccas: Sequence[str]) -> list[float]:
    """Thr_i, the total throughput of CCA i's flows (paper 003 Eq. 15, measured), for each
    of `ccas` in order, from each flow's throughput and CCA."""
    unknown = set(flow_ccas) - set(ccas)
    if unknown:
        raise ValueError(f"flows of CCAs not listed: {', '.join(sorted(unknown))}")
    return [sum(bps for bps, c in zip(flow_bps, flow_ccas) if c == cca) for cca in ccas]


def normalised_throughputs(throughputs: Sequence[float], counts: Sequence[float]) -> list[float]:
    """avgThr_i / fairShare per CCA, the ratio inside paper 003 Eq. 17: avgThr_i = Thr_i / N_i
    (the mean throughput of CCA i's flows), fairShare the mean of avgThr_i over the CCAs
    that have flows; NaN for a CCA without flows (and for all when none has any)."""
    if len(throughputs) != len(counts):
        raise ValueError(f"{len(throughputs)} throughputs for {len(counts)} flow counts")
    average = [thr / n if n > 0 else math.nan for thr, n in zip(throughputs, counts)]
    fair_share = mean(average)
    return [a / fair_share for a in average]


def min_thr(throughputs: Sequence[float], counts: Sequence[float]) -> float:
    """MinThr = min_i avgThr_i / fairShare, paper 003 §III-A Eq. 17: the share of its fair
    share that the most starved CCA gets (0 starvation, 1 full fairness); NaN when no CCA
    has flows."""
    shares = [s for s in normalised_throughputs(throughputs, counts) if not math.isnan(s)]
    return min(shares) if shares else math.nan


# --------------------------------------------------------------------------- a page load

@dataclass(frozen=True)
class LoadMetrics:
    """A page load's RT metrics over its window (all RT flows of the session together)."""
    stall_s: float
    max_delay_ms: float
    p99_delay_ms: float
    lost_share: float
    rt_bps: float
    jfi: float
    delays_ms: list[float]


def load_jfi(connections: Iterable[tuple[int, int, int]], per_flow: Sequence[Sequence],
             first_request_ns: int | None, plt: float | None) -> float:
    """`jfi` of the page's connections' throughputs while active — (bytes, opened_ns,
    last_byte_ns) — and of the RT flows' over the load (first request to last byte): a
    fair scheduler gives flows that are active together equal rates. NaN when the page
    sent no request."""
    if first_request_ns is None:
        return math.nan
    rates = [b * 8 / ((end - start) / 1e9) for b, start, end in connections if b and end > start]
    end = first_request_ns + round((plt or 0) * 1e9)
    if end > first_request_ns:
        rates += [goodput_bps(f, first_request_ns, end) for f in per_flow]
    return jfi(rates)


def load_metrics(per_flow: Sequence[Sequence], start_ns: int, end_ns: int,
                 connections: Iterable[tuple[int, int, int]] = (), first_request_ns: int | None = None,
                 plt: float | None = None) -> LoadMetrics:
    """A page load's metrics, from each RT flow's frames over the window [start_ns, end_ns)
    (the load's start to the end of its tail) and the page's connections (`load_jfi`):
    stall summed over the flows, max and p99 (`nearest_rank`) delay of every frame that
    arrived whole, the share lost, the RT flows' summed goodput. The lab stores these with
    each page (experiment/db_runs.py) and the report computes them again from the stored frames
    (report/data.py), both here."""
    flows = [in_window(f, start_ns, end_ns) for f in per_flow]
    every = [f for flow in flows for f in flow]
    delays = delivered_delays(every)
    return LoadMetrics(stall_s=sum(stall_duration(f) for f in flows),
                       max_delay_ms=max(delays) if delays else math.nan,
                       p99_delay_ms=nearest_rank(delays, 99), lost_share=lost_share(every),
                       rt_bps=sum(goodput_bps(f, start_ns, end_ns) for f in flows),
                       jfi=load_jfi(connections, per_flow, first_request_ns, plt), delays_ms=delays)


# --------------------------------------------------------------------------- step response

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


def _first_decrease_s(rates: Sequence, at_ns: int, end_ns: int) -> float:
    before = [r for r in rates if r.time_ns <= at_ns]
    if not before:
        return math.nan
    floor = STEP_DECREASE * before[-1].target_bps
    return next(((r.time_ns - at_ns) / 1e9 for r in rates
                 if at_ns < r.time_ns < end_ns and r.target_bps < floor), math.nan)


def _settled_s(frames: Sequence, base_ms: float, at_ns: int, end_ns: int) -> float:
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


def step_response(frames: Sequence, rates: Sequence, at_ns: int, end_ns: int) -> StepResponse:
    """The response to a fall of capacity at `at_ns`, until the next change at `end_ns`
    (issue 12 "Know the controllers"; the papers measure the stall of such a fall, paper 000
    §4.1 Fig. 7(a)): the time to the sender's first rate decrease (its target, rtflow's rate
    log, below STEP_DECREASE of its value at the step), the time until the frames' queueing
    delay (frame delay above the least delay of the STEP_BASE_NS before the step) is back
    under STEP_SETTLED_MS after its peak and stays there for STEP_SETTLED_FOR_NS with no
    frame lost, and the largest frame delay."""
    base = delivered_delays(in_window(frames, at_ns - STEP_BASE_NS, at_ns))
    base_ms = min(base) if base else math.nan
    return StepResponse(first_decrease_s=_first_decrease_s(rates, at_ns, end_ns),
                        settled_s=_settled_s(frames, base_ms, at_ns, end_ns) if base else math.nan,
                        peak_delay_ms=max_delay_ms(in_window(frames, at_ns, end_ns)))
