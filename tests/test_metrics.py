# SPDX-License-Identifier: MIT
"""confucius.metrics on hand-made frames, pages and throughputs, against values worked out
by hand: each definition, its edge cases (no input, one sample, ties) and the one path
that the lab's database and the report share."""

import math

import pytest

from confucius import metrics, rtflow

MS = 1_000_000


def frame(i: int, delay_ms: float | None, interval_ms: float = 20.0, size: int = 1000) -> rtflow.Frame:
    capture = round(i * interval_ms * MS)
    complete = delay_ms is not None
    return rtflow.Frame(i, capture, False, size, 1, 1 if complete else 0, None,
                        capture + round(delay_ms * MS) if complete else None, delay_ms, complete)


# --------------------------------------------------------------------------- stall

def test_stall_counts_late_and_lost_frames_for_their_interval():
    # 50 fps: frames 10-14 late (5 x 20 ms), frame 30 lost (20 ms), the last frame late too
    # (it stands for the median interval, 20 ms): 140 ms of stall.
    delays = [30.0] * 50
    for i in range(10, 15):
        delays[i] = 191.0
    delays[30] = None
    delays[49] = 400.0
    frames = [frame(i, d) for i, d in enumerate(delays)]
    assert metrics.stall_duration(frames) == pytest.approx(0.140)
    assert metrics.max_delay_ms(frames) == 400.0
    assert metrics.lost_share(frames) == pytest.approx(1 / 50)


def test_stall_threshold_is_exceeded_not_reached():
    assert metrics.stall_duration([frame(i, 190.0) for i in range(5)]) == 0.0
    assert metrics.stall_duration([frame(i, 190.001) for i in range(5)]) == pytest.approx(0.100)
    assert metrics.on_time(True, 190.0) and not metrics.on_time(True, 190.001)
    assert not metrics.on_time(False, 10.0) and not metrics.on_time(True, None)


def test_stall_without_frames_or_with_one():
    assert metrics.stall_duration([]) == 0.0
    # One frame: no interval to stand for, so even a late one adds nothing.
    assert metrics.stall_duration([frame(0, 500.0)]) == 0.0
    assert metrics.stall_duration([frame(0, 500.0), frame(1, 10.0)]) == pytest.approx(0.020)


def test_stall_orders_frames_by_capture_and_takes_the_upper_median_interval_for_the_last():
    # Gaps 10, 30 ms (even count: the upper middle one, 30 ms) and the last frame late.
    frames = [frame(0, 10.0, interval_ms=10.0), frame(4, 300.0, interval_ms=10.0), frame(1, 10.0, interval_ms=10.0)]
    assert metrics.stall_duration(frames) == pytest.approx(0.030)


def test_stall_splits_at_a_moment_by_capture_time():
    # 50 fps: frames 10-14 late before the split at frame 20, frame 30 lost and 31 late
    # after it: 100 ms and 40 ms, summing to the whole.
    delays = [30.0] * 50
    for i in (10, 11, 12, 13, 14, 31):
        delays[i] = 250.0
    delays[30] = None
    frames = [frame(i, d) for i, d in enumerate(delays)]
    during, after = metrics.stall_split(frames, 20 * 20 * MS)
    assert (during, after) == (pytest.approx(0.100), pytest.approx(0.040))
    assert during + after == pytest.approx(metrics.stall_duration(frames))
    assert metrics.stall_split(frames, 0) == (0.0, pytest.approx(0.140))


# --------------------------------------------------------------------------- percentiles

def test_nearest_rank_percentiles():
    values = list(range(1, 101))  # 1..100
    assert metrics.nearest_rank(values, 99) == 99
    assert metrics.nearest_rank(values, 100) == 100
    assert metrics.nearest_rank(values, 0) == 1
    assert metrics.nearest_rank([5.0, 1.0, 3.0], 50) == 3.0
    with pytest.raises(ValueError):
        metrics.nearest_rank(values, 101)
    with pytest.raises(ValueError):
        metrics.nearest_rank(values, -1)


def test_nearest_rank_edge_cases():
    assert math.isnan(metrics.nearest_rank([], 99))
    assert [metrics.nearest_rank([7.0], p) for p in (0, 1, 50, 99, 100)] == [7.0] * 5
    # Ties: the value itself, never a point between two values.
    assert metrics.nearest_rank([2.0, 2.0, 2.0, 9.0], 75) == 2.0
    assert metrics.nearest_rank([2.0, 2.0, 9.0, 9.0], 50) == 2.0
    assert metrics.nearest_rank([2.0, 2.0, 9.0, 9.0], 51) == 9.0


def test_delay_percentile_counts_lost_frames_as_infinitely_late():
    frames = [frame(i, float(i + 1)) for i in range(9)] + [frame(9, None)]
    assert metrics.delay_percentile(frames, 50) == 5.0
    assert metrics.delay_percentile(frames, 100) == math.inf
    assert math.isnan(metrics.delay_percentile([], 50))
    assert metrics.delay_percentile([frame(0, 12.5)], 99) == 12.5


