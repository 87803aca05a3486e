# SPDX-License-Identifier: MIT
"""The report's metrics on hand-made frames and page loads, against values worked out by hand."""

import math
from dataclasses import replace

import pytest

from confucius import rtflow
from confucius.report import metrics, summary
from confucius.report.data import PageResult

MS = 1_000_000


def frame(i: int, delay_ms: float | None, interval_ms: float = 20.0, size: int = 1000) -> rtflow.Frame:
    capture = round(i * interval_ms * MS)
    complete = delay_ms is not None
    return rtflow.Frame(i, capture, False, size, 1, 1 if complete else 0, None,
                        capture + round(delay_ms * MS) if complete else None, delay_ms, complete)


def test_stall_counts_late_and_lost_frames_for_their_interval():
    # 50 fps: frames 10-14 late (5 x 20 ms), frame 30 lost (20 ms), the last frame late too
    # (it stands for the median interval, 20 ms): 140 ms of stall.
    delays = [30.0] * 50
    for i in range(10, 15):
        delays[i] = 191.0
    delays[30] = None
    delays[49] = 400.0
    frames = [frame(i, d) for i, d in enumerate(delays)]
    assert metrics.stall_seconds(frames) == pytest.approx(0.140)
    assert metrics.max_delay_ms(frames) == 400.0
    assert metrics.lost_share(frames) == pytest.approx(1 / 50)
    # 190 ms itself is not a stall: the threshold is "exceeds".
    assert metrics.stall_seconds([frame(i, 190.0) for i in range(5)]) == 0.0


def test_nearest_rank_percentiles():
    values = list(range(1, 101))  # 1..100
    assert metrics.nearest_rank(values, 99) == 99
    assert metrics.nearest_rank(values, 100) == 100
    assert metrics.nearest_rank(values, 0) == 1
    assert metrics.nearest_rank([5.0, 1.0, 3.0], 50) == 3.0
    assert math.isnan(metrics.nearest_rank([], 99))
    with pytest.raises(ValueError):
        metrics.nearest_rank(values, 101)


def test_goodput_counts_whole_frames_captured_in_the_window():
    frames = [frame(i, 30.0, interval_ms=100.0, size=1250) for i in range(10)]
    frames[3] = frame(3, None, interval_ms=100.0, size=1250)
    # Window [0, 1 s): 10 frames, 9 whole, 1250 B each: 9 * 10 kbit in 1 s.
    assert metrics.goodput_bps(frames, 0, 1000 * MS) == pytest.approx(90_000)
    assert metrics.goodput_bps(frames, 0, 500 * MS) == pytest.approx(4 * 10_000 / 0.5)
    assert math.isnan(metrics.goodput_bps(frames, 5, 5))


def test_sender_backlog_in_ms_at_the_target_rate():
    # 25 000 bytes held at 10 Mbit/s is 20 ms; samples without a queue or a target are skipped.
    assert metrics.sender_backlog_ms([(10e6, 12_500), (10e6, 25_000), (5e6, None), (0.0, 9_999)]) == 20.0
    assert math.isnan(metrics.sender_backlog_ms([(10e6, None)]))


def test_a_paced_sender_holding_media_marks_the_load_starved():
    gcc, copa = result("fq", "p1", 0.0, 1.0), result("fq", "p1", 0.0, 1.0, controller="copa")
    gcc.sender_backlog_ms = copa.sender_backlog_ms = 400.0
    assert summary.starved(gcc, 250.0) and not summary.starved(gcc, 500.0)
    assert not summary.starved(copa, 250.0)  # Copa's window holds media by design


def test_jain_fairness_index():
    assert metrics.jfi([5.0, 5.0, 5.0]) == pytest.approx(1.0)
    assert metrics.jfi([1.0, 0.0]) == pytest.approx(0.5)
    assert metrics.jfi([3.0, 1.0]) == pytest.approx(16 / 20)          # (3+1)^2 / (2 * (9+1))
    assert metrics.jfi([4.0, 1.0, 1.0, 0.0]) == pytest.approx(36 / 72)  # 6^2 / (4 * 18)
    assert math.isnan(metrics.jfi([]))


def test_degradation_pairs_the_same_pages():
    plt = {"a": 2.0, "b": 3.0, "c": 9.0, "d": None}
    baseline = {"a": 1.0, "b": 2.0, "d": 1.0}
    mean_s, relative, paired = metrics.degradation(plt, baseline)
    assert (mean_s, paired) == (1.0, 2)
    assert relative == pytest.approx(2 / 3)
    assert metrics.degradation({"x": 1.0}, baseline)[2] == 0


def result(scheduler: str, page: str, stall: float, plt: float | None, max_delay: float = 100.0,
           delays=(30.0,), controller: str = "gcc") -> PageResult:
    return PageResult(page_row=0, run_id=0, scenario="s", scheduler=scheduler, scheduler_base=scheduler,
                      controller=controller, repetition=0, page_key=page, page_id=page, session=0, plt_s=plt,
                      load_start_ns=0, window_end_ns=1, converged=True, stall_s=stall, max_delay_ms=max_delay,
                      p99_delay_ms=math.nan, lost_share=0.0, rt_bps=8e6, jfi=0.5, delays_ms=list(delays))


