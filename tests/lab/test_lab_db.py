# SPDX-License-Identifier: MIT
"""The results database and the matrix's bookkeeping, on a run folder written by hand in the
guest's formats (no measurement: the parser, the tables and the resume logic are tested).

The hand-made run: one GCC session at 60 fps, one page load of two objects on two
connections, two qdisc samples, an irtt probe and a bulk flow."""

import csv
import json
import sqlite3
from pathlib import Path

import pytest

from confucius import rtflow
from confucius.experiment import db_runs, keys, results, scenario as sc
from confucius.lab import runner, vm
from confucius.experiment.db import Database, DatabaseError
from confucius.provenance import program_digest
from confucius.experiment.results import DISTURBED_GAP_MS, ResultsError
from confucius.lab.run_folder import read_run
from confucius.report import data

OFFSET = 1_700_000_000_000_000_000   # wall clock - monotonic, ns
LOAD_START = 20_000_000_000          # the client's start on the monotonic clock
FRAME_NS = 16_666_667
TC_COMMANDS = ["qdisc add dev rtr-cli root handle 1: htb default 1",
               "class add dev rtr-cli parent 1: classid 1:1 htb rate 20000000bit burst 3028b cburst 3028b quantum 1514",
               "qdisc add dev rtr-cli parent 1:1 handle 10: pfifo limit 1000"]

SCENARIO = """
name = "handmade"
[link]
rate = "20mbit"
[schedulers]
names = ["pfifo", "fq"]
[rt]
controllers = ["gcc"]
[web]
pages = ["flows-2-size-1000", "flows-3-size-1000"]
pages_per_run = 1
"""


def frame_rows(count: int, slow: set[int], lost: set[int]):
    for i in range(count):
        capture = LOAD_START - 2_000_000_000 + i * FRAME_NS
        delay = 250.0 if i in slow else 30.0
        yield [i, capture, 1 if i == 0 else 0, 5000, 5, 4 if i in lost else 5, capture + 10_000_000,
               "" if i in lost else capture + int(delay * 1e6), "" if i in lost else delay, 0 if i in lost else 1]


def write_csv(path: Path, header, rows) -> None:
    with path.open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(header)
        writer.writerows(rows)


def report(start_ns: int) -> dict:
    def obj(i, conn, first, last):
        return {"id": f"f{i}", "domain": f"d{i}.web.test", "size": 1000, "parent": None, "depth": 0,
                "status": "done", "connection": conn, "ready_us": 0, "request_us": 100_000 + i,
                "first_byte_us": first, "last_byte_us": last, "received": 1000, "error": None}
    return {"format": "confucius-web-load/1", "page": "flows-2-size-1000", "ok": True, "error": None,
            "start_unix_us": (start_ns + OFFSET) // 1000, "plt_us": 1_100_000, "cca": "cubic",
            "max_per_domain": 6, "objects_total": 2, "objects_done": 2,
            "connections": [{"id": c, "domain": f"d{c}.web.test", "server": "198.18.128.1:80", "local_port": 40000 + c,
                             "opened_us": 0, "established_us": 50_000, "objects": 1, "bytes": 1200, "error": None}
                            for c in (0, 1)],
            "objects": [obj(0, 0, 200_000, 600_000), obj(1, 1, 300_000, 1_100_000)]}


def hand_spec(unit_key: str, page_key: str = "flows-2-size-1000") -> dict:
    """The spec.json of the hand-made run, as runner.build_spec writes it."""
    return {"format": "confucius-lab-run/1", "scenario": "handmade", "cell_key": "c1", "mode": "episodes",
            "topology": {"rtt": "40ms", "kind": "pfifo", "shaping": "egress"}, "tc_commands": TC_COMMANDS,
            "trace": None,
            "rt": {"flows": [{"mode": "gcc", "cca": None, "rate": None, "label": "gcc", "port": 5000,
                              "fair_bps": 8e6}],
                   "fps": 60, "start_rate": "1000000bit", "min_rate": "150000bit", "max_rate": "8000000bit",
                   "retransmit_window": "0ms", "cpu": "realtime"},
            "warmup": {"min_s": 5.0, "max_s": 60.0, "hold_s": 3.0, "tolerance": 0.1, "min_share": 0.5,
                       "retries": 2},
            "web": {"cca": "cubic", "max_per_domain": 6, "timeout_s": 60.0, "interval_s": 0.0, "settle_s": 10.0},
            "pages": [{"id": "flows-2-size-1000", "file": "inputs/page-0.json", "key": page_key,
                       "unit_key": unit_key}],
            "hosts": "inputs/hosts.txt", "addresses": ["198.18.128.1"],
            "bulk": [{"cca": "cubic", "start_s": 0.0, "duration_s": None}], "probes": {"interval_s": 0.01},
            "duration_s": None, "stats_interval_s": 0.2,
            "binaries": {"web_client": "web-client", "web_server": "web-server"}}


