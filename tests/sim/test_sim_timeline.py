# SPDX-License-Identifier: MIT
"""What `confucius report timeline` reads, from simulated runs: the RT sender's rate log
(rt_rates, in every mode: GCC, Copa, the TCP mode) and the scheduler's samples
(qdisc_stats; for Confucius its flows, qdisc_flows), written by the bottleneck in the
lab's formats and stored through the lab's writer. Figures in simulated time."""

import json
import sqlite3
import subprocess
from pathlib import Path

import pytest
from typer.testing import CliRunner

from confucius import rtflow
from confucius.experiment.db import Database
from confucius.experiment.scenario import load
from confucius.report import data
from confucius.report.cli import app as report_app
from confucius.sim.bottleneck import NS3_CCAS
from confucius.sim.cli import app

REPO = Path(__file__).resolve().parents[2]
BOTTLENECK = REPO / "build" / "sim" / "bottleneck"
RT_PORT = 5000
runner = CliRunner()

# GCC and Copa beside two small pages under confucius; two pages per run share the run's clock.
SCENARIO = dict(name="sim-timeline", schedulers='["confucius"]', controllers='["gcc", "copa"]',
                pages='["flows-6-size-100000", "flows-3-size-30000"]',
                rt='min_rate = "200kbit"\nmax_rate = "30mbit"', web="pages_per_run = 2")


def rows(db: Path, sql: str, params=()) -> list:
    with sqlite3.connect(db) as conn:
        conn.row_factory = sqlite3.Row
        return conn.execute(sql, params).fetchall()


@pytest.fixture(scope="module")
def simulated(tmp_path_factory, small_sim_scenario):
    folder = tmp_path_factory.mktemp("timeline")
    scenario = folder / "timeline.toml"
    scenario.write_text(small_sim_scenario(**SCENARIO))
    db = folder / "sim.sqlite"
    result = runner.invoke(app, ["run", str(scenario), "--db", str(db)])
    assert result.exit_code == 0, result.output
    return db, load(scenario, ccas=NS3_CCAS)


def rt_flows(db: Path) -> list:
    return rows(db, "SELECT f.id, f.port, f.session, r.controller, r.id AS run_id FROM flows f "
                    "JOIN runs r ON r.id = f.run_id WHERE f.kind = 'rt' ORDER BY r.controller, f.session")


def test_the_rate_log_is_stored_for_every_page_with_the_controllers_target(simulated):
    db, scenario = simulated
    flows = rt_flows(db)
    assert [(f["controller"], f["session"]) for f in flows] == [("copa", 0), ("copa", 1), ("gcc", 0), ("gcc", 1)]
    for flow in flows:
        rates = rows(db, "SELECT * FROM rt_rates WHERE flow_id=? ORDER BY time_ns", (flow["id"],))
        steps = {b["time_ns"] - a["time_ns"] for a, b in zip(rates, rates[1:])}
        assert len(rates) > 100 and steps == {50_000_000}           # rtflow's --log-interval
        targets = [r["target_bps"] for r in rates]
        assert all(scenario.rt.min_rate_bps <= t <= scenario.rt.max_rate_bps for t in targets)
        assert len(set(targets)) > 10, "the target follows the controller, it is not a constant"
        assert all(r["srtt_ms"] is None or r["srtt_ms"] >= 40 for r in rates)
        assert (rates[-1]["cwnd_bytes"] is not None) == (flow["controller"] == "copa")   # a window controller's
        assert flow["port"] == RT_PORT


