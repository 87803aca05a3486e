# SPDX-License-Identifier: MIT
"""Warm-ups that settle low are warmed up again; runs in real time wait for a calm host."""

from pathlib import Path

import pytest

from confucius.lab import runner
from confucius.lab import scenario as sc
from confucius.lab.guest import RtSession

SCENARIO = """
name = "warm"
[link]
rate = "20mbit"
[schedulers]
names = ["pfifo"]
[rt]
controllers = ["gcc", ["gcc", "fixed-2mbit"]]
max_rate = "8mbit"
[web]
pages = ["amazon"]
"""


@pytest.fixture
def scenario(tmp_path: Path):
    def load(extra: str = "") -> sc.Scenario:
        path = tmp_path / "warm.toml"
        path.write_text(SCENARIO + extra)
        return sc.load(path)
    return load


def test_a_flow_s_fair_share_is_the_link_over_its_competitors_at_most_max_rate(scenario):
    s = scenario()
    alone, pair = runner.cells(s)
    assert runner.fair_share_bps(s, alone) == 8e6           # 20 Mbit/s, capped at max_rate
    s = scenario('[[bulk]]\ncca = "cubic"\n[[bulk]]\ncca = "reno"\n')
    assert runner.fair_share_bps(s, runner.cells(s)[1]) == pytest.approx(20e6 / 4)


def session(flows: list[dict]) -> RtSession:
    return RtSession(0, {"flows": flows}, procs=None, scratch=Path("/nonexistent"))


@pytest.mark.parametrize("targets, low", [
    ([4.1e6, None], False),    # the fixed-rate flow is never low, even without a rate log
    ([3.9e6, 2e6], True),      # under half of its 8 Mbit/s share
    ([None, 2e6], True),       # an adaptive flow that logged no rate has not warmed up
])
def test_only_rate_adaptive_flows_below_their_share_are_warmed_up_again(targets, low):
    rt = session([{"mode": "gcc", "fair_bps": 8e6}, {"mode": "fixed", "fair_bps": 8e6}])
    assert rt.settled_low({"rt_target_bps": targets}, min_share=0.5) is low


def test_min_share_zero_never_warms_up_again():
    assert not session([{"mode": "copa", "fair_bps": 8e6}]).settled_low({"rt_target_bps": [1.0]}, 0.0)


def test_a_real_time_run_waits_while_the_host_steals(monkeypatch):
    monkeypatch.setattr(runner, "STEAL_WINDOW_S", 0.5)
    windows = iter([0.30, 0.12, 0.01, 0.30])
    assert runner.wait_for_low_steal(lambda seconds: next(windows), limit=0.05) == 1.0
    assert runner.wait_for_low_steal(lambda seconds: 0.5, limit=0.05, wait_max_s=2.0) == 2.0
    assert runner.wait_for_low_steal(lambda seconds: 0.0) == 0.0


def test_steal_is_measured_from_the_host_s_cpu_time():
    share = runner.steal_over(0.2)
    assert 0.0 <= share <= 1.0