def make_run(folder: Path, unit_key: str, gap_ms: float = 50.0, page_key: str = "flows-2-size-1000",
             start_bps: float = 16e6) -> Path:
    """A run folder as the guest leaves it; the sender's log has one gap of `gap_ms`, its
    target over the warm-up's last seconds is `start_bps`."""
    (folder / "rt").mkdir(parents=True)
    (folder / "pages").mkdir()
    (folder / "spec.json").write_text(json.dumps(hand_spec(unit_key, page_key)))
    # 600 frames from 2 s before the load: frames 200-203 late, 300 lost.
    write_csv(folder / "rt" / "s0-f0-frames.csv", rtflow.FRAME_COLUMNS, frame_rows(600, set(range(200, 204)), {300}))
    times = list(range(LOAD_START - 6_000_000_000, LOAD_START + 8_000_000_000, 50_000_000))
    times = [t + (int(gap_ms * 1e6) - 50_000_000 if t >= LOAD_START + 1_000_000_000 else 0) for t in times]
    write_csv(folder / "rt" / "s0-f0-rate.csv", rtflow.RATE_COLUMNS,
              ([t, 16e6, 40e6, 16e6, 16e6, 45.0, 0.0, 20000, 1000, ""] for t in times))
    (folder / "pages" / "0.json").write_text(json.dumps(report(LOAD_START)))
    qdiscs = [{"kind": "htb", "handle": "1:", "root": True, "bytes": 10, "packets": 1, "drops": 0, "overlimits": 0,
               "requeues": 0, "backlog": 0, "qlen": 0},
              {"kind": "confucius", "handle": "10:", "parent": "1:1", "bytes": 10, "packets": 1, "drops": 0,
               "overlimits": 0, "requeues": 0, "backlog": 0, "qlen": 0, "new_flows": 2, "old_flows": 1,
               "classes": [{"class": 1, "flows": 1}]}]
    (folder / "qdisc.jsonl").write_text("".join(json.dumps({"time_ns": LOAD_START + i * 200_000_000, "qdiscs": qdiscs})
                                                + "\n" for i in range(2)) + '{"time_ns": 1, "qdi')
    (folder / "irtt.json").write_text(json.dumps({"round_trips": [
        {"lost": "false", "timestamps": {"client": {"send": {"wall": OFFSET + LOAD_START}}}, "delay": {"rtt": 41_000_000}},
        {"lost": "true", "timestamps": {"client": {"send": {"wall": OFFSET + LOAD_START + 10}}}, "delay": {}}]}))
    (folder / "bulk-0.json").write_text(json.dumps({"intervals": [{"sum": {"end": 0.5, "bits_per_second": 8e6}}],
                                                    "end": {"sum_received": {"bytes": 500_000}},
                                                    "error": "interrupt - the client has terminated"}))
    events = {"format": "confucius-lab-events/1", "clock_offset_ns": OFFSET, "mode": "episodes",
              "tc_commands": TC_COMMANDS,
              "t0_ns": LOAD_START - 8_000_000_000, "bulk_started_ns": {"0": LOAD_START},
              "sessions": [{"index": 0, "started_ns": LOAD_START - 8_000_000_000, "stopped_ns": LOAD_START + 9_000_000_000,
                            "flows": [{"flow": 0, "label": "gcc", "port": 5000, "frames": "rt/s0-f0-frames.csv",
                                       "rates": "rt/s0-f0-rate.csv"}]}],
              "pages": [{"number": 0, "id": "flows-2-size-1000", "started_ns": LOAD_START - 300_000_000,
                         "ended_ns": LOAD_START + 1_200_000_000, "exit": 0, "stderr": "", "report": "pages/0.json",
                         "warmup_s": 7.5, "converged": True, "rt_target_bps": [start_bps], "session": 0,
                         "window_end_ns": LOAD_START + 8_000_000_000 - 2 * FRAME_NS + 1, "calm": True}]}
    (folder / "events.json").write_text(json.dumps(events))
    return folder


def database_of_schema(path: Path, version: int, *undo: str) -> Path:
    """A database as an older schema version left it: today's, with `undo`'s SQL taking back
    what came later, and `version` recorded; opening it again upgrades it."""
    Database(path).close()
    with sqlite3.connect(path) as conn:
        for statement in undo:
            conn.execute(statement)
        conn.execute("UPDATE meta SET value=? WHERE key='schema_version'", (str(version),))
    return path


def schema_version(db: Database) -> str:
    return db.query("SELECT value FROM meta WHERE key='schema_version'")[0][0]


@pytest.fixture
def scenario(tmp_path):
    path = tmp_path / "handmade.toml"
    path.write_text(SCENARIO)
    return sc.load(path)


