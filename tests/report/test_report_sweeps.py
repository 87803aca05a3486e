# SPDX-License-Identifier: MIT
"""`confucius report sweeps` (paper 000 Figs. 14, 15, 25): pages of N Web flows of one size,
each point's stall, PLT against fq and JFI worked out by hand, the two sweeps of a scenario
told apart, and the figures drawn."""

import sys
from dataclasses import replace
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from test_report_summary import result  # noqa: E402

from confucius.report import plots, sweeps  # noqa: E402


def load(scheduler: str, flows: int, size: int, stall: float, plt: float, jfi: float = 0.5, scenario: str = "sw"):
    return replace(result(scheduler, f"flows-{flows}-size-{size}", stall, plt), jfi=jfi, scenario=scenario)


def test_each_point_of_the_number_sweep_has_its_stall_plt_against_fq_and_jfi():
    loads = [load("fq", 5, 15360, 0.0, 1.0, 0.3), load("fq", 10, 15360, 0.4, 2.0, 0.2),
             load("confucius", 5, 15360, 0.0, 1.5, 0.4), load("confucius", 10, 15360, 0.1, 2.4, 0.6),
             replace(load("confucius", 10, 15360, 0.3, 2.6, 0.8), repetition=1),   # fq has no repetition 1
             load("confucius", 5, 9437184, 0.2, 9.0), load("fq", 5, 9437184, 1.0, 8.0),
             load("fq", 5, 15360, 0.0, 1.0, scenario="other"), load("confucius", 7, 1, 0.0, 1.0)]
    loads[-1] = replace(loads[-1], page_key="p0001")                        # not a sweep page
    points = sweeps.sweep_points(loads, ["confucius", "fq"])
    on = {(p.scenario, p.swept, p.scheduler, p.flows, p.size_bytes): p for p in points}
    assert [k for k in on if k[0] == "sw"] == [
        ("sw", "flows", "confucius", 5, 15360), ("sw", "flows", "confucius", 10, 15360),
        ("sw", "flows", "fq", 5, 15360), ("sw", "flows", "fq", 10, 15360),
        ("sw", "sizes", "confucius", 5, 15360), ("sw", "sizes", "confucius", 5, 9437184),
        ("sw", "sizes", "fq", 5, 15360), ("sw", "sizes", "fq", 5, 9437184)]
    ten = on[("sw", "flows", "confucius", 10, 15360)]
    assert ten.loads == 2 and ten.stall_s == pytest.approx(0.2) and ten.stalled_share == 1.0
    assert ten.plt_vs_fq == pytest.approx(2.4 / 2.0 - 1)       # paired over the pages fq loaded
    assert ten.degradation_s == pytest.approx(0.4) and ten.jfi == pytest.approx(0.7)
    assert on[("sw", "sizes", "confucius", 5, 9437184)].plt_vs_fq == pytest.approx(9.0 / 8.0 - 1)
    assert ("other", "flows", "fq", 5, 15360) in on


def test_a_sweep_of_two_points_or_more_is_drawn(tmp_path):
    loads = [load(s, n, 15360, 0.1, 1.0) for s in ("fq", "confucius") for n in (5, 10, 20)]
    made = plots.sweeps(sweeps.sweep_points(loads), tmp_path)
    assert [p.name for p in made] == ["sw-flows-gcc.png"]     # the size sweep has one point: no figure
    assert made[0].stat().st_size > 10_000


def test_the_theory_is_table_1_at_the_seeds_interval():
    assert sweeps.theory_degradation_s() == pytest.approx(0.25 / 0.6931, rel=1e-3)   # log2(e)/λ, 1/λ = 250 ms
