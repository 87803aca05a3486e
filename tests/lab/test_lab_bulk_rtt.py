# SPDX-License-Identifier: MIT
"""A bulk flow's own RTT from its sender's sockets: the guest's `ss -tin` samples of an
iperf3 port's server side parsed (the fixture is the first second of a real demo-bulk run
under pfifo, UML: the control connection alone, then beside the data connection), bad files
refused with where and why, the samples read from a run folder, stored in bulk_rtts and read
back, and the schema upgrade that added that table."""

from pathlib import Path

import pytest

from confucius.experiment import db as lab_db, db_runs
from confucius.experiment.db import Database
from confucius.experiment.results import ResultsError
from confucius.lab.run_folder import read_run, sender_rtts
from test_lab_db import LOAD_START, SCENARIO, database_of_schema, make_run, schema_version

FIXTURE = Path(__file__).parent / "fixtures" / "bulk-rtt" / "bulk-0-ss.txt"
# The data connection's smoothed RTT in the fixture's samples; the first has no socket and
# the second only the control connection, which received more than it sent.
FIXTURE_RTTS = [(401_025_024, 65.075), (601_027_840, 109.188), (801_022_464, 153.052)]


def retimed(text: str, times: list[int]) -> str:
    """The fixture's samples at other times (a run folder's clock)."""
    lines, samples = [], iter(times)
    for line in text.splitlines():
        lines.append(f"Time: {next(samples)}" if line.startswith("Time: ") else line)
    return "\n".join(lines) + "\n"


def test_the_sender_is_the_data_connection_not_iperf3_s_control_connection():
    assert sender_rtts(FIXTURE.read_text(), "fixture") == FIXTURE_RTTS


def test_of_two_senders_on_the_port_the_one_with_more_acknowledged_counts():
    sample = FIXTURE.read_text().splitlines()[4:9]          # one sample: control and data connection
    data = sample[3:5]
    bigger = [data[0].replace("36524", "36530"), data[1].replace("rtt:65.075", "rtt:80.5")
              .replace("bytes_acked:85432", "bytes_acked:99000")]
    assert sender_rtts("\n".join([*sample, *bigger]), "x") == [(401_025_024, 80.5)]
    assert sender_rtts("\n".join([*sample[:3], *bigger, *data]), "x") == [(401_025_024, 80.5)]


@pytest.mark.parametrize("text, error", [
    ("0 0 198.18.0.2:5201 198.19.0.2:36524\n", r"x:1: a socket before the first 'Time: ' line"),
    ("Time: 0.5\n", r"x:1: the time of a sample is not integer ns"),
    ("Time: 10\nTime: 10\n", r"x:2: the sample's time 10 does not follow the previous one's 10"),
    ("Time: 10\n0 0 198.18.0.2:5201\n", r"x:2: not a socket line of `ss -tin -H`"),
    ("Time: 10\n\t cubic rtt:40.1/2 bytes_acked:9\n", r"x:2: tcp_info without its socket line"),
    ("Time: 10\n0 0 a:1 b:2\n\t cubic rtt:fast bytes_acked:9\n", r"x:3: tcp_info's rtt, bytes_acked or "
                                                              r"bytes_received is not a number"),
])
def test_a_bad_sample_file_is_refused_with_where_and_why(text, error):
    with pytest.raises(ResultsError, match=error):
        sender_rtts(text, "x")


def test_the_samples_travel_from_the_run_folder_into_bulk_rtts(tmp_path):
    folder = make_run(tmp_path / "run", "u1")
    times = [LOAD_START + t for t in (-400_000_000, -200_000_000, 0, 200_000_000, 400_000_000)]
    (folder / "bulk-0-ss.txt").write_text(retimed(FIXTURE.read_text(), times))
    run = read_run(folder)
    assert run.bulk[0].rtts == [(t, rtt) for t, (_, rtt) in zip(times[2:], FIXTURE_RTTS)]
    with Database(tmp_path / "lab.sqlite") as db:
        db_runs.store_run(db, db.scenario_id("handmade", "abc", "h.toml", SCENARIO), run_info(tmp_path), run)
        [flow] = db_runs.flows_of_run(db, 1, "bulk")
        assert [tuple(r) for r in db_runs.bulk_rtt_rows(db, flow["id"])] == run.bulk[0].rtts


def test_a_run_folder_without_the_samples_has_a_bulk_flow_without_rtts(tmp_path):
    run = read_run(make_run(tmp_path / "run", "u1"))
    assert run.bulk[0].rtts == [] and run.bulk[0].samples


def test_a_bad_sample_file_makes_the_run_folder_unreadable(tmp_path):
    folder = make_run(tmp_path / "run", "u1")
    (folder / "bulk-0-ss.txt").write_text("Time: 5\nTime: 4\n")
    with pytest.raises(ResultsError, match=r"bulk-0-ss.txt:2: the sample's time 4"):
        read_run(folder)


def test_a_database_of_schema_10_gains_bulk_rtts(tmp_path):
    path = database_of_schema(tmp_path / "lab.sqlite", 10, "DROP TABLE bulk_rtts")
    with lab_db.Database(path) as db:
        assert db.query("SELECT COUNT(*) FROM bulk_rtts")[0][0] == 0
        assert schema_version(db) == str(lab_db.SCHEMA_VERSION)


def run_info(tmp_path: Path) -> dict:
    """The runs row of the hand-made run."""
    return {"cell_key": "c1", "scheduler": "pfifo", "scheduler_base": "pfifo", "scheduler_options": "",
            "tc_commands": "[]", "controller": "gcc", "rt_flows": "{}", "repetition": 0, "mode": "episodes",
            "rtt_s": 0.04, "buffer_packets": 1000, "status": "ok", "started_unix": 0.0, "valid": 1,
            "results_dir": str(tmp_path / "run"), "spec": "{}", "engine": "uml", "time_mode": "inf-cpu"}