def test_a_run_folder_reads_back(tmp_path):
    run = read_run(make_run(tmp_path / "run", "u1"))
    flow = run.rt_flows()[0]
    assert (flow.label, flow.port, len(flow.frames), len(flow.rates)) == ("gcc", 5000, 600, 280)
    page = run.pages[0]
    assert page.load_start_ns == LOAD_START
    assert page.first_request_ns == LOAD_START + 100_000_000
    assert page.valid and page.invalid_reason is None
    assert [len(q) for _, q in run.qdisc_samples] == [2, 2]  # the sample cut short is skipped
    assert run.probes == [(LOAD_START, 41.0), (LOAD_START + 10, None)]
    assert run.bulk[0].samples == [(LOAD_START + 500_000_000, 8e6)] and run.bulk[0].error is None


def test_a_paused_sender_makes_the_page_invalid(tmp_path):
    page = read_run(make_run(tmp_path / "run", "u1", gap_ms=DISTURBED_GAP_MS + 50)).pages[0]
    assert not page.valid and "paused 300 ms" in page.invalid_reason


def test_broken_folders_are_refused_with_the_reason(tmp_path):
    with pytest.raises(ResultsError, match="spec.json is missing"):
        read_run(tmp_path)
    folder = make_run(tmp_path / "run", "u1")
    (folder / "events.json").write_text("{")
    with pytest.raises(ResultsError, match="events.json: not JSON"):
        read_run(folder)


def test_a_guest_that_ran_other_tc_commands_than_the_record_is_refused(tmp_path):
    folder = make_run(tmp_path / "run", "u1")
    events = json.loads((folder / "events.json").read_text())
    for ran in (TC_COMMANDS[:-1] + ["qdisc add dev rtr-cli parent 1:1 handle 10: fq_codel"], None):
        events["tc_commands"] = ran
        (folder / "events.json").write_text(json.dumps(events))
        with pytest.raises(ResultsError, match="not the run's record"):
            read_run(folder)


def test_the_record_of_the_bottleneck_is_what_the_spec_sends_and_the_row_stores(tmp_path, scenario):
    for engine, burst in (("qemu", 50_000), ("uml", 3028)):  # 20 ms of 20 Mbit/s; two packets
        scenario = sc.load(scenario.path, engine=engine)
        task = runner.plan(scenario, None)[0]
        record = runner.bottleneck_commands(scenario, task.cell)
        assert record == ["qdisc add dev rtr-cli root handle 1: htb default 1",
                          f"class add dev rtr-cli parent 1: classid 1:1 htb rate 20000000bit burst {burst}b "
                          f"cburst {burst}b quantum 1514",
                          "qdisc add dev rtr-cli parent 1:1 handle 10: pfifo limit 1000"]
        spec = runner.build_spec(scenario, task, {})
        assert spec.tc_commands == record and spec.topology.kind == "pfifo"
        row = runner._run_row(scenario, task, spec, tmp_path, {}, None)
        assert json.loads(row["tc_commands"]) == record


def test_a_task_whose_programs_are_not_those_recorded_is_refused_before_it_boots(tmp_path, scenario):
    # What a Dask worker built from another tree would run: the client records its own digests.
    task = runner.plan(scenario, None)[0]
    used = runner.built_parts(scenario, [task.cell.scheduler])
    here = runner.program_digests(used)
    results = tmp_path / "results"
    other = {**here, "rtflow": "0" * 16}
    with pytest.raises(runner.RunnerError, match=f"rtflow: {here['rtflow'] or 'not built'} here, 0{{16}} recorded"):
        runner.measure(task, scenario, results, {"binaries_sha256": other})
    assert not results.exists()
    runner.check_programs_recorded(scenario, task, {"binaries_sha256": here})


def test_cell_keys_name_the_setup_without_htb_s_bucket(scenario):
    # The form keys have always used: changing it would make every measured unit new.
    task = runner.plan(scenario, None)[0]
    assert keys.conditions(scenario, task.cell).key_input()["tc"] == [
        "qdisc add dev rtr-cli root handle 1: htb default 1",
        "class add dev rtr-cli parent 1: classid 1:1 htb rate 20000000bit",
        "qdisc add dev rtr-cli parent 1:1 handle 10: pfifo limit 1000"]