def test_summary_rows_by_hand():
    results = [
        result("fq", "p1", 0.0, 1.0), result("fq", "p2", 0.5, 3.0),
        result("confucius", "p1", 0.1, 1.5, max_delay=300.0, delays=[10.0] * 99 + [500.0]),
        result("confucius", "p2", 0.0, 2.5, max_delay=100.0),
        result("confucius", "p3", 0.3, None),  # failed load: no PLT, counted as a long one
    ]
    rows = {r.scheduler: r for r in summary.summarize(results)}
    c = rows["confucius"]
    assert c.loads == 3
    assert c.stall_s == pytest.approx(0.4 / 3)
    assert c.stall_share == pytest.approx(2 / 3)
    assert c.max_delay_ms == pytest.approx(500 / 3)
    # 102 frame delays: 99 of 10 ms, two of 30 ms, one of 500 ms; rank ceil(0.99 * 102) = 101.
    assert c.p99_delay_ms == 30.0
    assert c.plt_s == pytest.approx(2.0)
    assert c.degradation_s == pytest.approx(0.0)   # (+0.5 - 0.5) / 2 pages paired
    assert c.degradation == pytest.approx(0.0) and c.paired == 2
    assert c.long_plt_share == pytest.approx(2 / 3)  # 2.5 s and the failed load
    assert rows["fq"].degradation == 0.0 and rows["fq"].stall_share == 0.5
    assert [r.scheduler for r in summary.ordered(list(rows.values()), ["fq", "confucius"])] == ["fq", "confucius"]


def test_common_loads_keep_the_pages_every_scheduler_met():
    results = [result("fq", "p1", 0.0, 1.0), result("fq", "p2", 0.0, 1.0), result("fq", "p3", 0.0, 1.0),
               result("confucius", "p1", 0.0, 1.0), result("confucius", "p2", 0.0, 1.0),
               result("fq", "p3", 0.0, 1.0, controller="copa"), result("confucius", "p3", 0.0, 1.0, controller="copa")]
    kept = summary.common_loads(results)
    assert sorted((r.controller, r.scheduler, r.page_key) for r in kept) == [
        ("copa", "confucius", "p3"), ("copa", "fq", "p3"),
        ("gcc", "confucius", "p1"), ("gcc", "confucius", "p2"), ("gcc", "fq", "p1"), ("gcc", "fq", "p2")]
    assert summary.common_loads([]) == []


def test_ratio_interval_resamples_pages():
    assert metrics.ratio_interval([(2.0, 1.0), (4.0, 2.0), (6.0, 3.0)]) == (2.0, 2.0)  # every page 2:1
    assert all(math.isnan(v) for v in metrics.ratio_interval([(1.0, 1.0)]))
    pairs = [(0.1, 1.0), (2.0, 1.0), (0.0, 0.5), (1.0, 0.2), (0.3, 0.9), (0.0, 0.0)]
    low, high = metrics.ratio_interval(pairs)
    assert low < sum(a for a, _ in pairs) / sum(b for _, b in pairs) < high
    assert metrics.ratio_interval(pairs) == (low, high)  # seeded: the same report twice


def test_share_interval_is_wilsons():
    assert metrics.share_interval([False] * 10) == pytest.approx((0.0, 0.27753), abs=1e-5)
    assert metrics.share_interval([True] * 5 + [False] * 5) == pytest.approx((0.23659, 0.76341), abs=1e-5)
    assert all(math.isnan(v) for v in metrics.share_interval([]))


def target_results() -> list[PageResult]:
    return [result("fq_codel", "p1", 1.0, 2.0), result("fq_codel", "p2", 1.0, 2.0),
            result("cake", "p1", 0.5, 2.0), result("cake", "p2", 0.5, 2.0),
            result("fq", "p1", 1.0, 2.0), result("fq", "p2", 1.0, 2.0),
            result("confucius", "p1", 0.2, 2.1), result("confucius", "p2", 0.4, 2.1),
            result("confucius", "p3", 0.0, None)]  # met by confucius only: in the share, not the pairs


def test_target_checks_pair_the_pages_by_hand():
    results = target_results()
    checks = {c.name: c for c in summary.target_checks(results)}
    assert list(checks) == ["stall vs fq_codel", "stall vs cake", "loads with a stall", "PLT degradation vs fq"]
    assert (checks["stall vs fq_codel"].value, checks["stall vs fq_codel"].met) == (pytest.approx(0.3), True)
    assert (checks["stall vs cake"].value, checks["stall vs cake"].met) == (pytest.approx(0.6), True)
    assert (checks["loads with a stall"].value, checks["loads with a stall"].met) == (pytest.approx(2 / 3), False)
    assert (checks["PLT degradation vs fq"].value, checks["PLT degradation vs fq"].met) == (pytest.approx(0.05), True)
    for check in checks.values():
        assert check.low <= check.value <= check.high and check.controller == "gcc"
    assert summary.target_checks([r for r in results if r.scheduler != "confucius"]) == []


def test_targets_are_printed_with_their_interval_and_verdict():
    from confucius.report import cli
    with cli.console.capture() as captured:
        cli.print_targets(summary.target_checks(target_results()))
    text = " ".join(captured.get().split())
    assert text.startswith("confucius, RT gcc: stall vs fq_codel: 0.30× (95% CI 0.")
    assert "target ≤ 0.50×) met" in text and "loads with a stall: 66.7% (95% CI" in text
    assert "PLT degradation vs fq: +5.0% (95% CI +5.0%–+5.0%; target ≤ +10.0%) met" in text


def test_a_load_started_low_when_its_rt_flow_was_below_the_share_of_the_link():
    load = result("confucius", "p1", 0.0, 1.0)
    load.link_bps = 20e6
    assert [summary.started_low(replace(load, rt_target_bps=bps), 0.5) for bps in (9.9e6, 10e6, None)] == [
        True, False, False]
    assert not summary.started_low(replace(load, rt_target_bps=1e6, link_bps=None), 0.5)  # a trace: unknown
