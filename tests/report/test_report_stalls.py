# SPDX-License-Identifier: MIT
"""`confucius report stalls`: a hand-made load whose frames are late while its page loads
and after it, with and without Confucius's per-flow samples."""

import math
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "lab"))

from test_lab_db import FRAME_NS, LOAD_START, frame_rows, write_csv  # noqa: E402
from test_report_timeline import stored_page  # noqa: E402

from confucius import rtflow  # noqa: E402
from confucius.report import stalls  # noqa: E402
from confucius.report.cli import app  # noqa: E402

# Frames are captured every FRAME_NS from 2 s before the load; the page's last byte comes
# 1.1 s after the load's start (first request at 0.1 s, PLT 1.0 s: to the last byte at 1.1 s).
DURING = {150, 151}             # 0.5 s into the load, 250 ms late
AFTER = {200, 201, 202, 203}    # 1.33 s in, 250 ms late; frame 300 (3 s in) lost


def late_page(tmp_path, scheduler: str, with_flows: bool):
    def frames_late_during_and_after(folder):
        write_csv(folder / "rt" / "s0-f0-frames.csv", rtflow.FRAME_COLUMNS, frame_rows(600, DURING | AFTER, {300}))
    return stored_page(tmp_path, scheduler, with_flows, frames_late_during_and_after)


def test_a_load_stall_is_split_at_the_pages_last_byte_and_set_against_the_qdiscs_wait(tmp_path):
    db, result = late_page(tmp_path, "confucius", with_flows=True)
    load = stalls.load_stall(db, result)
    db.close()
    assert result.page_end_ns == LOAD_START + 1_100_000_000
    assert load.during_s == pytest.approx(2 * FRAME_NS / 1e9)
    assert load.after_s == pytest.approx(5 * FRAME_NS / 1e9)    # four late frames and the lost one
    assert load.during_s + load.after_s == pytest.approx(result.stall_s)
    # The samples give the RT flow's head packet 12.3 ms of wait: 12.3 of the worst 250 ms.
    assert (load.late_delay_ms, load.queue_wait_ms) == (250.0, 12.3)
    assert load.queue_share == pytest.approx(12.3 / 250)


def test_rows_give_the_qdiscs_share_only_where_the_scheduler_exposes_its_flows(tmp_path):
    db, confucius = late_page(tmp_path, "confucius", with_flows=True)
    db.close()
    db, pfifo = late_page(tmp_path, "pfifo", with_flows=False)
    rows = {r.scheduler: r for r in stalls.stall_rows(db, [confucius, pfifo])}
    db.close()
    assert (rows["confucius"].loads, rows["confucius"].loads_during, rows["confucius"].loads_after) == (1, 1, 1)
    assert rows["confucius"].queue_share == pytest.approx(12.3 / 250)
    assert math.isnan(rows["pfifo"].queue_share)
    result = CliRunner().invoke(app, ["stalls", "--db", str(tmp_path / "lab.sqlite"), "-s", "pfifo,confucius"])
    assert result.exit_code == 0, result.output
    lines = [line for line in result.output.splitlines() if "gcc" in line]
    assert "pfifo" in lines[0] and "confucius" in lines[1] and "5%" in lines[1] and "–" in lines[0]
