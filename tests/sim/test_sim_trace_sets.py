# SPDX-License-Identifier: MIT
"""A link of `[link] traces` in the simulator: each load plays the trace it drew from the
offset it drew (keys.load_trace), the draws are recorded with its run, `sim alone`
replays them and `sim traces` groups the loads by them."""

import json
import sqlite3

import pytest
from typer.testing import CliRunner

from confucius.experiment import keys, plan as planning
from confucius.experiment.scenario import load
from confucius.sim import bottleneck as bn
from confucius.sim.alone import compare
from confucius.sim.cli import app
from confucius.sim.plan import plan, trace_text
from confucius.sim.traces import by_trace

runner = CliRunner()
PAGES = '["flows-3-size-30000", "flows-4-size-30000", "flows-5-size-30000", "flows-6-size-30000"]'
# Two traces the video cannot mistake: 1.5 Mbit/s throughout, and 40 Mbit/s after a
# 1 Mbit/s first second (a load drawing that one starts on 40 unless it draws offset 0).
SLOW = "".join(f"{t / 5:.1f} 1.5\n" for t in range(150))
FAST = "".join(f"{t / 5:.1f} {1 if t < 5 else 40}\n" for t in range(150))


@pytest.fixture(scope="module")
def on_a_set(tmp_path_factory, small_sim_scenario):
    folder = tmp_path_factory.mktemp("trace-sets")
    (folder / "set").mkdir()
    (folder / "set" / "slow.log").write_text(SLOW)
    (folder / "set" / "fast.log").write_text(FAST)
    path = folder / "small.toml"
    path.write_text(small_sim_scenario("sim-trace-set", '["confucius"]', pages=PAGES).replace(
        'rate = "20mbit"', 'traces = "set"'))
    return path


def test_each_page_plays_its_drawn_trace_from_its_offset(on_a_set):
    scenario = load(on_a_set, ccas=bn.NS3_CCAS)
    [task], _ = plan(scenario)
    assert not any(arg.startswith("--rate=") for arg in task.cell.args)
    for page in task.pages:
        ref = scenario.web.pages[page.number]
        assert page.drawn == keys.load_trace(scenario, task.cell.cell, ref)
        rates = dict((round(t, 6), bps) for t, bps in
                     ((float(t), float(m) * 1e6) for t, m in (line.split() for line in
                                                              (on_a_set.parent / "set" / page.drawn.name).read_text().splitlines())))
        lines = [line.split() for line in trace_text(page.trace, page.start_s).splitlines()]
        at_start = [float(m) * 1e6 for t, m in lines if float(t) == page.start_s]
        assert at_start == [rates[page.drawn.offset_s]]
        assert float(lines[-1][0]) >= page.start_s + page.trace.end_s   # to the episode's end, the trace repeating


@pytest.fixture(scope="module")
def simulated(on_a_set):
    db = on_a_set.parent / "sim.sqlite"
    result = runner.invoke(app, ["run", str(on_a_set), "--db", str(db)])
    assert result.exit_code == 0, result.output
    return db


def draws(scenario):
    cell = planning.cells(scenario)[0]
    return {ref.key: keys.load_trace(scenario, cell, ref) for ref in scenario.web.pages}


def test_a_run_records_each_loads_draw_and_the_video_meets_its_link(on_a_set, simulated):
    scenario, db = load(on_a_set, ccas=bn.NS3_CCAS), simulated
    drawn = draws(scenario)
    assert {d.name for d in drawn.values()} == {"slow.log", "fast.log"}
    assert any(d.name == "fast.log" and d.offset_s >= 1 for d in drawn.values())
    with sqlite3.connect(db) as conn:
        [(spec, trace)] = conn.execute("SELECT spec, trace FROM runs").fetchall()
        goodput = dict(conn.execute("SELECT page_key, rt_goodput_bps FROM pages"))
    spec = json.loads(spec)
    assert trace == str(on_a_set.parent / "set")
    assert spec["page_traces"] == [{"trace": drawn[key].name, "offset_s": drawn[key].offset_s}
                                   for key in spec["pages"]]
    for key, d in drawn.items():
        if d.name == "slow.log":
            assert goodput[key] < 1.5e6
        elif d.offset_s >= 1:
            assert goodput[key] > 3e6
    [alone] = compare(scenario, db)   # the episodes again without their pages, on their own draws
    assert alone.loads == len(drawn) and alone.alone_stall_s >= 0


def test_the_loads_are_grouped_by_the_trace_they_drew(on_a_set, simulated):
    scenario = load(on_a_set, ccas=bn.NS3_CCAS)
    drawn = draws(scenario)
    cells = {c.trace: c for c in by_trace(scenario, simulated)}
    assert set(cells) == {"fast.log", "slow.log"}
    for name, cell in cells.items():
        assert (cell.scheduler, cell.controller) == ("confucius", "gcc")
        assert cell.loads == sum(d.name == name for d in drawn.values())
    result = runner.invoke(app, ["traces", str(on_a_set), "--db", str(simulated)])
    assert result.exit_code == 0, result.output
    assert "fast.log" in result.output and "slow.log" in result.output


def test_traces_refuses_loads_that_drew_none(tmp_path, small_sim_scenario):
    path = tmp_path / "small.toml"
    path.write_text(small_sim_scenario("sim-one-rate", '["confucius"]'))
    db = tmp_path / "sim.sqlite"
    assert runner.invoke(app, ["run", str(path), "--db", str(db)]).exit_code == 0
    result = runner.invoke(app, ["traces", str(path), "--db", str(db)])
    assert result.exit_code == 2 and "records no traces drawn per load" in result.output
