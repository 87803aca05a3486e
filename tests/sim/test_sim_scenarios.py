# SPDX-License-Identifier: MIT
"""`confucius sim run` and `sim sweep`: the lab's scenarios simulated into the lab's
database, read by `confucius report` unchanged; sweeps on a local Dask cluster resume and
keep the other cells when one fails."""

import json
import sqlite3
from pathlib import Path

import pytest

from typer.testing import CliRunner

from confucius import rtflow
from confucius.experiment import keys
from confucius.provenance import program_digest
from confucius.experiment.scenario import SchedulerChoice, ScenarioError, load
from confucius.report.cli import app as report_app
from confucius.sim.cli import app
from confucius.sim.bottleneck import BOTTLENECK, SimError, describe, run_bottleneck
from confucius.sim.plan import plan, scheduler_args
from confucius.sim.store import window_end
from confucius.sim.worker import simulate

REPO = Path(__file__).resolve().parents[2]
runner = CliRunner()

@pytest.fixture
def small(tmp_path, small_sim_scenario):
    """Two cells (fq_codel, confucius, and any `extra`) of one small page, written to a file."""
    def write(extra: str = "", variants: str = "", **tables) -> Path:
        path = tmp_path / "small.toml"
        path.write_text(small_sim_scenario("sim-small", f'["fq_codel", "confucius"{extra}]',
                                           variants=variants, **tables))
        return path
    return write


def rows(db: Path, sql: str) -> list:
    with sqlite3.connect(db) as conn:
        return conn.execute(sql).fetchall()


def test_a_simulated_demo_cell_is_read_by_confucius_report(tmp_path):
    db = tmp_path / "sim.sqlite"
    result = runner.invoke(app, ["run", str(REPO / "scenarios" / "demo.toml"), "--db", str(db),
                                 "-s", "cake,confucius"])
    assert result.exit_code == 0, result.output
    assert "skipped cake / gcc: cake cannot be simulated: ns-3 has no CAKE" in result.output
    [(engine, time_mode, seed, versions, spec, status, host)] = rows(
        db, "SELECT engine, time_mode, seed, versions, spec, status, host_load FROM runs")
    assert (engine, time_mode, seed, status) == ("ns3", "simulated", 1, "ok")
    host = json.loads(host)   # the run's wall clock, like the lab's, comes with what the host did meanwhile
    assert len(host["before"]) == len(host["after"]) == 3 and 0 <= host["steal"] <= 1
    assert json.loads(versions)["ns3"].startswith("3.") and json.loads(versions)["seed"] == 1
    assert json.loads(spec)["seed"] == 1
    [(objects, plt, stall)] = rows(db, "SELECT objects_total, plt_s, stall_s FROM pages WHERE valid=1 AND ok=1")
    assert objects == 200 and 1 < plt < 20 and stall is not None
    report = runner.invoke(report_app, ["summary", "--db", str(db)])
    assert report.exit_code == 0, report.output
    row = next(line for line in report.output.splitlines() if "confucius" in line and "gcc" in line)
    cells = [cell.strip() for cell in row.strip("│ ").split("│")]
    assert cells[:3] == ["confucius", "gcc", "1"]   # one load
    assert float(cells[3]) == round(stall, 3) and float(cells[9]) == round(plt, 2)
    assert runner.invoke(report_app, ["runs", "--db", str(db)]).exit_code == 0


def test_each_load_starts_after_the_warm_up_and_the_labs_own_phase(tmp_path, small):
    small(pages='["flows-3-size-30000", "flows-2-size-20000"]', sim='[warmup]\nphase = "4s"')
    scenario = load(tmp_path / "small.toml")
    [task] = [t for t in plan(scenario)[0] if t.cell.cell.scheduler.name == "confucius"]
    phases = [keys.load_phase_s(scenario, task.cell.cell, ref) for ref in scenario.web.pages]
    assert [p.start_s for p in task.pages] == [round(3 + phase, 3) for phase in phases]
    assert len(set(phases)) == 2 and all(0 < phase < 4 for phase in phases)
    db = tmp_path / "sim.sqlite"
    result = runner.invoke(app, ["run", str(tmp_path / "small.toml"), "--db", str(db), "-s", "confucius"])
    assert result.exit_code == 0, result.output
    # Each episode's own clock starts with its RT flow's first rate-log row (the run's
    # pages share one clock: store.run_offsets).
    starts = [(load - flow) / 1e9 for load, flow in rows(
        db, "SELECT p.load_start_ns, f.started_ns FROM pages p JOIN flows f ON f.run_id = p.run_id "
            "AND f.kind = 'rt' AND f.session = p.session ORDER BY p.number")]
    assert starts == [pytest.approx(p.start_s, abs=0.01) for p in task.pages]