def test_store_and_read_back_with_metrics(tmp_path):
    run = read_run(make_run(tmp_path / "run", "u1"))
    with Database(tmp_path / "lab.sqlite") as db:
        scenario_id = db.scenario_id("handmade", "abc", "h.toml", SCENARIO)
        info = {"cell_key": "c1", "scheduler": "pfifo", "scheduler_base": "pfifo", "scheduler_options": "",
                "tc_commands": "[]", "controller": "gcc", "rt_flows": "{}", "repetition": 0, "mode": "episodes",
                "rtt_s": 0.04, "buffer_packets": 1000, "status": "ok", "started_unix": 0.0,
                "results_dir": str(tmp_path / "run"), "spec": "{}", "engine": "uml", "time_mode": "inf-cpu"}
        db_runs.store_run(db, scenario_id, info, run)
        assert db.query("SELECT COUNT(*) FROM frames")[0][0] == 600
        assert db.query("SELECT COUNT(*) FROM rt_rates")[0][0] == 280
        assert db.query("SELECT COUNT(*) FROM objects")[0][0] == 2
        assert [tuple(r) for r in db.query("SELECT kind, COUNT(*) FROM flows GROUP BY kind ORDER BY kind")] == \
            [("bulk", 1), ("rt", 1), ("web", 2)]
        assert tuple(db.query("SELECT COUNT(*), SUM(xstats LIKE '%new_flows%') FROM qdisc_stats")[0]) == (4, 2)
        page = db.query("SELECT * FROM pages")[0]
        # PLT from the first request (100 ms) to the last byte (1.1 s).
        assert page["plt_s"] == pytest.approx(1.0) and page["plt_client_s"] == pytest.approx(1.1)
        assert (page["valid"], page["connections"], page["bytes"]) == (1, 2, 2000)
        assert tuple(db.query("SELECT engine, time_mode FROM runs")[0]) == ("uml", "inf-cpu")
        results = data.page_results(db, "handmade")
    [r] = results
    # In the window (load start to its end, frames 120-597): 4 late frames and the lost one stall.
    assert r.stall_s == pytest.approx(5 / 60, rel=1e-6)
    assert r.max_delay_ms == 250.0 and r.lost_share == pytest.approx(1 / 478)
    assert r.p99_delay_ms == 30.0  # 4 of 477 delivered frames are late: under 1 %
    # The same metrics are stored with the page, for SQL readers of the database.
    assert (page["stall_s"], page["max_delay_ms"], page["p99_delay_ms"], page["lost_share"]) == \
        pytest.approx((r.stall_s, r.max_delay_ms, r.p99_delay_ms, r.lost_share))
    assert page["jfi"] == pytest.approx(r.jfi) and 0 < r.jfi <= 1


def test_a_database_of_another_kind_is_refused(tmp_path):
    other = tmp_path / "other.sqlite"
    sqlite3.connect(other).execute("CREATE TABLE t (x)").connection.commit()
    with pytest.raises(DatabaseError, match="not a results database"):
        Database(other)
    (tmp_path / "text.sqlite").write_text("not sqlite at all")
    with pytest.raises(DatabaseError):
        Database(tmp_path / "text.sqlite")


def _store(db: Database, scenario, task, folder: Path, gap_ms: float = 50.0, start_bps: float = 16e6,
           host_load: dict | None = None, engine: tuple = ("qemu", "real", None), versions: dict | None = None,
           status: str = "ok", started_unix: float = 0.0) -> None:
    run = read_run(make_run(folder, task.pages[0].key, gap_ms, page_key=task.pages[0].ref.key, start_bps=start_bps))
    sid = db.scenario_id(scenario.name, scenario.digest, str(scenario.path), scenario.text)
    db_runs.store_run(db, sid, {"cell_key": task.cell_key, "scheduler": task.cell.scheduler.name,
                       "scheduler_base": task.cell.scheduler.base, "scheduler_options": "", "tc_commands": "[]",
                       "controller": task.cell.controller, "rt_flows": "{}", "repetition": 0, "mode": "episodes",
                       "link_rate_bps": 20e6, "rtt_s": 0.04, "buffer_packets": 1000, "status": status, "started_unix": started_unix,
                       "results_dir": str(folder), "spec": "{}", "engine": engine[0], "time_mode": engine[1],
                       "seed": engine[2],
                       "host_load": json.dumps(host_load) if host_load else None,
                       "versions": json.dumps(versions) if versions else None}, run)


def test_the_matrix_resumes_where_it_stopped(tmp_path, scenario):
    with Database(tmp_path / "lab.sqlite") as db:
        first = runner.plan(scenario, db)
        # 2 schedulers x 2 pages, one page per run; chunks first, then schedulers.
        assert [(t.cell.scheduler.name, t.pages[0].ref.key) for t in first] == [
            ("pfifo", "flows-2-size-1000"), ("fq", "flows-2-size-1000"),
            ("pfifo", "flows-3-size-1000"), ("fq", "flows-3-size-1000")]
        _store(db, scenario, first[0], tmp_path / "a")
        _store(db, scenario, first[1], tmp_path / "b", gap_ms=DISTURBED_GAP_MS + 100)
        second = runner.plan(scenario, db)
        assert sorted(t.pages[0].key for t in second) == sorted(t.pages[0].key for t in first[1:])
        # Pages keep their chunk when resumed: pfifo's second page waits for fq's first.
        assert [(t.cell.scheduler.name, t.chunk) for t in second] == [("fq", 0), ("pfifo", 1), ("fq", 1)]
        # The disturbed measurement is retried until it has been tried `attempts` times.
        assert len(runner.plan(scenario, db, attempts=1)) == 2
        assert len(runner.plan(scenario, db, resume=False)) == 4
        # A changed condition is another measurement: nothing of it is done yet.
        changed = sc.parse(SCENARIO.replace('rate = "20mbit"', 'rate = "10mbit"'), scenario.path)
        assert len(runner.plan(changed, db)) == 4