def test_the_logged_target_is_the_one_that_sized_the_frames(simulated):
    db, scenario = simulated
    flow = next(f for f in rt_flows(db) if f["controller"] == "gcc")
    rates = [(r["time_ns"], r["target_bps"]) for r in rows(
        db, "SELECT time_ns, target_bps FROM rt_rates WHERE flow_id=? ORDER BY time_ns", (flow["id"],))]
    gop = 2 * scenario.rt.fps                        # a key frame every 2 s, 4 deltas' worth
    ratios = []
    for f in rows(db, "SELECT capture_ns, size_bytes FROM frames WHERE flow_id=? AND key=0", (flow["id"],)):
        before = [t for at, t in rates if at <= f["capture_ns"]]
        if before:
            implied = f["size_bytes"] * 8 * scenario.rt.fps * (gop - 1 + 4) / gop
            ratios.append(implied / before[-1])
    ratios.sort()
    assert len(ratios) > 300 and abs(ratios[len(ratios) // 2] - 1) < 0.02
    assert ratios[len(ratios) // 20] > 0.7 and ratios[-len(ratios) // 20] < 1.3


def test_confucius_flows_agree_with_its_own_statistics(simulated):
    db, _ = simulated
    run_id = rt_flows(db)[0]["run_id"]
    stats = {r["time_ns"]: (r, json.loads(r["xstats"])) for r in rows(
        db, "SELECT * FROM qdisc_stats WHERE run_id=? AND kind='confucius'", (run_id,))}
    by_time: dict[int, list] = {}
    for f in rows(db, "SELECT * FROM qdisc_flows WHERE run_id=?", (run_id,)):
        by_time.setdefault(f["time_ns"], []).append(f)
    both = sorted(set(stats) & set(by_time))
    contested = 0
    for t in both:
        flows, (row, xstats) = by_time[t], stats[t]
        new = [f["weight"] for f in flows if f["state"] == "new"]
        old = [f["weight"] for f in flows if f["state"] == "old"]
        assert (len(new), len(old)) == (xstats["new_flows"], xstats["old_flows"])
        assert all(w == 1 for w in old) and len(set(new)) <= 1   # new flows share S equally
        assert abs(sum(new) - xstats["new_weight"]) <= len(new) / 65536 + 1e-6
        assert sum(f["packets"] for f in flows) == row["qlen"] == xstats["backlog_packets"]
        assert sum(f["bytes"] for f in flows) == xstats["backlog_bytes"]
        contested += bool(new)
    assert len(both) > 20 and contested > 2


def test_the_rt_flows_share_falls_under_the_pages_flows_and_comes_back(simulated):
    db, _ = simulated
    with Database(db) as database:
        loads = [r for r in data.page_results(database) if r.controller == "gcc"]
        assert len(loads) == 2
        for load in loads:
            view = data.rt_view(database, load, before_s=2.0)
            during = [q for q in view.qdisc if load.load_start_ns <= q.time_ns <= load.window_end_ns]
            steps = {b.time_ns - a.time_ns for a, b in zip(during, during[1:])}
            assert view.targets and during and steps == {20_000_000}    # the lab's fast sampling
            assert min(q.weight_share for q in during) < 0.9 and during[-1].weight_share == 1
            assert all(q.time_ns < load.load_start_ns or q.time_ns > load.window_end_ns or q in during
                       for q in view.qdisc)
        # One clock per run: the second load starts after the first one's window.
        first, second = sorted(loads, key=lambda r: r.load_start_ns)
        assert second.load_start_ns > first.window_end_ns


def test_report_timeline_draws_a_simulated_load(simulated, tmp_path):
    db, _ = simulated
    out = tmp_path / "timeline.png"
    result = runner.invoke(report_app, ["timeline", "--db", str(db), "--out", str(out), "--controller", "copa"])
    assert result.exit_code == 0, result.output
    assert out.stat().st_size > 20_000


def test_the_tcp_mode_writes_rtflows_rate_log(tmp_path):
    log = tmp_path / "rates.csv"
    subprocess.run([str(BOTTLENECK), "--scheduler=pfifo", "--rt=tcp-cubic", "--web-flows=0", "--rate=20Mbps",
                    "--rtt=40ms", "--buffer=1000", "--duration=4s", "--drain=1s", f"--rate-log={log}"],
                   check=True, capture_output=True, text=True, timeout=120)
    rates = rtflow.read_rates(log)
    assert len(rates) > 70 and {b.time_ns - a.time_ns for a, b in zip(rates, rates[1:])} == {50_000_000}
    later = rates[20:]
    assert all(0 < r.target_bps and r.pacing_bps > 0 and r.cwnd_bytes > 0 and r.srtt_ms >= 40 for r in later)
    assert sum(r.acked_bps for r in later) / len(later) > 5e6     # the socket carried the video


def test_queue_samples_only_keep_the_statistics_and_drop_confucius_flows(tmp_path, simulated,
                                                                         small_sim_scenario):
    db, _ = simulated
    scenario = tmp_path / "queues.toml"
    scenario.write_text(small_sim_scenario(**{**SCENARIO, "sim": 'samples = "queues"'}))
    lean = tmp_path / "queues.sqlite"
    result = runner.invoke(app, ["run", str(scenario), "--db", str(lean), "-c", "gcc"])
    assert result.exit_code == 0, result.output
    count = "SELECT COUNT(*) FROM {} WHERE run_id IN (SELECT id FROM runs WHERE controller = 'gcc')"
    [[full_stats]], [[full_flows]] = (rows(db, count.format(t)) for t in ("qdisc_stats", "qdisc_flows"))
    [[stats]], [[flows]] = (rows(lean, count.format(t)) for t in ("qdisc_stats", "qdisc_flows"))
    assert (stats, flows) == (full_stats, 0) and full_flows > 0
    print(f"qdisc_stats rows {stats}; qdisc_flows rows {full_flows} with flows, none with queues")
