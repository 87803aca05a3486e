# SPDX-License-Identifier: MIT
"""confucius.rtflow: reading rtflow's logs (and the stall and delay metrics over them), commands."""

from __future__ import annotations

import math

import pytest

from confucius import metrics, rtflow

MS = 1_000_000
FRAME_HEADER = ",".join(rtflow.FRAME_COLUMNS)
RATE_HEADER = ",".join(rtflow.RATE_COLUMNS)


def _frame_row(frame_id: int, delay_ms: float | None, complete: bool = True) -> str:
    capture = 1_000 * MS + frame_id * 16_666_667
    if not complete:
        return f"{frame_id},{capture},,,,,,,,0"
    last = capture + int(delay_ms * MS)
    return f"{frame_id},{capture},{int(frame_id == 0)},3000,3,3,{capture + MS},{last},{delay_ms:.3f},1"


def _write(path, header: str, rows: list[str]):
    path.write_text("\n".join([header, *rows]) + "\n")
    return path


def test_frames_are_read_in_frame_order_with_missing_fields_as_none(tmp_path):
    log = _write(tmp_path / "f.csv", FRAME_HEADER, [_frame_row(1, 12.5), _frame_row(0, 30.0),
                                                     _frame_row(2, None, complete=False)])
    frames = rtflow.read_frames(log)
    assert [f.frame_id for f in frames] == [0, 1, 2]
    assert frames[0].key is True and frames[1].key is False
    assert frames[1].delay_ms == 12.5 and frames[1].complete
    assert frames[2] == rtflow.Frame(2, 1_000 * MS + 2 * 16_666_667, None, None, None, None, None, None, None,
                                     False)


def test_rates_are_read_with_empty_fields_as_none(tmp_path):
    log = _write(tmp_path / "r.csv", RATE_HEADER, ["100,1000000,2500000,,,,,0,0,",
                                                   "200,1200000,3000000,1100000,900000,41.500,0.0100,5000,800,9000"])
    first, second = rtflow.read_rates(log)
    assert first.sent_bps is None and first.cwnd_bytes is None
    assert second.srtt_ms == 41.5 and second.loss == 0.01 and second.cwnd_bytes == 9000


@pytest.mark.parametrize("text", ["nonsense\n", "", FRAME_HEADER + "\n1,2,3\n", FRAME_HEADER + "\nx" + ",0" * 9 + "\n"])
def test_unreadable_logs_give_a_clear_error(tmp_path, text):
    log = tmp_path / "bad.csv"
    log.write_text(text)
    with pytest.raises(rtflow.RtflowError, match="bad.csv"):
        rtflow.read_frames(log)


def test_a_missing_log_gives_a_clear_error(tmp_path):
    with pytest.raises(rtflow.RtflowError, match="cannot read rtflow log"):
        rtflow.read_rates(tmp_path / "absent.csv")


def _frames(tmp_path, rows: list[str]) -> list[rtflow.Frame]:
    return rtflow.read_frames(_write(tmp_path / "frames.csv", FRAME_HEADER, rows))


def test_stall_duration_counts_late_and_lost_frames_for_their_frame_interval(tmp_path):
    rows = [_frame_row(i, 20.0) for i in range(10)]
    rows[3] = _frame_row(3, 250.0)
    rows[4] = _frame_row(4, 191.0)
    rows[7] = _frame_row(7, None, complete=False)
    rows[9] = _frame_row(9, 500.0)  # the last frame counts for the usual interval
    frames = _frames(tmp_path, rows)
    assert metrics.stall_duration(frames) == pytest.approx(4 * 0.016666667, abs=1e-6)
    assert metrics.stall_duration(frames, threshold_s=0.3) == pytest.approx(2 * 0.016666667, abs=1e-6)
    assert metrics.stall_duration([]) == 0.0


def test_delay_percentile_counts_lost_frames_as_infinitely_late(tmp_path):
    frames = _frames(tmp_path, [_frame_row(i, float(i + 1)) for i in range(9)] + [_frame_row(9, None, False)])
    assert metrics.delay_percentile(frames, 50) == 5.0
    assert metrics.delay_percentile(frames, 90) == 9.0
    assert metrics.delay_percentile(frames, 100) == math.inf
    assert math.isnan(metrics.delay_percentile([], 50))
    with pytest.raises(ValueError):
        metrics.delay_percentile(frames, 101)


def test_commands_spell_the_flags_and_reject_unknown_modes(monkeypatch, tmp_path):
    fake = tmp_path / "rtflow"
    fake.write_text("#!/bin/sh\n")
    fake.chmod(0o755)
    monkeypatch.setattr(rtflow, "BINARY", fake)
    assert rtflow.send_command("10.0.0.2:5000", mode="tcp", cca="bbr", duration="30s", rate_log=None,
                               notsent_lowat="16kb") == [
        str(fake), "send", "--to", "10.0.0.2:5000", "--mode", "tcp", "--cca", "bbr", "--duration", "30s",
        "--notsent-lowat", "16kb"]
    assert rtflow.recv_command("0.0.0.0:5000", frame_log=tmp_path / "f.csv") == [
        str(fake), "recv", "--listen", "0.0.0.0:5000", "--frame-log", str(tmp_path / "f.csv")]
    with pytest.raises(ValueError, match="unknown rtflow mode"):
        rtflow.send_command("10.0.0.2:5000", mode="quic")


def test_a_missing_binary_says_how_to_build_it(monkeypatch, tmp_path):
    monkeypatch.setattr(rtflow, "BINARY", tmp_path / "nothing")
    with pytest.raises(rtflow.RtflowError, match="make tools"):
        rtflow.binary()