def test_a_matrix_resumes_only_with_the_programs_that_measured_it(tmp_path, scenario, monkeypatch):
    program = tmp_path / "rtflow"
    program.write_bytes(b"the rtflow that measured")
    monkeypatch.setattr(runner.rtflow, "BINARY", program)
    then = program_digest(program)
    with Database(tmp_path / "lab.sqlite") as db:
        first = runner.plan(scenario, db)
        _store(db, scenario, first[0], tmp_path / "a", versions={"binaries_sha256": {"rtflow": then}})
        # A run that failed part-way keeps its valid pages, and they count as measured.
        _store(db, scenario, first[1], tmp_path / "b", versions={"binaries_sha256": {"rtflow": then}},
               status="failed")
        assert len(runner.plan(scenario, db)) == 2
        program.write_bytes(b"an rtflow rebuilt since")
        now = program_digest(program)
        with pytest.raises(DatabaseError, match=f"rtflow {then} then, {now} now"):
            runner.plan(scenario, db)
        with pytest.raises(DatabaseError, match=f"rtflow {then} then, {now} now"):
            runner.plan(scenario, db, schedulers=["fq"])
        # Afresh, or in cells the other program never measured, nothing is mixed.
        assert len(runner.plan(scenario, db, resume=False)) == 4
        more = sc.parse(SCENARIO.replace('["pfifo", "fq"]', '["pfifo", "fq", "cake"]'), scenario.path)
        assert len(runner.plan(more, db, schedulers=["cake"])) == 2


def test_a_report_names_the_rows_that_pool_runs_of_different_programs(tmp_path, scenario, capsys):
    """What a resume refuses, `--again` and `lab merge` still pool: the report says so."""
    from confucius.report import cli
    with Database(tmp_path / "lab.sqlite") as db:
        tasks = runner.plan(scenario, db)  # pfifo and fq on the first page, then on the second
        _store(db, scenario, tasks[0], tmp_path / "a", versions={"binaries_sha256": {"rtflow": "aa", "uml": "k"}})
        _store(db, scenario, tasks[2], tmp_path / "b", versions={"binaries_sha256": {"rtflow": "bb", "uml": "k"}})
        _store(db, scenario, tasks[1], tmp_path / "c", versions={"binaries_sha256": {"rtflow": "aa"}})
        _store(db, scenario, tasks[3], tmp_path / "d")  # a run that records no digest is no evidence
        cell = (scenario.name, "pfifo", tasks[0].cell.controller)
        assert data.mixed_programs(db, data.page_results(db)) == {cell: {"rtflow": ["aa", "bb"]}}
    cli._pages(tmp_path / "lab.sqlite", None)
    printed = capsys.readouterr()
    assert "pfifo" not in printed.out
    assert f"{' / '.join(cell)} pools runs of different programs (sha256 rtflow aa, bb)" in printed.err


def test_a_cell_without_confucius_resumes_whatever_became_of_the_module(tmp_path, scenario, monkeypatch):
    module = tmp_path / "sch_confucius.ko"
    module.write_bytes(b"the module then")
    monkeypatch.setattr(vm, "PROJECT_MODULES", tmp_path)
    mixed = sc.parse(SCENARIO.replace('["pfifo", "fq"]', '["pfifo", "confucius"]'), scenario.path)
    then = program_digest(module)
    with Database(tmp_path / "lab.sqlite") as db:
        for task in runner.plan(mixed, db)[:2]:
            _store(db, mixed, task, tmp_path / task.cell.scheduler.name,
                   versions={"binaries_sha256": {"sch_confucius.ko": then}})
        module.write_bytes(b"the module rebuilt")
        assert [t.cell.scheduler.name for t in runner.plan(mixed, db, schedulers=["pfifo"])] == ["pfifo"]
        with pytest.raises(DatabaseError, match="sch_confucius.ko"):
            runner.plan(mixed, db)


def test_adding_a_scheduler_keeps_what_was_measured(tmp_path, scenario):
    with Database(tmp_path / "lab.sqlite") as db:
        task = runner.plan(scenario, db)[0]
        _store(db, scenario, task, tmp_path / "a")
        more = sc.parse(SCENARIO.replace('["pfifo", "fq"]', '["pfifo", "fq", "cake"]'), scenario.path)
        assert len(runner.plan(more, db)) == 5
        assert runner.plan(scenario, db, schedulers=["pfifo"])[0].pages[0].ref.key == "flows-3-size-1000"
        with pytest.raises(sc.ScenarioError, match="not in the scenario"):
            runner.plan(scenario, db, schedulers=["cake"])


def test_missing_built_parts_are_named_with_their_make_target(tmp_path, scenario, monkeypatch):
    monkeypatch.setattr(runner.rtflow, "BINARY", tmp_path / "no-rtflow")
    with pytest.raises(runner.RunnerError, match=r"no-rtflow \(build it with `make tools`\)"):
        runner.check_built(scenario)


