# SPDX-License-Identifier: MIT
"""Each bulk flow's own RTT in a Flent test, without a VM: a real run's files (fixtures/flent-rtt/:
rrul, 5 s, fq_codel both ways at 20 Mbit/s and 40 ms, as the lab ran it under UML on December 6
with Flent's socket stats and the server's sockets sampled beside it), checked against what
Flent itself put into the same data file and against the bytes the senders counted; bad
socket samples refused; the database's flent_flows table and schema 9's upgrade."""

import re
import shutil
import statistics
from pathlib import Path

import pytest

from confucius.experiment import db as lab_db
from confucius.experiment import db_flent
from confucius.experiment.results import FlentTest
from confucius.lab import flent_files
from confucius.lab.contract import FlentEvent
from test_lab_db import database_of_schema, schema_version

FIXTURES = Path(__file__).parent / "fixtures" / "flent-rtt"
PROPAGATION_MS = 40.0
# flent_tests as schema 9 made it: no bulk RTT.
SCHEMA_9_FLENT_TESTS = """CREATE TABLE flent_tests (
    id INTEGER PRIMARY KEY, run_id INTEGER NOT NULL REFERENCES runs(id), number INTEGER NOT NULL,
    test TEXT NOT NULL, started_ns INTEGER NOT NULL, ended_ns INTEGER NOT NULL, exit INTEGER NOT NULL,
    data_file TEXT, plot_file TEXT, error TEXT, plot_error TEXT, window_from_s REAL, window_to_s REAL,
    latency TEXT, latency_samples INTEGER, latency_median_ms REAL, latency_p99_ms REAL, udp_samples INTEGER,
    udp_median_ms REAL, udp_p99_ms REAL, download_mbps REAL, upload_mbps REAL)"""


def data_file() -> Path:
    [path] = FIXTURES.glob("rrul-*.flent.gz")
    return path


def test_each_upload_s_rtt_agrees_with_flent_s_own_socket_stats():
    data = flent_files.read(data_file())
    summary = flent_files.summarise_file(data_file())
    uploads = {f.flow: f for f in summary.flows if f.direction == "upload"}
    assert sorted(uploads) == ["TCP upload BE", "TCP upload BK", "TCP upload CS5", "TCP upload EF"]
    low, high = summary.window_s
    for name, flow in uploads.items():
        # Flent's own series of the flow's tcp_rtt, on its time grid (interpolated), in the window.
        grid = [rtt for x, rtt in zip(data["x_values"], data["results"][f"{name}::tcp_rtt"])
                if rtt is not None and low <= x <= high]
        assert flow.samples == pytest.approx(len(grid), abs=2)      # one sample per 0.2 s step
        assert PROPAGATION_MS <= flow.median_ms <= flow.p95_ms
        assert flow.median_ms == pytest.approx(statistics.median(grid), rel=0.1), name
    # Over all four flows' samples: between the flows' medians, and a p95 above them all.
    medians = sorted(f.median_ms for f in uploads.values())
    assert medians[0] <= summary.up_rtt_median_ms <= medians[-1] <= summary.up_rtt_p95_ms


def test_the_downloads_rtt_is_read_from_their_senders_on_the_server():
    summary = flent_files.summarise_file(data_file())
    downloads = [f for f in summary.flows if f.direction == "download"]
    # rrul's four downloads, each netserver's socket towards the client; not the four
    # uploads' receiving sockets that the server's namespace also holds.
    assert len(downloads) == 4 and all(f.flow.startswith("198.18.0.2:") and " 198.19.0.2:" in f.flow for f in downloads)
    assert all(20 <= f.samples <= 26 and PROPAGATION_MS <= f.median_ms <= f.p95_ms for f in downloads)
    # The chosen sockets carried the downloads: the bytes they had acknowledged grew over the
    # window by what Flent's download sum says arrived (within the 0.2 s steps' slack).
    text = (FIXTURES / "ss-server.txt").read_text()
    acked = _acked_by_socket(text, flent_files._t0(flent_files.read(data_file())["metadata"]), summary.window_s)
    chosen = {f.flow for f in downloads}
    mbps = sum(acked[s][-1] - acked[s][0] for s in chosen) * 8 / (summary.window_s[1] - summary.window_s[0]) / 1e6
    assert mbps == pytest.approx(summary.download_mbps, rel=0.1)
    assert summary.down_rtt_median_ms <= summary.down_rtt_p95_ms


