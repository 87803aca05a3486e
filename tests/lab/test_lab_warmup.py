# SPDX-License-Identifier: MIT
"""Warm-ups that settle low are warmed up again, and the logs of a replaced one are not read
as the new one's; each load's phase after its warm-up is drawn per page, the same under every
scheduler; runs in real time wait for a calm host."""

from pathlib import Path

import pytest

from confucius.lab import runner
from confucius.experiment import keys, plan as planning, scenario as sc
from confucius.lab.contract import RtFlowSpec, RtSpec
from confucius.lab.guest.rt import RtSession, Warm, fresh_logs

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
    def load(extra: str = "", top: str = "") -> sc.Scenario:
        path = tmp_path / "warm.toml"
        path.write_text(top + SCENARIO + extra)
        return sc.load(path)
    return load


def test_a_flow_s_fair_share_is_the_link_over_its_competitors_at_most_max_rate(scenario):
    s = scenario()
    alone, pair = planning.cells(s)
    assert runner.fair_share_bps(s, alone) == 8e6           # 20 Mbit/s, capped at max_rate
    s = scenario('[[bulk]]\ncca = "cubic"\n[[bulk]]\ncca = "reno"\n')
    assert runner.fair_share_bps(s, planning.cells(s)[1]) == pytest.approx(20e6 / 4)


def session(flows: list[tuple[str, float]]) -> RtSession:
    specs = [RtFlowSpec(mode=mode, cca=None, rate=None, label=mode, port=5000 + n, fair_bps=fair)
             for n, (mode, fair) in enumerate(flows)]
    rt = RtSpec(flows=specs, fps=30, start_rate="1mbit", min_rate="100kbit", max_rate="8mbit",
                retransmit_window="0ms", cpu="shared")
    return RtSession(0, rt, procs=None, scratch=Path("/nonexistent"))


def warm(targets: list) -> Warm:
    return Warm(warmup_s=5.0, converged=True, rt_target_bps=targets)


@pytest.mark.parametrize("targets, low", [
    ([4.1e6, None], False),    # the fixed-rate flow is never low, even without a rate log
    ([3.9e6, 2e6], True),      # under half of its 8 Mbit/s share
    ([None, 2e6], True),       # an adaptive flow that logged no rate has not warmed up
])
def test_only_rate_adaptive_flows_below_their_share_are_warmed_up_again(targets, low):
    rt = session([("gcc", 8e6), ("fixed", 8e6)])
    assert rt.settled_low(warm(targets), min_share=0.5) is low


def test_min_share_zero_never_warms_up_again():
    assert not session([("copa", 8e6)]).settled_low(warm([1.0]), 0.0)


def test_without_a_phase_every_load_follows_its_warm_up_and_the_keys_are_as_before(scenario):
    s = scenario()
    cell = planning.cells(s)[0]
    assert s.warmup.phase_s == 0 and keys.load_phase_s(s, cell, sc.PageRef("amazon")) == 0
    assert "phase_s" not in keys.conditions(s, cell).key_input()["warmup"]


def test_a_load_s_phase_is_drawn_per_page_and_repetition_the_same_under_every_scheduler(scenario):
    s = scenario('[warmup]\nphase = "10s"\n')
    assert keys.conditions(s, planning.cells(s)[0]).key_input()["warmup"]["phase_s"] == 10.0
    pages = [sc.PageRef(f"p{n:04d}") for n in range(400)]
    by_cell = [[keys.load_phase_s(s, cell, page) for page in pages] for cell in planning.cells(s)]
    phases = by_cell[0]
    assert all(drawn == phases for drawn in by_cell)      # two controllers, one draw
    assert all(0 <= phase < 10 for phase in phases) and len(set(phases)) > 390
    # Spread over the period: each second of it gets about a tenth of the pages.
    per_second = [sum(int(phase) == second for phase in phases) for second in range(10)]
    print("pages per second of the phase:", per_second)
    assert min(per_second) >= 20
    again = scenario('[warmup]\nphase = "10s"\n')
    assert [keys.load_phase_s(again, planning.cells(again)[0], page) for page in pages] == phases
    other_repetition = keys.Cell(planning.cells(s)[0].scheduler, planning.cells(s)[0].rt, 1)
    assert [keys.load_phase_s(s, other_repetition, page) for page in pages] != phases
    reseeded = scenario('[warmup]\nphase = "10s"\n', top="seed = 5\n")
    assert [keys.load_phase_s(reseeded, planning.cells(reseeded)[0], page) for page in pages] != phases


def test_the_vm_s_time_allows_each_page_its_longest_phase(scenario):
    plain, phased = scenario(), scenario('[warmup]\nphase = "10s"\n')
    plain_task, phased_task = runner.plan(plain, None)[0], runner.plan(phased, None)[0]
    assert len(phased_task.pages) == 1
    assert runner.vm_timeout(phased, phased_task) == runner.vm_timeout(plain, plain_task) + 10


def test_a_negative_phase_is_refused(scenario):
    with pytest.raises(sc.ScenarioError, match="phase"):
        scenario('[warmup]\nphase = "-1s"\n')


def test_a_real_time_run_waits_while_the_host_steals(monkeypatch):
    monkeypatch.setattr(runner, "STEAL_WINDOW_S", 0.5)
    windows = iter([0.30, 0.12, 0.01, 0.30])
    assert runner.wait_for_low_steal(lambda seconds: next(windows), limit=0.05) == 1.0
    assert runner.wait_for_low_steal(lambda seconds: 0.5, limit=0.05, wait_max_s=2.0) == 2.0
    assert runner.wait_for_low_steal(lambda seconds: 0.0) == 0.0


def test_steal_is_measured_from_the_host_s_cpu_time():
    share = runner.steal_over(0.2)
    assert 0.0 <= share <= 1.0


def test_a_replaced_warm_up_s_logs_are_gone_before_the_next_one_starts(tmp_path):
    # A tail reading the replaced sender's log, then the new one written over it, resumes
    # mid-row (a run under qemu on a busy host once failed on int('') for a time_ns, which
    # this explains; not reproduced since). And a
    # tail cannot tell the two files apart: the new file may even get the old inode.
    for name in ("s0-f0-frames.csv", "s0-f0-rate.csv"):
        (tmp_path / name).write_text("time_ns,target_bps\n1000,5000000\n")
    assert fresh_logs(tmp_path / "s0-f0") == (tmp_path / "s0-f0-frames.csv", tmp_path / "s0-f0-rate.csv")
    assert list(tmp_path.iterdir()) == []