def test_every_run_gets_a_folder_of_its_own_pages_or_not(tmp_path, scenario):
    timed = sc.parse('duration = "30s"\n' + SCENARIO.split("[web]")[0], scenario.path)
    task = runner.plan(timed, None)[0]
    assert not task.pages
    first, second = (runner._run_dir(tmp_path / "runs", timed, task) for _ in range(2))
    assert first.is_dir() and second.is_dir() and first != second


def test_report_summary_common_compares_the_pages_every_scheduler_met(tmp_path, scenario):
    from typer.testing import CliRunner
    from confucius.report.cli import app as report_app

    path = tmp_path / "lab.sqlite"
    with Database(path) as db:
        tasks = runner.plan(scenario, db)  # pfifo and fq on page 2, then on page 3
        for n, task in enumerate(tasks[:3]):  # stopped before fq met page 3, where pfifo's RT flow started low
            _store(db, scenario, task, tmp_path / f"r{n}", start_bps=4e6 if n == 2 else 16e6)
    loads, said = {}, {}
    for flags in ([], ["--common"], ["--min-start", "0.5"], ["--min-start", "0.5", "--common"]):
        out = tmp_path / "rows.json"
        result = CliRunner().invoke(report_app, ["summary", "--db", str(path), "--json", str(out), *flags])
        assert result.exit_code == 0, result.output
        loads[" ".join(flags)] = {row["scheduler"]: row["loads"] for row in json.loads(out.read_text())}
        said[" ".join(flags)] = " ".join(result.output.split())
    assert loads == {"": {"pfifo": 2, "fq": 1}, "--common": {"pfifo": 1, "fq": 1},
                     "--min-start 0.5": {"pfifo": 1, "fq": 1}, "--min-start 0.5 --common": {"pfifo": 1, "fq": 1}}
    assert "left out 1 of 3 loads of pages that not every scheduler met" in said["--common"]
    assert "left out 1 of 3 loads whose RT flow started below 0.5 of the link rate" in said["--min-start 0.5"]
    bad = CliRunner().invoke(report_app, ["summary", "--db", str(path), "--min-start", "2"])
    assert bad.exit_code != 0 and "min-start" in bad.output
    against = CliRunner().invoke(report_app, ["summary", "--db", str(path), "--also-against", "pfifo"])
    assert against.exit_code == 0 and "ΔPLT pfifo" in against.output, against.output
    missing = CliRunner().invoke(report_app, ["summary", "--db", str(path), "-s", "fq", "--also-against", "pfifo"])
    assert missing.exit_code != 0 and "--also-against pfifo: no loads of pfifo" in " ".join(missing.output.split())


def test_report_pages_of_keeps_the_pages_another_database_measured(tmp_path, scenario):
    """The lab beside the simulator: only the pages both measured (same scenario, controller,
    repetition and page) count, whatever the scheduler."""
    from typer.testing import CliRunner
    from confucius.report.cli import app as report_app

    tasks = runner.plan(scenario, None)  # pfifo and fq on page 2, then on page 3
    with Database(tmp_path / "lab.sqlite") as lab, Database(tmp_path / "other.sqlite") as other:
        for n, task in enumerate(tasks):
            _store(lab, scenario, task, tmp_path / f"r{n}")
        _store(other, scenario, tasks[2], tmp_path / "o")  # pfifo on page 3 only
    out = tmp_path / "rows.json"
    result = CliRunner().invoke(report_app, ["summary", "--db", str(tmp_path / "lab.sqlite"), "--json", str(out),
                                             "--pages-of", str(tmp_path / "other.sqlite")])
    assert result.exit_code == 0, result.output
    assert {row["scheduler"]: row["loads"] for row in json.loads(out.read_text())} == {"pfifo": 1, "fq": 1}
    assert "left out 2 of 4 loads of pages" in " ".join(result.output.split())


def test_a_run_records_the_cpu_time_the_host_lost_to_its_own_hypervisor(tmp_path, scenario):
    from typer.testing import CliRunner
    from confucius.report.cli import app as report_app

    before = results.HostSample((0.5, 0.4, 0.3), steal=100, total=1000)
    after = results.HostSample((1.5, 0.9, 0.5), steal=350, total=2000)
    record = results.host_load(before, after)
    assert record == {"before": [0.5, 0.4, 0.3], "after": [1.5, 0.9, 0.5], "steal": 0.25}
    assert results.host_load(after, after)["steal"] == 0.0
    here = results.HostSample.now()
    assert 0 <= here.steal <= here.total and here.total > 0
    path = tmp_path / "lab.sqlite"
    with Database(path) as db:
        _store(db, scenario, runner.plan(scenario, db)[0], tmp_path / "r0", host_load=record)
    result = CliRunner().invoke(report_app, ["runs", "--db", str(path)])
    assert result.exit_code == 0, result.output
    row = " ".join(result.output.split())
    assert "0.5 → 1.5" in row and "25%" in row
    assert "qemu (real)" in row