SESSION = 'mode = "continuous"\ninterval = "8s"\ntimeout = "8s"\npages_per_run = 3'


def test_a_continuous_session_is_one_simulation_with_a_page_every_interval(tmp_path, small):
    """The papers' sessions: one RT flow, its first page after the warm-up and that page's
    phase, each next one `interval` after the one before; each page's window runs to the
    next page's start, the last one's until the video is calm again."""
    small(pages='["flows-3-size-30000", "flows-2-size-20000", "flows-4-size-10000"]', web=SESSION,
          sim='[warmup]\nphase = "4s"')
    scenario = load(tmp_path / "small.toml")
    [task] = [t for t in plan(scenario)[0] if t.cell.cell.scheduler.name == "confucius"]
    first = round(3 + keys.load_phase_s(scenario, task.cell.cell, scenario.web.pages[0]), 3)
    assert task.session and [p.start_s for p in task.pages] == [first, first + 8, first + 16]
    db = tmp_path / "sim.sqlite"
    result = runner.invoke(app, ["run", str(tmp_path / "small.toml"), "--db", str(db), "-s", "confucius"])
    assert result.exit_code == 0, result.output
    assert "a page every interval = 8 s" in result.output
    assert rows(db, "SELECT mode, status FROM runs") == [("continuous", "ok")]
    [(flow_start,)] = rows(db, "SELECT started_ns FROM flows WHERE kind = 'rt'")   # one RT session
    pages = rows(db, "SELECT session, load_start_ns, window_end_ns, ok, calm, warmups FROM pages ORDER BY number")
    assert [p[0] for p in pages] == [0, 0, 0] and all(p[3] for p in pages)
    assert [(p[1] - flow_start) / 1e9 for p in pages] == [pytest.approx(p.start_s, abs=0.01) for p in task.pages]
    assert [p[2] for p in pages[:2]] == [p[1] for p in pages[1:]]        # to the next page's start
    assert pages[2][2] < pages[2][1] + 8e9 and pages[2][4] is not None   # the last: its tail
    assert [p[5] for p in pages] == [1, None, None]                      # warmed up once


def test_a_session_whose_pages_could_overlap_is_refused(tmp_path, small):
    small(web='mode = "continuous"\ninterval = "5s"')
    result = runner.invoke(app, ["run", str(tmp_path / "small.toml"), "--db", str(tmp_path / "x.sqlite")])
    assert result.exit_code == 2
    assert "interval (5 s) is shorter than a load's timeout (60 s)" in " ".join(result.output.split())


def test_the_pages_sampling_asks_for_confucius_flows_only_when_the_scenario_keeps_them(tmp_path, small):
    def options(sim: str) -> list[list[str]]:
        [task] = [t for t in plan(load(small(sim=sim)))[0] if t.cell.cell.scheduler.name == "confucius"]
        return [page.sampling.args(tmp_path) for page in task.pages]
    [flows], [queues] = options(""), options('samples = "queues"')
    assert f"--flow-log={tmp_path / 'flows.jsonl'}" in flows and "--flow-from=1.0s" in flows    # 2 s before the load
    assert queues == [o for o in flows if not o.startswith("--flow-")]
    assert f"--qdisc-log={tmp_path / 'qdisc.jsonl'}" in queues


def test_a_sweep_runs_chunk_by_chunk_across_the_schedulers_as_the_labs_matrix(tmp_path, small):
    # A sweep stopped part-way then holds the same pages for every scheduler.
    scenario = load(small(pages='["flows-3-size-30000", "flows-2-size-20000", "flows-4-size-10000"]',
                          web="pages_per_run = 1"))
    order = [(t.chunk, t.cell.cell.scheduler.name) for t in plan(scenario)[0]]
    assert order == [(c, s) for c in range(3) for s in ("fq_codel", "confucius")]


