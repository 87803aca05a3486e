# SPDX-License-Identifier: MIT
"""`confucius report bulk` end to end: the hand-made run of tests/lab/test_lab_db.py with the
real sender samples of tests/lab/test_lab_bulk_rtt.py placed around its page load, stored as
the runner stores it; the bulk flow's RTT split at the page's first request and last byte,
beside the stall and the PLT; and no table without bulk samples."""

import json
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "lab"))

from test_lab_bulk_rtt import FIXTURE, FIXTURE_RTTS, retimed, run_info  # noqa: E402
from test_lab_db import LOAD_START, SCENARIO, make_run  # noqa: E402

from confucius.experiment import db_runs  # noqa: E402
from confucius.experiment.db import Database  # noqa: E402
from confucius.lab.run_folder import read_run  # noqa: E402
from confucius.report.cli import app  # noqa: E402

# The hand-made page loads from its first request (100 ms after the load's start) to its
# last byte (PLT 1.0 s); the samples with a sender sit at 0, 200 and 400 ms after the start.
SAMPLE_TIMES = [LOAD_START + t for t in (-400_000_000, -200_000_000, 0, 200_000_000, 400_000_000)]


@pytest.fixture
def database(tmp_path) -> Path:
    folder = make_run(tmp_path / "run", "u1")
    (folder / "bulk-0-ss.txt").write_text(retimed(FIXTURE.read_text(), SAMPLE_TIMES))
    with Database(tmp_path / "lab.sqlite") as db:
        db_runs.store_run(db, db.scenario_id("handmade", "abc", "h.toml", SCENARIO), run_info(tmp_path),
                          read_run(folder))
    return tmp_path / "lab.sqlite"


def report(db: Path, *extra: str):
    return CliRunner().invoke(app, ["bulk", "--db", str(db), *extra], terminal_width=250)


def test_the_bulk_rtt_is_split_at_the_page_load_beside_stall_and_plt(database):
    result = report(database, "--json")
    assert result.exit_code == 0, result.output
    [row] = json.loads(result.stdout)
    (_, before), (_, first), (_, second) = FIXTURE_RTTS
    assert (row["scenario"], row["scheduler"], row["controller"], row["loads"]) == ("handmade", "pfifo", "gcc", 1)
    assert row["plt_s"] == pytest.approx(1.0) and row["stall_s"] == pytest.approx(5 / 60)
    assert (row["rtt_during_median_ms"], row["rtt_during_p95_ms"]) == (first, second)
    assert (row["rtt_outside_median_ms"], row["rtt_outside_p95_ms"]) == (before, before)
    # iperf3's one interval ends 500 ms after the load's start, inside the page.
    assert row["mbps_during"] == pytest.approx(8.0) and row["mbps_outside"] is None


def test_the_table_shows_median_and_p95_per_window(database):
    text = report(database).stdout
    assert "bulk RTT in page ms" in text and "bulk RTT outside ms" in text
    assert f"{FIXTURE_RTTS[1][1]:.1f} / {FIXTURE_RTTS[2][1]:.1f}" in text
    assert f"{FIXTURE_RTTS[0][1]:.1f} / {FIXTURE_RTTS[0][1]:.1f}" in text
    assert "1.00" in text and "0.083" in text


def test_runs_without_bulk_samples_are_an_error(tmp_path):
    folder = make_run(tmp_path / "run", "u1")
    with Database(tmp_path / "lab.sqlite") as db:
        db_runs.store_run(db, db.scenario_id("handmade", "abc", "h.toml", SCENARIO), run_info(tmp_path),
                          read_run(folder))
    result = report(tmp_path / "lab.sqlite")
    assert result.exit_code == 2 and "no valid loads beside bulk flows with RTT samples" in result.output