def _acked_by_socket(text: str, t0: float, window: tuple[float, float]) -> dict[str, list[int]]:
    """bytes_acked of every socket at each sample inside the window, read on its own."""
    found: dict[str, list[int]] = {}
    at, socket = None, None
    for line in text.splitlines():
        if line.startswith("Time: "):
            at = float(line.split()[1]) - t0
        elif line and not line[0].isspace():
            socket = " ".join(line.split()[2:4])
        elif (acked := re.search(r"bytes_acked:(\d+)", line)) and window[0] <= at <= window[1]:
            found.setdefault(socket, []).append(int(acked.group(1)))
    return found


def test_without_the_server_s_sockets_only_the_uploads_have_an_rtt(tmp_path):
    shutil.copy(data_file(), tmp_path)
    summary = flent_files.summarise_file(tmp_path / data_file().name)
    assert summary.down_rtt_median_ms is None and summary.down_rtt_p95_ms is None
    assert {f.direction for f in summary.flows} == {"upload"} and summary.up_rtt_median_ms is not None


def test_a_garbled_socket_sample_is_refused_naming_its_line(tmp_path):
    shutil.copy(data_file(), tmp_path)
    lines = (FIXTURES / "ss-server.txt").read_text().splitlines()
    lines[40] = "ss: cannot open netlink socket"
    (tmp_path / "ss-server.txt").write_text("\n".join(lines))
    with pytest.raises(flent_files.FlentDataError, match=r"ss-server.txt:41: expected a time, a socket"):
        flent_files.summarise_file(tmp_path / data_file().name)


def stored_test(path: Path) -> FlentTest:
    event = FlentEvent(test="rrul", started_ns=0, ended_ns=15_000_000_000, exit=0,
                       data_file=f"flent/rrul/{path.name}", log="logs/flent-rrul.out")
    return FlentTest(0, event, path, flent_files.summarise_file(path), None)


def run_row(db: lab_db.Database, scheduler: str = "fq_codel", scenario: str = "flent-rtt") -> int:
    """A valid Flent run of `scheduler` as the runner stores it, in the columns a run must have."""
    scenario_id = db.insert("scenarios", {"name": scenario, "digest": "d", "path": None, "text": ""})
    return db.insert("runs", {
        "scenario_id": scenario_id, "cell_key": f"k-{scheduler}", "scheduler": scheduler, "scheduler_base": scheduler,
        "scheduler_options": "{}", "tc_commands": "[]", "controller": "", "rt_flows": "[]", "repetition": 0,
        "mode": "flent", "rtt_s": 0.04, "buffer_packets": 1000, "status": "ok", "started_unix": 0.0,
        "results_dir": "/nowhere", "engine": "uml", "time_mode": "inf-cpu", "spec": "{}", "valid": 1})


def test_the_database_keeps_each_flow_s_rtt(tmp_path):
    with lab_db.Database(tmp_path / "lab.sqlite") as db:
        run_id = run_row(db)
        test = stored_test(data_file())
        db_flent.store_flent_test(db, run_id, test)
        [row] = db.query("SELECT * FROM flent_tests")
        flows = db.query("SELECT * FROM flent_flows WHERE flent_test_id = ?", [row["id"]])
    assert (row["down_rtt_median_ms"], row["up_rtt_p95_ms"]) == (test.summary.down_rtt_median_ms,
                                                                 test.summary.up_rtt_p95_ms)
    assert sorted((f["direction"], f["flow"], f["rtt_median_ms"]) for f in flows) == sorted(
        (f.direction, f.flow, f.median_ms) for f in test.summary.flows)


def test_a_database_of_schema_9_gains_the_bulk_rtt(tmp_path):
    path = database_of_schema(tmp_path / "lab.sqlite", 9, "DROP TABLE flent_flows", "DROP TABLE flent_tests",
                              SCHEMA_9_FLENT_TESTS)
    with lab_db.Database(path) as db:
        run_id = run_row(db)
        db.insert("flent_tests", {"run_id": run_id, "number": 0, "test": "rrul", "started_ns": 0, "ended_ns": 1,
                                  "exit": 0, "down_rtt_median_ms": 41.5})
        [row] = db.query("SELECT * FROM flent_tests")
        assert (row["down_rtt_median_ms"], row["up_rtt_median_ms"]) == (41.5, None)
        assert db.query("SELECT COUNT(*) FROM flent_flows")[0][0] == 0
        assert schema_version(db) == str(lab_db.SCHEMA_VERSION)
