# SPDX-License-Identifier: MIT
"""`confucius report flent` end to end on a database holding a real Flent test (the fixture
of tests/lab/test_lab_flent_rtt.py, stored as the runner stores it): the bulk RTT beside
latency and throughput, from the data file or, once it is gone, as stored; Flent's own
plots of it; and no table without tests."""

import json
import shutil
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "lab"))

from test_lab_flent_rtt import FIXTURES, data_file, run_row, stored_test  # noqa: E402

from confucius.experiment import db_flent  # noqa: E402
from confucius.experiment.db import Database  # noqa: E402
from confucius.lab import flent_files  # noqa: E402
from confucius.report.cli import app  # noqa: E402


@pytest.fixture
def database(tmp_path) -> tuple[Path, Path]:
    """A database with the fixture's rrul under fq_codel; the data file in a run folder of its own."""
    folder = tmp_path / "run" / "flent" / "rrul"
    folder.mkdir(parents=True)
    for path in (data_file(), FIXTURES / "ss-server.txt"):
        shutil.copy(path, folder)
    with Database(tmp_path / "lab.sqlite") as db:
        db_flent.store_flent_test(db, run_row(db), stored_test(folder / data_file().name))
        db.conn.commit()
    return tmp_path / "lab.sqlite", folder / data_file().name


def report(db: Path, *extra: str):
    return CliRunner().invoke(app, ["flent", "--db", str(db), *extra], terminal_width=250)


def test_the_report_puts_the_bulk_rtt_beside_latency_and_throughput(database):
    db, path = database
    summary = flent_files.summarise_file(path)
    [row] = json.loads(report(db, "--json").stdout)
    assert (row["scheduler"], row["test"], row["runs"]) == ("fq_codel", "rrul", 1)
    assert (row["down_rtt_median_ms"], row["down_rtt_p95_ms"], row["up_rtt_median_ms"], row["up_rtt_p95_ms"]) == (
        summary.down_rtt_median_ms, summary.down_rtt_p95_ms, summary.up_rtt_median_ms, summary.up_rtt_p95_ms)
    text = report(db).stdout
    assert "bulk RTT down ms" in text and "bulk RTT up ms" in text
    assert f"{summary.down_rtt_median_ms:.1f} / {summary.down_rtt_p95_ms:.1f}" in text
    assert f"{summary.up_rtt_median_ms:.1f} / {summary.up_rtt_p95_ms:.1f}" in text


def test_without_the_data_file_the_stored_figures_stand_in(database):
    db, path = database
    before = json.loads(report(db, "--json").stdout)
    path.unlink()
    assert json.loads(report(db, "--json").stdout) == before


def test_flent_draws_its_own_plots_of_the_tests(database, tmp_path):
    db, _ = database
    result = report(db, "--plots", str(tmp_path / "plots"))
    assert result.exit_code == 0, result.output
    drawn = sorted(p.name for p in (tmp_path / "plots").iterdir())
    assert drawn == ["flent-rtt-rrul-box_totals.png", "flent-rtt-rrul-ping_cdf.png", "flent-rtt-rrul-tcp_rtt_cdf.png"]
    assert all((tmp_path / "plots" / name).read_bytes().startswith(b"\x89PNG") for name in drawn)


def test_a_database_without_flent_tests_is_an_error(tmp_path):
    Database(tmp_path / "empty.sqlite").close()
    result = report(tmp_path / "empty.sqlite")
    assert result.exit_code != 0 and "no valid Flent tests" in result.output
