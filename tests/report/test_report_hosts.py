# SPDX-License-Identifier: MIT
"""`confucius report hosts` end to end: the hand-made run of tests/lab/test_lab_db.py made a
two-host run (host 1 receives 2 Mbit/s, 10 while its page loads; host 2 a steady 12),
stored as the runner stores it; each host's Mbit/s while the video runs and while the page
loads, beside the stall, the largest frame delay and the PLT; no table for one client."""

import json
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "lab"))

from test_lab_bulk_rtt import run_info  # noqa: E402
from test_lab_db import LOAD_START, SCENARIO, make_run  # noqa: E402
from test_lab_hosts import two_host_run  # noqa: E402

from confucius.experiment import db_runs  # noqa: E402
from confucius.experiment.db import Database  # noqa: E402
from confucius.lab.run_folder import read_run  # noqa: E402
from confucius.report.cli import app  # noqa: E402
from confucius.report.data import page_results  # noqa: E402
from confucius.report.hosts_table import span_mbps  # noqa: E402

S = 1_000_000_000
# The hand-made page loads from its first request (100 ms after the load's start) to its last
# byte (PLT 1.0 s); its RT flow's rate log runs from 6 s before the load's start to 7.95 s after.
PAGE = (LOAD_START + S // 10, LOAD_START + 11 * S // 10)


def host1_bytes(at: int) -> int:
    """2 Mbit/s, and 8 more while the page loads."""
    during = max(0, min(at, PAGE[1]) - PAGE[0])
    return round(2e6 / 8 * (at - LOAD_START + 8 * S) / S + 8e6 / 8 * during / S)


def samples() -> list[dict]:
    times = [LOAD_START - 8 * S + i * S // 5 for i in range(91)]         # every 0.2 s, -8 s to +10 s
    return [{"time_ns": t, "rx_bytes": [host1_bytes(t), round(12e6 / 8 * (t - LOAD_START + 8 * S) / S)]} for t in times]


def store(tmp_path: Path, folder: Path) -> Path:
    with Database(tmp_path / "lab.sqlite") as db:
        db_runs.store_run(db, db.scenario_id("handmade", "abc", "h.toml", SCENARIO), run_info(tmp_path), read_run(folder))
    return tmp_path / "lab.sqlite"


def report(db: Path, *extra: str):
    return CliRunner().invoke(app, ["hosts", "--db", str(db), *extra], terminal_width=250)


def test_each_host_s_mbps_while_the_video_runs_and_while_the_page_loads(tmp_path):
    db = store(tmp_path, two_host_run(tmp_path / "run", samples()))
    result = report(db, "--json")
    assert result.exit_code == 0, result.output
    [row] = json.loads(result.stdout)
    assert (row["scenario"], row["scheduler"], row["controller"], row["loads"]) == ("handmade", "pfifo", "gcc", 1)
    # The video's samples: -6.0 s to +7.8 s (13.8 s), 1 s of them at 10 Mbit/s.
    assert row["host1_video_mbps"] == pytest.approx(2 + 8 * 1.0 / 13.8, abs=1e-4)
    assert row["host2_video_mbps"] == pytest.approx(12.0, abs=1e-4)
    # The page's samples: +0.2 s to +1.0 s, all inside the load.
    assert row["host1_page_mbps"] == pytest.approx(10.0, abs=1e-4)
    assert row["host2_page_mbps"] == pytest.approx(12.0, abs=1e-4)
    with Database(db) as opened:
        [page] = page_results(opened)
    assert row["stall_s"] == pytest.approx(5 / 60) and row["plt_s"] == pytest.approx(1.0)
    assert row["max_delay_ms"] == pytest.approx(page.max_delay_ms) and page.max_delay_ms > 0


def test_the_table_shows_both_hosts_per_window(tmp_path):
    text = report(store(tmp_path, two_host_run(tmp_path / "run", samples()))).stdout
    assert "host 1 / 2 Mbit/s, video" in text and "2.58 / 12.00" in text and "10.00 / 12.00" in text


def test_a_span_with_fewer_than_two_samples_has_no_rate():
    assert span_mbps([(0, 0), (S, 1_000_000)], 0, S) == pytest.approx(8.0)
    assert span_mbps([(0, 0), (S, 1_000_000)], 1, S) != span_mbps([(0, 0), (S, 1_000_000)], 1, S)   # NaN


def test_a_one_client_run_has_no_hosts_table(tmp_path):
    result = report(store(tmp_path, make_run(tmp_path / "run", "u1")))
    assert result.exit_code != 0 and "no valid loads with per-host counters" in result.output
