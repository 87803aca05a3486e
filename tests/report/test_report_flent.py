# SPDX-License-Identifier: MIT
"""`confucius report flent` end to end on a database holding a real Flent test (the fixture
of tests/lab/test_lab_flent_rtt.py, stored as the runner stores it): the bulk RTT beside
latency and throughput, from the data file or, once it is gone, as stored; Flent's own
plots of it; rtt_fair's servers (the fixture of tests/lab/test_lab_flent_rtt_fair.py), each
one's share, own RTT and ping; and no table without tests."""

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
from confucius.experiment.results import FlentTest  # noqa: E402
from confucius.lab import flent_files  # noqa: E402
from confucius.lab.contract import FlentEvent  # noqa: E402
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


@pytest.mark.parametrize("stored", ["database", "rtt_fair_database"])
def test_without_the_data_file_the_stored_figures_stand_in(request, stored):
    """rtt_fair's servers too: their figures are stored once the data file is gone."""
    db, path = request.getfixturevalue(stored)
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


@pytest.fixture
def rtt_fair_database(tmp_path) -> tuple[Path, Path]:
    """A database with tests/lab's rtt_fair_var fixture under fq_codel, in a run folder of its own."""
    from test_lab_flent_rtt_fair import FIXTURES as RTT_FAIR, data_file as rtt_fair_file
    folder = tmp_path / "run" / "flent" / "rtt_fair_var"
    folder.mkdir(parents=True)
    for path in (rtt_fair_file(), RTT_FAIR / "ss-server.txt", RTT_FAIR / "servers.txt"):
        shutil.copy(path, folder)
    path = folder / rtt_fair_file().name
    event = FlentEvent(test="rtt_fair_var", started_ns=0, ended_ns=1, exit=0, data_file=path.name, log="out")
    with Database(tmp_path / "lab.sqlite") as db:
        db_flent.store_flent_test(db, run_row(db), FlentTest(0, event, path, flent_files.summarise_file(path), None))
        db.conn.commit()
    return tmp_path / "lab.sqlite", path


def test_rtt_fair_shows_each_server_s_share_own_rtt_and_ping(rtt_fair_database):
    db, path = rtt_fair_database
    summary = flent_files.summarise_file(path)
    [row] = json.loads(report(db, "--json").stdout)
    servers = row["servers"]
    assert [s["rtt_ms"] for s in servers] == [10, 40, 80, 160]
    for shown, share in zip(servers, summary.servers):
        assert (shown["download_mbps"], shown["up_rtt_median_ms"], shown["ping_median_ms"]) == (
            share.download_mbps, share.up_rtt_median_ms, share.ping_median_ms)
        assert shown["download_share"] == pytest.approx(share.download_mbps / summary.download_mbps, abs=1e-3)
    assert sum(s["upload_share"] for s in servers) == pytest.approx(1)
    # Jain's index over the servers agrees with Flent's own "TCP download fairness" (0.96).
    assert row["download_jfi"] == pytest.approx(0.96, abs=0.005)
    text = report(db).stdout
    assert "each server's share" in text and "server RTT ms" in text
    first = summary.servers[0]
    assert f"{first.down_rtt_median_ms:.1f} / {first.down_rtt_p95_ms:.1f}" in text


def test_other_tests_have_no_servers(database):
    db, _ = database
    [row] = json.loads(report(db, "--json").stdout)
    assert row["servers"] == [] and row["download_jfi"] is None
    assert "each server's share" not in report(db).stdout


def test_flent_draws_rtt_fair_s_per_server_plots(rtt_fair_database, tmp_path):
    db, _ = rtt_fair_database
    result = report(db, "--plots", str(tmp_path / "plots"))
    assert result.exit_code == 0, result.output
    assert sorted(p.name for p in (tmp_path / "plots").iterdir()) == [
        f"flent-rtt-rtt_fair_var-{plot}.png" for plot in ("bar_combine_down", "bar_combine_up", "ping_cdf_combine")]