def test_the_tcp_mode_runs_and_what_has_no_counterpart_is_skipped_with_why(tmp_path, small):
    db = tmp_path / "tcp.sqlite"
    scenario = small(controllers='["tcp-bbr", "tcp-vegas", "pion-gcc"]')
    result = runner.invoke(app, ["run", str(scenario), "--db", str(db), "-s", "confucius"])
    assert result.exit_code == 0, result.output
    assert "skipped confucius / pion-gcc: the RT flow pion-gcc is not simulated" in result.output
    assert "skipped confucius / tcp" not in result.output
    assert "note: tcp-bbr, tcp-vegas: rtflow's TCP mode over ns-3's own congestion controls" in result.output
    runs = rows(db, "SELECT controller, status, tc_commands FROM runs ORDER BY controller")
    assert [(c, s) for c, s, _ in runs] == [("tcp-bbr", "ok"), ("tcp-vegas", "ok")]
    assert all(f"--rt={c}" in json.loads(args) for c, _, args in runs)
    pages = rows(db, "SELECT r.controller, p.plt_s, p.stall_s FROM pages p JOIN runs r ON p.run_id = r.id "
                     "WHERE p.valid=1 AND p.ok=1 ORDER BY r.controller")
    assert [c for c, _, _ in pages] == ["tcp-bbr", "tcp-vegas"]
    assert all(0 < plt < 10 and stall is not None for _, plt, stall in pages)
    frames = rows(db, "SELECT COUNT(*), SUM(packets IS NULL) FROM frames")
    assert frames[0][0] > 0 and frames[0][0] == frames[0][1]    # rtflow's TCP rows: no packet counts


def test_several_rt_flows_of_a_cell_run_side_by_side_each_with_its_port_and_frames(tmp_path, small):
    db = tmp_path / "multi.sqlite"
    scenario = small(controllers='[["gcc", "gcc", "copa"], ["fixed-2mbit", "fixed-3mbit"]]')
    result = runner.invoke(app, ["run", str(scenario), "--db", str(db), "-s", "confucius"])
    assert result.exit_code == 0, result.output
    assert ("skipped confucius / fixed-2mbit+fixed-3mbit: the simulator starts every RT flow of a cell at "
            "one rate") in result.output
    [(controller, args)] = rows(db, "SELECT controller, tc_commands FROM runs WHERE status = 'ok'")
    assert controller == "gcc+gcc+copa" and "--rt=gcc,gcc,copa" in json.loads(args)
    flows = rows(db, "SELECT f.number, f.label, f.port, COUNT(x.frame_id) FROM flows f "
                     "JOIN frames x ON x.flow_id = f.id WHERE f.kind = 'rt' GROUP BY f.id ORDER BY f.number")
    assert [(n, label, port) for n, label, port, _ in flows] == [(0, "gcc", 5000), (1, "gcc", 5001),
                                                                 (2, "copa", 5002)]
    assert all(frames > 100 for *_, frames in flows)   # 3 s of warm-up at 30 fps, then the load
    # The load's stall is the flows' summed (metrics.load_metrics), as the lab's multi-flow runs.
    [(stall,)] = rows(db, "SELECT stall_s FROM pages WHERE valid = 1")
    assert stall is not None and stall >= 0
    report = runner.invoke(report_app, ["rt-flows", "--db", str(db), "--json"])
    assert report.exit_code == 0, report.output
    [cell] = json.loads(report.output)
    assert (cell["controller"], cell["flows"], cell["scheduler"]) == ("gcc+gcc+copa", 3, "confucius")
    assert cell["stall_per_flow_s"] == pytest.approx(stall / 3)


def test_pages_of_n_flows_are_reported_as_the_papers_sweeps(tmp_path, small):
    db, out = tmp_path / "sweep.sqlite", tmp_path / "figures"
    scenario = small(extra=', "fq"', pages='["flows-3-size-30000", "flows-6-size-30000"]')
    result = runner.invoke(app, ["run", str(scenario), "--db", str(db), "-s", "confucius,fq"])
    assert result.exit_code == 0, result.output
    report = runner.invoke(report_app, ["sweeps", "--db", str(db), "-s", "confucius,fq", "--json"])
    assert report.exit_code == 0, report.output
    points = json.loads(report.output)
    assert [(p["swept"], p["scheduler"], p["flows"]) for p in points if p["swept"] == "flows"] == [
        ("flows", "confucius", 3), ("flows", "confucius", 6), ("flows", "fq", 3), ("flows", "fq", 6)]
    assert all(0 < p["jfi"] <= 1 and p["plt_s"] > 0 for p in points)
    assert [p["plt_vs_fq"] for p in points if p["scheduler"] == "fq"] == [0.0, 0.0, 0.0]
    figures = runner.invoke(report_app, ["plots", "--db", str(db), "--out", str(out)])
    assert figures.exit_code == 0, figures.output
    assert (out / "sim-small-flows-gcc.png").exists() and not (out / "sim-small-sizes-gcc.png").exists()