def test_the_runs_table_names_a_seeded_run_s_seed(tmp_path, scenario):
    from typer.testing import CliRunner
    from confucius.report.cli import app as report_app

    path = tmp_path / "lab.sqlite"
    with Database(path) as db:
        _store(db, scenario, runner.plan(scenario, db)[0], tmp_path / "r0", engine=("uml", "inf-cpu", 7))
        assert db.query("SELECT seed FROM runs")[0][0] == 7
    result = CliRunner().invoke(report_app, ["runs", "--db", str(path)])
    assert result.exit_code == 0, result.output
    assert "uml (inf-cpu, seed 7)" in " ".join(result.output.split())


def _counts(db: Database) -> dict[str, int]:
    tables = [r[0] for r in db.query("SELECT name FROM sqlite_master WHERE type='table' AND name != 'meta'")]
    return {t: db.query(f"SELECT COUNT(*) FROM {t}")[0][0] for t in tables}


def _frames_of(db: Database, scheduler: str) -> list[tuple]:
    return [tuple(r) for r in db.query(
        "SELECT fr.frame_id, fr.capture_ns, fr.delay_ms FROM frames fr JOIN flows f ON f.id = fr.flow_id "
        "JOIN runs r ON r.id = f.run_id WHERE r.scheduler = ? ORDER BY fr.frame_id", (scheduler,))]


def test_a_matrix_measured_in_two_databases_merges_into_one_that_resumes(tmp_path, scenario):
    """Two processes each measured part of one matrix; the merge holds both, renumbered,
    every row of every table, and the matrix resumes from it as from one database."""
    with Database(tmp_path / "a.sqlite") as a, Database(tmp_path / "b.sqlite") as b:
        tasks = runner.plan(scenario, None)
        _store(a, scenario, tasks[0], tmp_path / "ra")
        _store(b, scenario, tasks[1], tmp_path / "rb0")
        _store(b, scenario, tasks[2], tmp_path / "rb1")
        before_a, from_b = _counts(a), _counts(b)
        b_frames = _frames_of(b, tasks[1].cell.scheduler.name)
        copied = a.merge(b.path)
        assert copied["runs"] == 2 and copied["pages"] == 2 and copied["scenarios"] == 0
        after = _counts(a)
        assert {t: after[t] - before_a[t] for t in after} == {t: n for t, n in from_b.items() if t != "scenarios"} | \
            {"scenarios": 0}
        assert _frames_of(a, tasks[1].cell.scheduler.name) == b_frames
        assert a.query("SELECT COUNT(*) FROM flows f LEFT JOIN pages p ON p.id = f.page_id "
                       "WHERE f.page_id IS NOT NULL AND p.run_id IS NOT f.run_id")[0][0] == 0
        assert [t.pages[0].key for t in runner.plan(scenario, a)] == [tasks[3].pages[0].key]
        # Merging again copies nothing: the runs are recognised.
        assert a.merge(b.path)["runs"] == 0 and _counts(a) == after
        assert a.query("PRAGMA foreign_key_check") == []


def test_a_bad_merge_source_is_refused_and_changes_nothing(tmp_path, scenario):
    from typer.testing import CliRunner

    from confucius.lab.cli import app as lab_app
    with Database(tmp_path / "a.sqlite") as a:
        _store(a, scenario, runner.plan(scenario, None)[0], tmp_path / "ra")
        before = _counts(a)
        other = tmp_path / "other.sqlite"
        sqlite3.connect(other).execute("CREATE TABLE t (x)").connection.commit()
        for source, message in ((other, "not a results database"), (tmp_path / "none.sqlite", "no such database"),
                                (a.path, "the database it would be merged into")):
            with pytest.raises(DatabaseError, match=message):
                a.merge(source)
        assert _counts(a) == before
    good = tmp_path / "a.sqlite"
    result = CliRunner().invoke(lab_app, ["merge", str(good), str(other), "--db", str(tmp_path / "new.sqlite")])
    assert result.exit_code == 2 and "not a results database" in " ".join(result.output.split())
    assert not (tmp_path / "new.sqlite").exists()
    result = CliRunner().invoke(lab_app, ["merge", str(good), "--db", str(tmp_path / "new.sqlite")])
    assert result.exit_code == 0 and "1 runs (1 page loads)" in result.output


def _load_metrics(db: Database) -> list[tuple]:
    return [(r.scheduler, r.page_key, r.stall_s, r.max_delay_ms, r.lost_share, r.plt_s, r.jfi, r.sender_backlog_ms)
            for r in data.page_results(db)]


