# SPDX-License-Identifier: MIT
"""`confucius report promise`: both halves of the promise worked out by hand on made-up
loads, the rule for a baseline that never stalled, and the targets at their edges."""

import math
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from test_report_summary import result  # noqa: E402

from confucius.report import promise  # noqa: E402


def loads(conf: dict, codel_stall=0.4, fq_stall=0.2, fq_plt=1.0, codel_plt=2.0) -> list:
    """Pages p1..pN: fq_codel and fq with the same stall and PLT on each; confucius as `conf`
    gives it, page -> (stall, PLT)."""
    made = []
    for page, (stall, plt) in conf.items():
        made += [result("fq_codel", page, codel_stall, codel_plt), result("fq", page, fq_stall, fq_plt),
                 result("confucius", page, stall, plt)]
    return made


def test_both_halves_by_hand():
    # Four pages: confucius stalls 0.1 s on one (fq_codel 1.6 s in all, fq 0.8 s); its PLTs
    # are 0.9, 1.0, 1.1, 1.2 s against fq's 1.0 s each: +5 % in total, two pages without a penalty.
    [row] = promise.promise_rows(loads({"p1": (0.1, 0.9), "p2": (0.0, 1.0), "p3": (0.0, 1.1), "p4": (0.0, 1.2)}))
    assert (row.scheduler, row.loads) == ("confucius", 4)
    assert row.stall_s == pytest.approx(0.025) and row.codel_stall_s == 0.4 and row.fq_stall_s == 0.2
    assert row.removed_vs_codel.value == pytest.approx(1 - 0.1 / 1.6)
    assert row.removed_vs_fq.value == pytest.approx(1 - 0.1 / 0.8)
    assert row.plt_vs_fq.value == pytest.approx(0.05) and row.plt_vs_fq.pairs == 4
    assert row.no_penalty.value == 0.5 and row.median_penalty_ms == pytest.approx(50.0)   # -100, 0, +100, +200
    assert row.stall_half and row.plt_half
    for estimate in (row.removed_vs_codel, row.removed_vs_fq, row.plt_vs_fq, row.no_penalty):
        assert estimate.low - 1e-9 <= estimate.value <= estimate.high + 1e-9


def test_each_target_fails_the_half_it_belongs_to():
    slow = promise.promise_rows(loads({"p1": (0.0, 1.09), "p2": (0.0, 1.09)}))[0]   # +9 %
    assert slow.stall_half and not slow.plt_half
    few_without_penalty = promise.promise_rows(loads({"p1": (0.0, 0.8), "p2": (0.0, 1.01), "p3": (0.0, 1.01)}))[0]
    assert few_without_penalty.plt_vs_fq.value < 0 and not few_without_penalty.plt_half   # 1 of 3 pages
    # 55 % of fq's stall removed but only 55 % of fq_codel's, where 60 % is the target.
    codel_short = promise.promise_rows(loads({"p1": (0.09, 1.0)}, codel_stall=0.2, fq_stall=0.2))[0]
    assert codel_short.removed_vs_codel.value == pytest.approx(0.55) and not codel_short.stall_half


def test_a_baseline_that_never_stalled_leaves_nothing_to_remove_unless_the_scheduler_stalls():
    clean = promise.promise_rows(loads({"p1": (0.0, 1.0), "p2": (0.0, 1.0)}, fq_stall=0.0))[0]
    assert math.isnan(clean.removed_vs_fq.value) and clean.removed_vs_fq.pairs == 2
    assert clean.stall_half
    stalls = promise.promise_rows(loads({"p1": (0.05, 1.0), "p2": (0.0, 1.0)}, fq_stall=0.0))[0]
    assert not stalls.stall_half


def test_rows_only_where_both_baselines_ran_and_never_for_the_baselines():
    assert promise.promise_rows([r for r in loads({"p1": (0.0, 1.0)}) if r.scheduler != "fq"]) == []
    rows = promise.promise_rows(loads({"p1": (0.0, 1.0)}) + [result("pfifo", "p1", 0.3, 1.0)],
                                ["pfifo", "confucius"])
    assert [r.scheduler for r in rows] == ["pfifo", "confucius"]


def test_the_plane_draws_a_panel_per_scenario_and_controller(tmp_path):
    from confucius.report.plots import promise_plane

    rows = promise.promise_rows(loads({"p1": (0.1, 1.2), "p2": (0.0, 1.0), "p3": (0.2, 1.1)})
                                + [result("confucius-fixed", p, 0.3, 1.0) for p in ("p1", "p2", "p3")])
    out = promise_plane(rows, tmp_path / "plane.png", promise.STALL_REMOVED_VS_CODEL, promise.PLT_VS_FQ)
    assert out.stat().st_size > 10_000
