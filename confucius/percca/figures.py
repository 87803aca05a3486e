# SPDX-License-Identifier: MIT
"""One per-CCA run's raw results (the guest's percca.json) turned into the figures the
database keeps: each flow's throughput over the measured window, per-CCA totals and
averages, MinThr and JFI (confucius.metrics), and each queue's occupancy and drops."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from confucius import metrics


class ResultsError(RuntimeError):
    """The guest's results are missing or do not cover the measured window."""


@dataclass(frozen=True)
class Figures:
    flow_bps: list[float]               # per flow, over [warm-up end, last sample]
    cca_bps: list[float]                # Thr_i per CCA, in the scenario's order
    normalised: list[float]             # avgThr_i / fairShare
    min_thr: float
    jfi: float                          # over every flow
    total_bps: float
    window_s: float
    queue_mean: dict[int, float]        # mean packets per queue over the window
    queue_max: dict[int, int]
    queue_drops: dict[int, int]
    occupancy: list[tuple[int, int, int]]   # (time_ns, queue, packets) in the window


def _window(samples: list, start_ns: int) -> tuple[list, list]:
    inside = [s for s in samples if s[0] >= start_ns]
    if len(inside) < 2:
        raise ResultsError(f"the receiver has {len(inside)} samples after the warm-up: the run "
                           "ended early or the warm-up is longer than the run")
    return inside[0], inside[-1]


def _drops(qdiscs: list[dict]) -> dict[int, int]:
    """Drops per queue where tc counts them per queue: the shared FIFO (handle 10:) and the
    per-queue pfifos under DRR (101:, 102: ...). Confucius counts its drops for all its
    classes together: none per queue."""
    found: dict[int, int] = {}
    for q in qdiscs:
        major = int(q.get("handle", "0:").rstrip(":") or "0", 16)
        if q["kind"] == "pfifo":
            found[major - 0x101 if major >= 0x101 else 0] = q.get("drops", 0)
    return found


def figures(raw: dict, ccas: list[str], flow_ccas: list[str], queues: int, warmup_s: float) -> Figures:
    """The guest's raw results over the window from the warm-up's end to the last receiver sample."""
    start_ns = raw["sender_started_ns"] + round(warmup_s * 1e9)
    first, last = _window(raw["receiver"]["samples"], start_ns)
    seconds = (last[0] - first[0]) / 1e9
    flow_bps = [(b - a) * 8 / seconds for a, b in zip(first[1], last[1])]
    occupancy = [(t, int(q), n) for t, found in raw["occupancy"] if first[0] <= t <= last[0]
                 for q, n in found.items()]
    return summarise(flow_bps, seconds, ccas, flow_ccas, queues, occupancy, _drops(raw["qdiscs"]))


def summarise(flow_bps: list[float], seconds: float, ccas: list[str], flow_ccas: list[str], queues: int,
              occupancy: list[tuple[int, int, int]], drops: dict[int, int]) -> Figures:
    """The figures of one run from each flow's throughput over the window, the queues'
    occupancy samples (time_ns, queue, packets) in it and their drops: every engine's."""
    cca_bps = metrics.throughput_by_cca(flow_bps, flow_ccas, ccas)
    counts = [flow_ccas.count(c) for c in ccas]
    per_queue = {q: [n for t, qq, n in occupancy if qq == q] for q in range(queues)}
    samples = sorted({t for t, _, _ in occupancy})
    mean = {q: (sum(v) / len(samples) if samples else 0.0) for q, v in per_queue.items()}
    return Figures(
        flow_bps=flow_bps, cca_bps=cca_bps,
        normalised=metrics.normalised_throughputs(cca_bps, counts),
        min_thr=metrics.min_thr(cca_bps, counts), jfi=metrics.jfi(flow_bps),
        total_bps=sum(flow_bps), window_s=seconds, queue_mean=mean,
        queue_max={q: max(v, default=0) for q, v in per_queue.items()},
        queue_drops=drops, occupancy=occupancy)


def read(results_dir: Path) -> dict:
    path = Path(results_dir) / "percca.json"
    try:
        return json.loads(path.read_text())
    except (OSError, json.JSONDecodeError) as err:
        raise ResultsError(f"no readable results in {path}: {err}") from None