def test_an_export_keeps_what_the_load_reports_read_and_merges_back(tmp_path, scenario):
    """An export since a time holds the later runs alone; without samples it has no time
    series and no frame far from a load, yet every load metric equals the source's; its xz
    file merges into a fresh database, from which the matrix resumes as from the source."""
    with Database(tmp_path / "lab.sqlite") as db:
        tasks = runner.plan(scenario, None)
        _store(db, scenario, tasks[0], tmp_path / "r0", started_unix=100.0)
        _store(db, scenario, tasks[1], tmp_path / "r1", started_unix=200.0)
        _store(db, scenario, tasks[2], tmp_path / "r2", started_unix=300.0)
        flow = db.query("SELECT id FROM flows WHERE kind='rt' AND run_id=3")[0][0]
        with db.conn:
            db.conn.execute("INSERT INTO frames (flow_id, frame_id, capture_ns, complete) VALUES (?, -1, ?, 0)",
                            (flow, LOAD_START - 60_000_000_000))
        source = _counts(db)
        assert source["qdisc_stats"] and source["probes"]
        later = [m for m in _load_metrics(db) if m[:2] != (tasks[0].cell.scheduler.name, tasks[0].pages[0].ref.key)]
        kept = db.export(tmp_path / "part.sqlite.xz", since_unix=150.0)
        remaining = [t.pages[0].key for t in runner.plan(scenario, db)]
    # Each run's 600 frames but the far one and the last two, which its load's window ends before.
    assert kept["runs"] == 2 and kept["pages"] == 2 and kept["frames"] == 2 * 598 and kept["scenarios"] == 1
    assert all(kept[t] == 0 for t in ("qdisc_stats", "qdisc_flows", "flow_samples", "probes"))
    assert kept["objects"] == source["objects"] * 2 // 3
    with Database(tmp_path / "fresh.sqlite") as fresh:
        assert fresh.merge(tmp_path / "part.sqlite.xz")["runs"] == 2
        assert _load_metrics(fresh) == later
        assert fresh.query("PRAGMA foreign_key_check") == []
        assert [t.pages[0].key for t in runner.plan(scenario, fresh)] == \
            sorted(remaining + [tasks[0].pages[0].key], key=[t.pages[0].key for t in tasks].index)


def test_an_export_with_samples_keeps_every_row(tmp_path, scenario):
    with Database(tmp_path / "lab.sqlite") as db:
        _store(db, scenario, runner.plan(scenario, None)[0], tmp_path / "r0")
        kept = db.export(tmp_path / "all.sqlite", samples=True)
        assert kept == _counts(db)
        expected = _load_metrics(db)
    indexes = "SELECT COUNT(*) FROM sqlite_master WHERE type='index' AND sql IS NOT NULL"
    assert sqlite3.connect(tmp_path / "all.sqlite").execute(indexes).fetchone()[0] == 0
    with Database(tmp_path / "all.sqlite") as exported:   # opened as a database, it has its indexes again
        assert exported.query(indexes)[0][0] > 0 and _load_metrics(exported) == expected


def test_an_export_never_overwrites_and_a_bad_xz_is_refused(tmp_path, scenario):
    from typer.testing import CliRunner

    from confucius.lab.cli import app as lab_app
    with Database(tmp_path / "lab.sqlite") as db:
        _store(db, scenario, runner.plan(scenario, None)[0], tmp_path / "r0")
    taken = tmp_path / "taken.sqlite.xz"
    taken.write_bytes(b"not xz")
    result = CliRunner().invoke(lab_app, ["export", str(tmp_path / "lab.sqlite"), "--out", str(taken)])
    assert result.exit_code == 2 and "exists" in result.output and taken.read_bytes() == b"not xz"
    result = CliRunner().invoke(lab_app, ["merge", str(taken), "--db", str(tmp_path / "new.sqlite")])
    assert result.exit_code == 2 and "not an xz-compressed results database" in " ".join(result.output.split())
    assert not (tmp_path / "new.sqlite").exists()
    result = CliRunner().invoke(lab_app, ["export", str(tmp_path / "lab.sqlite"), "--out",
                                          str(tmp_path / "x.sqlite"), "--since", "yesterday"])
    assert result.exit_code == 2 and "ISO 8601" in result.output and not (tmp_path / "x.sqlite").exists()
    result = CliRunner().invoke(lab_app, ["export", str(tmp_path / "lab.sqlite"), "--out",
                                          str(tmp_path / "x.sqlite.xz"), "--since", "1970-01-01T00:00:00"])
    assert result.exit_code == 0 and "1 runs (1 page loads" in result.output
    assert [p.name for p in tmp_path.glob("confucius-export-*")] == []
    # A kept export is read as it is, and only read.
    kept = (tmp_path / "x.sqlite.xz").read_bytes()
    result = CliRunner().invoke(lab_app, ["export", str(tmp_path / "x.sqlite.xz"), "--out", str(tmp_path / "y.sqlite")])
    assert result.exit_code == 0 and "1 runs (1 page loads" in result.output
    assert (tmp_path / "x.sqlite.xz").read_bytes() == kept