def test_delays_max_and_lost_without_frames():
    assert metrics.delivered_delays([]) == []
    assert math.isnan(metrics.max_delay_ms([]))
    assert math.isnan(metrics.max_delay_ms([frame(0, None)]))
    assert math.isnan(metrics.lost_share([]))
    assert metrics.lost_share([frame(0, None)]) == 1.0


def test_mean_and_share_skip_what_is_not_a_number():
    assert metrics.mean([1.0, None, math.nan, 3.0]) == 2.0
    assert math.isnan(metrics.mean([])) and math.isnan(metrics.mean([None, math.nan]))
    assert metrics.share([True, False, False, True]) == 0.5
    assert math.isnan(metrics.share([]))


def test_counts_of_loads_as_the_seeds_give_them():
    assert [metrics.stalled(s) for s in (0.0, 0.001)] == [False, True]
    assert [metrics.stalled(s, 0.190) for s in (0.190, 0.2)] == [False, True]   # longer than, not reaching
    assert [metrics.long_plt(p) for p in (2.0, 2.001, None)] == [False, True, True]  # a failed load is long
    assert metrics.per_thousand([True, False, False, False]) == 250.0
    assert math.isnan(metrics.per_thousand([]))


# --------------------------------------------------------------------------- throughput

def test_goodput_counts_whole_frames_captured_in_the_window():
    frames = [frame(i, 30.0, interval_ms=100.0, size=1250) for i in range(10)]
    frames[3] = frame(3, None, interval_ms=100.0, size=1250)
    # Window [0, 1 s): 10 frames, 9 whole, 1250 B each: 9 * 10 kbit in 1 s.
    assert metrics.goodput_bps(frames, 0, 1000 * MS) == pytest.approx(90_000)
    assert metrics.goodput_bps(frames, 0, 500 * MS) == pytest.approx(4 * 10_000 / 0.5)
    assert math.isnan(metrics.goodput_bps(frames, 5, 5))
    assert metrics.goodput_bps([], 0, 1000 * MS) == 0.0


def test_sender_backlog_in_ms_at_the_target_rate():
    # 25 000 bytes held at 10 Mbit/s is 20 ms; samples without a queue or a target are skipped.
    assert metrics.sender_backlog_ms([(10e6, 12_500), (10e6, 25_000), (5e6, None), (0.0, 9_999)]) == 20.0
    assert math.isnan(metrics.sender_backlog_ms([(10e6, None)]))
    assert math.isnan(metrics.sender_backlog_ms([]))


# --------------------------------------------------------------------------- pages

def test_plt_is_first_request_to_last_byte():
    assert metrics.plt_s(2_000 * MS, 3_500 * MS) == 1.5
    assert metrics.plt_s(None, 3_500 * MS) is None
    assert metrics.plt_s(2_000 * MS, None) is None


def test_degradation_pairs_the_same_pages():
    plt = {"a": 2.0, "b": 3.0, "c": 9.0, "d": None}
    baseline = {"a": 1.0, "b": 2.0, "d": 1.0}
    mean_s, relative, paired = metrics.degradation(plt, baseline)
    assert (mean_s, paired) == (1.0, 2)
    assert relative == pytest.approx(2 / 3)
    assert metrics.degradation({"x": 1.0}, baseline)[2] == 0
    assert all(math.isnan(v) for v in metrics.degradation({}, {})[:2])
    assert metrics.degradation({"a": 1.5}, {"a": 1.0}) == (0.5, 0.5, 1)


def test_ratio_of_sums():
    assert metrics.ratio_of_sums([(1.0, 2.0), (3.0, 2.0)]) == 1.0
    assert math.isnan(metrics.ratio_of_sums([]))
    assert math.isnan(metrics.ratio_of_sums([(1.0, 0.0)]))


def test_peak_active_counts_connections_within_the_window():
    # b starts 5 ms after a's last byte: within 10 ms, so both are active then.
    transfers = {"a": [(0.0, 0.1)], "b": [(0.105, 0.2)]}
    assert metrics.peak_active(transfers) == 2
    assert metrics.peak_active(transfers, window=0.001) == 1
    assert metrics.peak_active({}) == 0
    assert metrics.peak_active({"a": [(0.0, 0.1), (0.105, 0.2)]}) == 1  # one connection counts once


# --------------------------------------------------------------------------- fairness

def test_jain_fairness_index():
    assert metrics.jfi([5.0, 5.0, 5.0]) == pytest.approx(1.0)
    assert metrics.jfi([1.0, 0.0]) == pytest.approx(0.5)
    assert metrics.jfi([3.0, 1.0]) == pytest.approx(16 / 20)          # (3+1)^2 / (2 * (9+1))
    assert metrics.jfi([4.0, 1.0, 1.0, 0.0]) == pytest.approx(36 / 72)  # 6^2 / (4 * 18)


