# SPDX-License-Identifier: MIT
"""`confucius report rt-flows` (seed 000 Fig. 29): loads with 1 to N RT flows grouped by the
flows' controller and number, the stall per flow and the PLT against fq worked out by hand,
and the figure drawn."""

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from test_report_summary import result  # noqa: E402

from confucius.report import plots, rt_flows  # noqa: E402


def test_a_cells_controller_names_the_flows_controller_and_their_number():
    assert rt_flows.family("gcc") == ("gcc", 1)
    assert rt_flows.family("copa+copa+copa") == ("copa", 3)
    assert rt_flows.family("gcc+copa") == ("gcc+copa", 2)   # a mixed set is a family of its own


def test_the_stall_is_per_flow_and_the_plt_against_fq_over_the_same_pages_with_as_many_flows():
    loads = [result("fq", "p1", 0.0, 2.0, controller="gcc"), result("confucius", "p1", 0.0, 3.0, controller="gcc"),
             result("fq", "p1", 0.6, 2.0, controller="gcc+gcc+gcc"),
             result("fq", "p2", 0.0, 4.0, controller="gcc+gcc+gcc"),
             result("confucius", "p1", 0.3, 2.5, controller="gcc+gcc+gcc"),
             result("confucius", "p2", 0.0, 4.5, controller="gcc+gcc+gcc"),
             result("confucius", "p3", 0.9, 9.0, controller="gcc+gcc+gcc")]   # fq never loaded p3
    cells = {(c.flows, c.scheduler): c for c in rt_flows.flow_count_cells(loads, ["confucius", "fq"])}
    assert list(cells) == [(1, "confucius"), (1, "fq"), (3, "confucius"), (3, "fq")]
    three = cells[(3, "confucius")]
    assert three.controller == "gcc" and three.loads == 3
    assert three.stall_per_flow_s == pytest.approx((0.1 + 0.0 + 0.3) / 3)
    assert three.stalled_share == pytest.approx(2 / 3)
    assert three.plt_vs_fq == pytest.approx((2.5 + 4.5) / (2.0 + 4.0) - 1)
    assert cells[(3, "fq")].stall_per_flow_s == pytest.approx(0.1)
    assert cells[(1, "confucius")].plt_vs_fq == pytest.approx(0.5)


def test_the_figure_has_two_panels_per_controller(tmp_path):
    loads = [result(s, p, 0.1, 2.0, controller=c) for s in ("fq", "confucius") for p in ("p1", "p2")
             for c in ("copa", "copa+copa", "gcc", "gcc+gcc")]
    out = plots.flow_counts(rt_flows.flow_count_cells(loads), tmp_path / "fig29.png")
    assert out.stat().st_size > 10_000