def test_with_the_bottleneck_before_the_router_the_scheduler_changes_nothing(tmp_path, small):
    # Seed 000 Fig. 27: the narrow link an unmanaged FIFO before the router, whose own link
    # runs at 100 Mbit/s and never queues, so every scheduler's load is the same but for
    # the shapers' own difference there (confucius's, TBF's): a frame time or so a burst.
    from confucius.lab import runner as lab

    db, path = tmp_path / "before.sqlite", small(extra=', "pfifo"')
    path.write_text(path.read_text().replace("[link]\n", '[link]\nbottleneck = "before"\n'))
    result = runner.invoke(app, ["run", str(path), "--db", str(db), "-s", "confucius,pfifo"])
    assert result.exit_code == 0, result.output
    args = rows(db, "SELECT tc_commands FROM runs")
    assert all({"--bottleneck=before", "--router-rate=100000000bps"} <= set(json.loads(a)) for (a,) in args)
    [(plt, stall), (other_plt, other_stall)] = rows(db, "SELECT plt_s, stall_s FROM pages WHERE valid = 1")
    assert stall == other_stall and abs(plt - other_plt) < 0.5e-3
    with pytest.raises(lab.RunnerError, match="link.bottleneck = 'before': the lab's bottleneck is the router's"):
        lab.plan(load(path), None)


def test_run_refuses_what_the_simulator_has_no_counterpart_for(tmp_path, small):
    result = runner.invoke(app, ["run", str(REPO / "scenarios" / "four-cca.toml"), "--db",
                                 str(tmp_path / "x.sqlite")])
    assert result.exit_code == 2 and "page loads" in result.output
    typo = small(sim="speed = 2")
    result = runner.invoke(app, ["run", str(typo), "--db", str(tmp_path / "x.sqlite")])
    assert result.exit_code == 2 and "sim: unknown key speed" in result.output
    two_hosts = small()
    two_hosts.write_text(two_hosts.read_text().replace("[link]\n", "[link]\nclients = 2\nnat = true\n"))
    result = runner.invoke(app, ["run", str(two_hosts), "--db", str(tmp_path / "x.sqlite")])
    assert result.exit_code == 2 and "the simulator has no link.clients 2 (one client host), link.nat" in \
        result.output


def test_a_sweep_on_a_local_dask_cluster_resumes_and_reports_a_failed_cell(tmp_path, small):
    db = tmp_path / "sweep.sqlite"
    bad = '[schedulers.variants]\nconfucius-bad = { base = "confucius", options = "flows 0" }'
    scenario = small(extra=', "confucius-bad"', variants=bad)
    first = runner.invoke(app, ["sweep", str(scenario), "--db", str(db), "-s", "fq_codel"])
    assert first.exit_code == 0, first.output
    assert "1 simulated runs (0 failed), 1 pages" in first.output
    second = runner.invoke(app, ["sweep", str(scenario), "--db", str(db)])
    assert second.exit_code == 0, second.output
    # fq_codel's page was in the database: only confucius and the failing variant ran.
    assert "2 simulated runs (1 failed), 1 pages" in second.output
    assert "confucius-bad / gcc" in second.output and "flows must be between 1 and 32768" in second.output
    runs = rows(db, "SELECT scheduler, status FROM runs ORDER BY id")
    assert runs[0] == ("fq_codel", "ok") and sorted(runs[1:]) == [("confucius", "ok"), ("confucius-bad", "failed")]
    assert rows(db, "SELECT COUNT(*) FROM pages WHERE valid=1")[0][0] == 2
    # Another program (here the same one with a byte more) may not add to these cells.
    rebuilt = tmp_path / "bottleneck"
    rebuilt.write_bytes(BOTTLENECK.read_bytes() + b"\0")
    assert "Permission denied" in runner.invoke(app, ["sweep", str(scenario), "--db", str(db), "--binary", str(rebuilt)]).output
    rebuilt.chmod(0o755)
    third = runner.invoke(app, ["sweep", str(scenario), "--db", str(db), "--binary", str(rebuilt)])
    assert third.exit_code == 2 and "resuming would mix two versions" in " ".join(third.output.split())
    assert f"bottleneck {program_digest(BOTTLENECK)} then, {program_digest(rebuilt)} now" in third.output
    assert len(rows(db, "SELECT id FROM runs")) == 3


