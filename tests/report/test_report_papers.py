# SPDX-License-Identifier: MIT
"""`confucius report papers` (and its first name, `report seeds`): the papers' figures beside ours, worked out by hand on made-up
loads, and the command end to end (text, JSON, figures) on a database of hand-made runs."""

import json
import math
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

sys.path.insert(0, str(Path(__file__).resolve().parent))

from test_report_summary import result  # noqa: E402
from test_report_timeline import stored_page  # noqa: E402

from confucius.report import data, papers, summary  # noqa: E402
from confucius.report.cli import app  # noqa: E402


def loads() -> list:
    # Four pages. fq_codel stalls on all four (0.4 s each, one over 500 ms), confucius on
    # one (0.2 s); PLTs against fq: confucius +10 % in total, one page faster than fq's.
    made = []
    for page, (codel_stall, conf_stall, fq_plt, conf_plt, codel_plt) in {
            "p1": (0.4, 0.2, 1.0, 0.9, 3.0), "p2": (0.4, 0.0, 1.0, 1.5, 2.5),
            "p3": (0.4, 0.0, 2.5, 2.6, 2.5), "p4": (0.6, 0.0, 0.5, 0.5, 1.0)}.items():
        made += [result("fq_codel", page, codel_stall, codel_plt, max_delay=600.0 if page == "p4" else 300.0),
                 result("fq", page, 0.3, fq_plt), result("confucius", page, conf_stall, conf_plt)]
    return made


def rows_of(rows, scheduler: str) -> dict:
    return {r.quantity: r for r in rows if r.scheduler == scheduler}


def test_the_papers_quantities_by_hand():
    rows = papers.paper_rows(loads(), ["confucius", "fq_codel", "fq"])
    mine = rows_of(rows, "confucius")
    assert mine["stall reduction vs fq_codel"].measured == pytest.approx(1 - 0.2 / 1.8)
    assert mine["stall reduction vs fq_codel"].loads == 4
    assert mine["PLT reduction vs fq_codel"].measured == pytest.approx(1 - 5.5 / 9.0)
    assert mine["PLT vs fq"].measured == pytest.approx(0.5 / 5.0)           # +0.5 s over fq's 5.0 s
    assert mine["mean PLT difference vs fq"].measured == pytest.approx(125.0)
    assert mine["loads with a stall"].measured == pytest.approx(250.0)      # 1 of 4, per 1000
    assert mine["loads with a stall > 190 ms"].measured == pytest.approx(250.0)
    assert mine["loads with PLT > 2 s"].measured == pytest.approx(250.0)    # p3's 2.6 s
    assert mine["loads with no PLT penalty vs fq"].measured == pytest.approx(0.5)  # p1 faster, p4 equal
    codel = rows_of(rows, "fq_codel")
    assert codel["loads with a stall"].measured == 1000.0
    assert codel["loads with a stall > 500 ms"].measured == pytest.approx(0.25)
    assert codel["loads with max delay > 500 ms"].measured == pytest.approx(0.25)
    assert codel["loads with PLT > 2 s"].measured == pytest.approx(750.0)
    assert "stall reduction vs fq_codel" not in codel               # never against itself
    assert "PLT vs fq" not in rows_of(rows, "fq")
    for row in rows:
        if not math.isnan(row.low):
            assert row.low - 1e-9 <= row.measured <= row.high + 1e-9, row


def test_each_row_carries_the_papers_figure_where_they_give_one():
    rows = papers.paper_rows(loads() + [result("pfifo", "p1", 0.1, 1.0), result("confucius-fixed", "p1", 0.1, 1.0),
                                      result("prio", "p1", 0.0, 1.0)])
    figure = {(r.scheduler, r.quantity): r.paper for r in rows}
    assert figure["confucius", "loads with a stall"] == "136 /1000"
    assert figure["confucius-fixed", "loads with a stall"] == "136 /1000"   # the papers' Confucius is the fixed one
    assert figure["prio", "loads with a stall"] == ""                       # labelled: not in the unlabelled range
    assert figure["pfifo", "loads with a stall"] == "288 /1000"
    assert figure["fq", "loads with a stall"] == "288-537 /1000"    # the range of the unlabelled baselines
    assert figure["fq_codel", "loads with PLT > 2 s"] == "227 /1000"
    assert figure["confucius", "stall reduction vs fq_codel"] == "60-69 %"
    assert figure["pfifo", "loads with PLT > 2 s"] == ""            # the papers give none
    assert figure["confucius", "mean PLT"] == ""
    # The order: quantity by quantity, schedulers by name when no order is given.
    stall_rows = [r.scheduler for r in rows if r.quantity == "loads with a stall"]
    assert stall_rows == ["confucius", "confucius-fixed", "fq", "fq_codel", "pfifo", "prio"]


@pytest.fixture
def database(tmp_path) -> Path:
    for scheduler in ("confucius", "fq_codel", "fq"):
        db, _ = stored_page(tmp_path, scheduler, with_flows=False)
        db.close()
    return tmp_path / "lab.sqlite"


def test_the_command_prints_the_table_and_json_from_one_set_of_rows_and_draws_the_figures(database, tmp_path):
    runner = CliRunner()
    out = tmp_path / "figures"
    text = runner.invoke(app, ["papers", "--db", str(database), "--out", str(out)], terminal_width=200)
    assert text.exit_code == 0, text.output
    assert "handmade, RT flow gcc" in text.output and "136 /1000" in text.output
    assert sorted(p.name for p in out.iterdir()) == [
        "handmade-fig10-tradeoff.png", "handmade-fig11-counts.png", "handmade-fig12-cdfs-gcc.png"]
    as_json = runner.invoke(app, ["papers", "--db", str(database), "--json"])
    assert as_json.exit_code == 0, as_json.output
    rows = json.loads(as_json.output)
    with data.open_db(database) as db:
        expected = json.loads(summary.rows_json(papers.paper_rows(data.page_results(db))))
    assert rows == expected
    # The same stored load under every scheduler: no reduction, the same stall everywhere.
    reduction = next(r for r in rows if r["quantity"] == "stall reduction vs fq_codel")
    assert (reduction["scheduler"], reduction["measured"], reduction["loads"]) == ("confucius", 0.0, 1)
    assert reduction["paper"] == "60-69 %" and "seed" not in reduction   # "seed" is a random seed


def test_bad_input_is_an_error_and_writes_nothing(database, tmp_path):
    runner = CliRunner()
    missing = runner.invoke(app, ["seeds", "--db", str(tmp_path / "none.sqlite")])
    assert missing.exit_code == 2 and "no results database" in missing.output
    unknown = runner.invoke(app, ["seeds", "--db", str(database), "-s", "cake", "--out", str(tmp_path / "f")])
    assert unknown.exit_code == 2 and "no valid page loads of cake" in unknown.output
    assert not (tmp_path / "f").exists()
