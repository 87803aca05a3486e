# SPDX-License-Identifier: MIT
"""The interim demo: the motivating example through the C core, shares every 50 ms."""

import pytest

from confucius.coredemo import plot, share_trace


@pytest.fixture(scope="module")
def rows():
    return share_trace()


def mean_share(rows, key, start_ms, end_ms):
    window = [r[key] for r in rows if start_ms < r["time_ms"] <= end_ms]
    return sum(window) / len(window)


@pytest.mark.parametrize("start, end, expected", [
    (0, 250, 1 / 2), (250, 500, 1 / 3), (500, 750, 1 / 5), (750, 1000, 1 / 9)])
def test_confucius_halves_the_real_time_share_tick_by_tick(rows, start, end, expected):
    assert mean_share(rows, "confucius_rt", start, end) == pytest.approx(expected, abs=0.01)


def test_fair_queueing_cuts_to_the_fair_share_at_once(rows):
    assert mean_share(rows, "fq_rt", 0, 900) == pytest.approx(1 / 10, abs=0.01)


def test_the_real_time_flow_has_the_link_before_and_after(rows):
    assert mean_share(rows, "confucius_rt", -500, 0) == 1.0
    assert rows[-1]["confucius_rt"] == 1.0 and rows[-1]["fq_rt"] == 1.0


def test_the_plot_is_written(rows, tmp_path):
    path = plot(rows, tmp_path / "shares.png")
    assert path.stat().st_size > 10_000