def test_a_worker_whose_program_is_not_the_recorded_one_simulates_nothing(tmp_path, small):
    [task] = [t for t in plan(load(small()))[0] if t.cell.cell.scheduler.name == "confucius"]
    with pytest.raises(SimError, match=f"bottleneck: {program_digest(BOTTLENECK)} here, 0{{16}} recorded"):
        simulate(task, BOTTLENECK, "0" * 16)


def frame(capture_s: float, delay_ms: float | None) -> rtflow.Frame:
    return rtflow.Frame(frame_id=round(capture_s * 60), capture_ns=round(capture_s * 1e9), key=False,
                        size_bytes=1000, packets=1, packets_received=int(delay_ms is not None),
                        first_arrival_ns=None, last_arrival_ns=None, delay_ms=delay_ms,
                        complete=delay_ms is not None)


def test_a_loads_window_ends_as_the_labs_tail_once_two_seconds_of_frames_were_on_time():
    # Load ended at 10 s; frames every 0.1 s; one late frame at 10.5 s, one lost at 11.0 s.
    frames = [frame(10 + i / 10, 50.0) for i in range(60)]
    frames[5], frames[10] = frame(10.5, 400.0), frame(11.0, None)
    end, calm = window_end(frames, 10_000_000_000, settle_s=15)
    assert calm and end == round(13.1 * 1e9)      # the first frame with 2 s of on-time frames before it
    end, calm = window_end(frames, 10_000_000_000, settle_s=2.5)
    assert not calm and end == 12_500_000_000     # not calm by the settle: the window ends there


def test_confucius_aqm_options_of_a_variant_reach_the_simulated_core():
    # tc's syntax: aqm_target, aqm_interval and aqm_settle take a time, ecn and noecn none
    # (as fq_codel's).
    choice = SchedulerChoice("confucius-aqm", "confucius",
                             "aqm_target 2ms noecn aqm_interval 50ms aqm_settle 300ms")
    args = scheduler_args(choice, describe())
    core = run_bottleneck([*args, "--duration=0.5s"])["core"]
    assert (core["aqm_target_ns"], core["aqm_interval_ns"], core["aqm_settle_ns"], core["ecn"]) == \
        (2e6, 50e6, 3e8, False)
    ecn_on = scheduler_args(SchedulerChoice("c", "confucius", "noecn ecn"), describe())
    assert ecn_on[-1] == "--ns3::ConfuciusQueueDisc::UseEcn=true"
    assert scheduler_args(SchedulerChoice("c", "confucius", "ecn aqm_target"), describe()) == \
        "c: option 'aqm_target' needs a value"
    assert scheduler_args(SchedulerChoice("c", "confucius", "ecn on"), describe()) == \
        "c: option 'on' has no ConfuciusQueueDisc attribute"


def test_the_scenario_chooses_whose_tcp_defaults_every_connection_takes(small):
    linux = plan(load(small()))[0][0].cell.args
    ns3 = plan(load(small(sim='tcp = "ns3"')))[0][0].cell.args
    assert "--tcp=linux" in linux and "--tcp=ns3" in ns3
    with pytest.raises(ScenarioError, match="tcp"):
        load(small(sim='tcp = "freebsd"'))


def test_the_scenarios_retransmit_window_reaches_the_simulated_sender(small):
    # rtflow resends lost pieces of frames younger than rt.retransmit (the lab's NACK and
    # RTX); the simulated sender must do as the lab's, not leave them lost.
    resending = plan(load(small(rt='retransmit = "150ms"')))[0][0].cell.args
    assert "--ns3::RtFlowSender::RetransmitWindow=0.15s" in resending
    assert "--ns3::RtFlowSender::RetransmitWindow=0.0s" in plan(load(small()))[0][0].cell.args