def test_jain_fairness_index_edge_cases():
    assert math.isnan(metrics.jfi([]))
    assert math.isnan(metrics.jfi([0.0, 0.0]))
    assert metrics.jfi([7.0]) == 1.0
    assert metrics.jfi([2.0, math.nan, 2.0]) == 1.0


def test_min_thr_by_hand():
    # Throughputs 0.2, 0.3, 0.5 of 2, 1, 1 flows: avgThr 0.1, 0.3, 0.5, fair share 0.3.
    assert metrics.normalised_throughputs([0.2, 0.3, 0.5], [2, 1, 1]) == pytest.approx([1 / 3, 1.0, 5 / 3])
    assert metrics.min_thr([0.2, 0.3, 0.5], [2, 1, 1]) == pytest.approx(1 / 3)
    assert metrics.min_thr([0.5, 0.5], [1, 1]) == 1.0


def test_min_thr_edge_cases():
    # A CCA without flows has no share (NaN) and is not the minimum.
    shares = metrics.normalised_throughputs([0.4, 0.0, 0.6], [1, 0, 1])
    assert math.isnan(shares[1]) and shares[0] == pytest.approx(0.8)
    assert metrics.min_thr([0.4, 0.0, 0.6], [1, 0, 1]) == pytest.approx(0.8)
    assert metrics.min_thr([1.0], [3]) == 1.0
    assert math.isnan(metrics.min_thr([], []))
    with pytest.raises(ValueError):
        metrics.min_thr([0.5, 0.5], [1])


# --------------------------------------------------------------------------- a page load

def test_load_metrics_over_the_window_of_every_rt_flow():
    one = [frame(i, 30.0) for i in range(10)]            # 0..180 ms, on time
    two = [frame(i, 250.0 if i < 2 else 30.0) for i in range(10)]
    two[5] = frame(5, None)
    m = metrics.load_metrics([one, two], 0, 100 * MS)     # frames 0-4 of each
    assert m.stall_s == pytest.approx(0.040)              # two's frames 0 and 1
    assert m.max_delay_ms == 250.0 and m.lost_share == 0.0
    assert m.p99_delay_ms == 250.0 and sorted(m.delays_ms) == [30.0] * 8 + [250.0] * 2
    assert m.rt_bps == pytest.approx(2 * 5 * 8000 / 0.1)
    assert math.isnan(m.jfi)                              # no request: no JFI


def test_load_metrics_of_an_empty_window():
    m = metrics.load_metrics([[frame(i, 30.0) for i in range(5)]], 1000 * MS, 2000 * MS)
    assert m.stall_s == 0.0 and m.delays_ms == [] and m.rt_bps == 0.0
    assert all(math.isnan(v) for v in (m.max_delay_ms, m.p99_delay_ms, m.lost_share))
    assert math.isnan(metrics.load_metrics([], 0, 1).jfi)


def test_load_jfi_takes_connections_while_active_and_the_rt_flows_over_the_load():
    # Two connections of 1 Mbit/s and 3 Mbit/s while active; the RT flow's 1000 B frames
    # every 20 ms over the 1 s load, 400 kbit/s.
    connections = [(125_000, 0, 1000 * MS), (375_000, 0, 1000 * MS), (0, 0, 10 * MS), (10, 5, 5)]
    rt = [frame(i, 30.0) for i in range(60)]
    rates = [1e6, 3e6, 400e3]
    expected = sum(rates) ** 2 / (3 * sum(r * r for r in rates))
    assert metrics.load_jfi(connections, [rt], 0, 1.0) == pytest.approx(expected)
    m = metrics.load_metrics([rt], 0, 1000 * MS, connections, 0, 1.0)
    assert m.jfi == pytest.approx(expected)
    # Without a PLT only the connections count.
    assert metrics.load_jfi(connections, [rt], 0, None) == pytest.approx(16 / 20)
    assert math.isnan(metrics.load_jfi(connections, [rt], None, 1.0))


def test_throughput_by_cca_sums_each_ccas_flows():
    thr = metrics.throughput_by_cca([1.0, 2.0, 10.0, 3.0], ["reno", "reno", "bbr", "cubic"],
                                    ["reno", "cubic", "bbr"])
    assert thr == [3.0, 3.0, 10.0]
    # avgThr: reno 1.5, cubic 3, bbr 10; fair share 14.5/3; Reno is the most starved.
    assert metrics.min_thr(thr, [2, 1, 1]) == pytest.approx(1.5 / (14.5 / 3))
    with pytest.raises(ValueError, match="vegas"):
        metrics.throughput_by_cca([1.0], ["vegas"], ["reno"])
