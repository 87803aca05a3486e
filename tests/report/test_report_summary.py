# SPDX-License-Identifier: MIT
"""The report's summary, targets and intervals on hand-made page loads, against values worked out by hand."""

import math
from dataclasses import replace

import pytest

from confucius.report import intervals, summary
from confucius.report.data import PageResult


def test_a_paced_sender_holding_media_marks_the_load_starved():
    gcc, copa = result("fq", "p1", 0.0, 1.0), result("fq", "p1", 0.0, 1.0, controller="copa")
    gcc.sender_backlog_ms = copa.sender_backlog_ms = 400.0
    assert summary.starved(gcc, 250.0) and not summary.starved(gcc, 500.0)
    assert not summary.starved(copa, 250.0)  # Copa's window holds media by design


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


def test_a_further_baseline_gives_its_own_relative_degradation():
    results = [result("fq", "p1", 0.0, 1.0), result("fq", "p2", 0.0, 3.0),
               result("fq_codel", "p1", 0.0, 2.0), result("fq_codel", "p2", 0.0, 2.0),
               result("confucius", "p1", 0.0, 1.5), result("confucius", "p2", 0.0, 3.5)]
    rows = {r.scheduler: r for r in summary.summarize(results, "fq", ("fq_codel",))}
    assert rows["confucius"].degradation == pytest.approx(1.0 / 4)   # 5 s against fq's 4
    assert rows["confucius"].also == {"fq_codel": pytest.approx(1.0 / 4)}  # and fq_codel's 4
    assert rows["fq"].also["fq_codel"] == pytest.approx(0.0)
    assert summary.summarize(results)[0].also == {}


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
    assert intervals.ratio_interval([(2.0, 1.0), (4.0, 2.0), (6.0, 3.0)]) == (2.0, 2.0)  # every page 2:1
    assert all(math.isnan(v) for v in intervals.ratio_interval([(1.0, 1.0)]))
    pairs = [(0.1, 1.0), (2.0, 1.0), (0.0, 0.5), (1.0, 0.2), (0.3, 0.9), (0.0, 0.0)]
    low, high = intervals.ratio_interval(pairs)
    assert low < sum(a for a, _ in pairs) / sum(b for _, b in pairs) < high
    assert intervals.ratio_interval(pairs) == (low, high)  # seeded: the same report twice
    assert intervals.ratio_interval(pairs[::-1]) == (low, high)  # the pages in another order


def test_share_interval_is_wilsons():
    assert intervals.share_interval([False] * 10) == pytest.approx((0.0, 0.27753), abs=1e-5)
    assert intervals.share_interval([True] * 5 + [False] * 5) == pytest.approx((0.23659, 0.76341), abs=1e-5)
    assert all(math.isnan(v) for v in intervals.share_interval([]))


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