def test_the_scenarios_http_versions_reach_the_page_and_the_record(tmp_path, small):
    # HTTP/2 everywhere, on a corpus page with several objects per domain: each page line
    # names its domain's version, the load finishes on one connection per domain, which
    # says so, and the cell's key is another than HTTP/1.1's.
    h1 = load(small(pages='["p0000"]'))
    h2 = load(small(pages='["p0000"]', web='http = "h2"'))
    [task] = [t for t in plan(h2)[0] if t.cell.cell.scheduler.name == "confucius"]
    assert all(line.endswith(" h2") for page in task.pages for line in page.text.splitlines())
    assert all(not line.endswith(" h2") for t in plan(h1)[0] for page in t.pages for line in page.text.splitlines())
    cell = task.cell.cell
    assert keys.cell_key(h1, cell) != keys.cell_key(h2, cell)
    db = tmp_path / "sim.sqlite"
    result = runner.invoke(app, ["run", str(tmp_path / "small.toml"), "--db", str(db), "-s", "confucius"])
    assert result.exit_code == 0, result.output
    connections = [json.loads(d)["protocol"] for (d,) in rows(db, "SELECT details FROM flows WHERE kind = 'web'")]
    [(ok, objects, domains)] = rows(db, "SELECT MIN(p.ok), COUNT(*), COUNT(DISTINCT o.domain) FROM objects o "
                                        "JOIN pages p ON p.id = o.page_id")
    assert ok == 1 and connections == ["h2"] * domains and domains < objects
    with pytest.raises(ScenarioError, match="http"):
        load(small(web='http = "spdy"'))


def test_the_lab_loads_pages_over_http2_and_refuses_http3_in_one_line(small):
    from confucius.lab import runner as lab

    assert lab.plan(load(small(web='http = "h2"')), None)
    for http in ("h3", "table3"):
        with pytest.raises(lab.RunnerError, match=r"speaks HTTP/1.1 and HTTP/2, not HTTP/3 \(QUIC\)"):
            lab.plan(load(small(web=f'http = "{http}"')), None)


def test_a_grid_is_swept_point_by_point_and_reported_as_one(tmp_path, small):
    # Two RT applications' rates as a grid: two scenarios in the database, each with its
    # own cells, and `report promise --scenario` reads both by the grid's name.
    path = small(extra=', "fq"')
    path.write_text(path.read_text().replace('name = "sim-small"', 'name = "grid"')
                    + '\n[grid]\nrt.max_rate = ["6mbit", "12mbit"]\n')
    db = tmp_path / "sim.sqlite"
    result = runner.invoke(app, ["run", str(path), "--db", str(db)])
    assert result.exit_code == 0, result.output
    assert "grid-6mbit: 3 simulated runs" in result.output and "grid-12mbit: 3 simulated runs" in result.output
    assert rows(db, "SELECT DISTINCT name FROM scenarios ORDER BY id") == [("grid-6mbit",), ("grid-12mbit",)]
    assert rows(db, "SELECT COUNT(DISTINCT cell_key) FROM runs") == [(6,)]
    report = runner.invoke(report_app, ["promise", "--db", str(db), "--scenario", "grid", "--json"])
    assert report.exit_code == 0, report.output
    found = json.loads(report.output)
    assert [(r["scenario"], r["scheduler"]) for r in found] == [("grid-6mbit", "confucius"), ("grid-12mbit", "confucius")]
    assert all(r["plt_vs_fq"]["pairs"] == 1 for r in found)
    missing = runner.invoke(report_app, ["promise", "--db", str(db), "--scenario", "home"])
    assert missing.exit_code == 2 and "no scenario home (nor a grid of that name)" in missing.output
    mapped = runner.invoke(report_app, ["delay-map", str(path), "--db", str(db), "--json", "--out",
                                        str(tmp_path / "fig4.png")])
    assert mapped.exit_code == 0, mapped.output
    cells = json.loads(mapped.stdout)
    assert [(c["rt_max_bps"], c["scheduler"]) for c in cells] == [
        (6e6, "confucius"), (6e6, "fq"), (6e6, "fq_codel"), (12e6, "confucius"), (12e6, "fq"), (12e6, "fq_codel")]
    assert (tmp_path / "fig4.png").stat().st_size > 10_000
