# SPDX-License-Identifier: MIT
"""The step-response metrics and the falls of capacity of a looped trace, worked out by hand."""

import math

import pytest

from confucius import metrics, rtflow
from confucius.report import steps

MS = 1_000_000
S = 1000 * MS


def frame(capture_ms: float, delay_ms: float | None) -> rtflow.Frame:
    capture = round(capture_ms * MS)
    complete = delay_ms is not None
    return rtflow.Frame(0, capture, False, 1000, 1, 1 if complete else 0, None,
                        capture + round(delay_ms * MS) if complete else None, delay_ms, complete)


def rate(time_ms: float, target_mbps: float) -> rtflow.RateSample:
    return rtflow.RateSample(round(time_ms * MS), target_mbps * 1e6, target_mbps * 2.5e6,
                             None, None, None, None, None, None, None)


def test_step_response_by_hand():
    # Frames every 20 ms from t = 0; base delay 30 ms before the step at 2 s; after it the
    # delay climbs to 230 ms at 2.5 s, a frame is lost at 2.6 s, then 60 ms until 3.0 s and
    # 70 ms (40 ms of queueing: settled) from 3.0 s on. The target falls below 95 % at 2.3 s.
    frames = []
    for i in range(0, 300):
        t = i * 20.0
        if t < 2000:
            d = 30.0
        elif t < 2500:
            d = 30.0 + (t - 2000) * 0.4
        elif t == 2600:
            d = None
        elif t < 3000:
            d = 100.0
        else:
            d = 70.0
        frames.append(frame(t, d))
    rates = [rate(t, 10.0) for t in range(0, 2300, 100)] + [rate(2300, 9.4), rate(2400, 8.0)]
    r = metrics.step_response(frames, rates, 2 * S, 6 * S)
    assert r.first_decrease_s == pytest.approx(0.3)
    assert r.settled_s == pytest.approx(1.0)
    assert r.peak_delay_ms == pytest.approx(30.0 + 480 * 0.4)


def test_a_sender_that_never_follows():
    frames = [frame(i * 20.0, 30.0 if i < 100 else 300.0) for i in range(200)]
    r = metrics.step_response(frames, [rate(0, 10.0), rate(3000, 9.6)], 2 * S, 4 * S)
    assert math.isnan(r.first_decrease_s) and math.isnan(r.settled_s)
    assert r.peak_delay_ms == 300.0


def test_capacity_falls_of_a_looped_trace():
    points = [(0.0, 20e6), (10.0, 10e6), (20.0, 20e6), (30.0, 5e6), (40.0, 20e6)]
    found = steps.capacity_falls(points, 1 * S, 91 * S)  # 90 s: two loops and a quarter
    assert [(s.at_ns, s.from_bps, s.to_bps, s.until_ns) for s in found] == [
        (11 * S, 20e6, 10e6, 21 * S), (31 * S, 20e6, 5e6, 41 * S),
        (51 * S, 20e6, 10e6, 61 * S), (71 * S, 20e6, 5e6, 81 * S)]
    assert steps.capacity_falls(points, 0, 15 * S)[0].until_ns == 15 * S
    assert steps.capacity_falls([(0.0, 20e6)], 0, S) == []


def test_a_queue_that_builds_late_is_not_settled_before_it_has():
    # Good for 2 s after the step, then 400 ms of delay, then good again from 3.5 s.
    frames = [frame(i * 20.0, 30.0 if i * 20 < 4000 or i * 20 >= 5500 else 430.0) for i in range(400)]
    r = metrics.step_response(frames, [rate(0, 10.0)], 2 * S, 8 * S)
    assert r.settled_s == pytest.approx(3.5)
    assert r.peak_delay_ms == 430.0
