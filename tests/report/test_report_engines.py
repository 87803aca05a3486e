# SPDX-License-Identifier: MIT
"""`confucius report engines`: the same pages in two databases, paired by scheduler,
controller, repetition and page, against values worked out by hand."""

import pytest
from typer.testing import CliRunner
from test_report_summary import result

from confucius.experiment.db import Database
from confucius.report.cli import app
from confucius.report.data import ReportError
from confucius.report.engines_table import compare


def test_pages_pair_by_scheduler_controller_and_page_only():
    simulated = [result("fq", "p1", 0.2, 1.0), result("fq", "p2", 0.0, 3.0), result("fq", "p3", 0.0, 9.0),
                 result("fq", "p1", 0.0, 5.0, controller="copa")]
    lab = [result("fq", "p1", 0.0, 2.0), result("fq", "p2", 0.4, 2.0),
           result("fq", "p3", 0.0, None),                      # failed in the lab: p3 left out
           result("pfifo", "p1", 0.0, 1.0)]                    # no simulated pfifo: no row
    for r in lab:
        r.scenario = "a copy's name"
    [row] = compare(simulated, lab)
    assert (row.scheduler, row.controller, row.pages) == ("fq", "gcc", 2)
    assert row.plt_s == pytest.approx(2.0) and row.other_plt_s == pytest.approx(2.0)
    assert row.plt_ratio == pytest.approx(1.0)                 # (1 + 3) / (2 + 2)
    assert row.plt_ratio_low < 1.0 < row.plt_ratio_high        # p1 halves, p2 gains half
    assert row.stall_s == pytest.approx(0.1) and row.other_stall_s == pytest.approx(0.2)


def test_a_page_slower_everywhere_gives_its_ratio_and_a_tight_interval():
    simulated = [result("fq_codel", f"p{i}", 0.0, 1.1 * (i + 1)) for i in range(5)]
    lab = [result("fq_codel", f"p{i}", 0.0, 1.0 * (i + 1)) for i in range(5)]
    [row] = compare(simulated, lab)
    assert row.plt_ratio == pytest.approx(1.1)
    assert (row.plt_ratio_low, row.plt_ratio_high) == (pytest.approx(1.1), pytest.approx(1.1))


def test_no_common_page_is_an_error(tmp_path):
    for name in ("a", "b"):
        Database(tmp_path / f"{name}.sqlite").close()
    out = CliRunner().invoke(app, ["engines", "--db", str(tmp_path / "a.sqlite"),
                                   "--against", str(tmp_path / "b.sqlite")])
    assert out.exit_code == 2
    assert "no page both" in out.output
    assert compare([], []) == []


def test_a_page_two_scenarios_loaded_is_refused_not_guessed():
    simulated = [result("fq", "p1", 0.0, 1.0), result("fq", "p1", 0.0, 9.0)]
    simulated[1].scenario = "matrix-100"
    with pytest.raises(ReportError, match="p1 under fq / gcc was loaded in scenarios s and matrix-100: give --scenario"):
        compare(simulated, [result("fq", "p1", 0.0, 1.0)])
