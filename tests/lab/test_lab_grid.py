# SPDX-License-Identifier: MIT
"""Scenario files with a [grid]: one file for a matrix of conditions, each point a scenario
of its own that reads as the file with the point's keys set, and each mistake refused with
the file, the axis and the fix."""

from pathlib import Path

import pytest

from confucius.experiment import grid, keys
from confucius.experiment import scenario as sc
from confucius.experiment.plan import cells
from confucius.sim.bottleneck import NS3_CCAS

REPO = Path(__file__).resolve().parents[2]

BASE = """
name = "home"
seed = 0
[link]
rtt = "40ms"
{link}
[schedulers]
names = ["confucius", "fq"]
[rt]
controllers = ["gcc"]
start_rate = "1mbit"
{rt}
[web]
sample = 2
{grid}
"""

GRID = """
[grid]
link.rate = ["25mbit", "100mbit"]
rt.max_rate = ["2.5mbit", "6mbit", "35mbit"]
"""


def points(text: str, tmp_path: Path) -> list[sc.Scenario]:
    path = tmp_path / "home.toml"
    path.write_text(text)
    return grid.load_points(path, ccas=NS3_CCAS)


def test_each_combination_is_a_scenario_named_after_its_values_in_the_order_written(tmp_path):
    found = points(BASE.format(link="", rt="", grid=GRID), tmp_path)
    assert [s.name for s in found] == ["home-25mbit-2p5mbit", "home-25mbit-6mbit", "home-25mbit-35mbit",
                                       "home-100mbit-2p5mbit", "home-100mbit-6mbit", "home-100mbit-35mbit"]
    assert [(s.link.rate_bps, s.rt.max_rate_bps) for s in found[:4]] == [
        (25e6, 2.5e6), (25e6, 6e6), (25e6, 35e6), (100e6, 2.5e6)]
    assert len({s.digest for s in found}) == 6
    assert len({keys.cell_key(s, c) for s in found for c in cells(s)}) == 12   # 2 schedulers a point


def test_a_point_measures_what_the_file_with_its_values_written_in_measures(tmp_path):
    """Its cells' keys are those of the plain file: a grid adds names, not conditions."""
    point = points(BASE.format(link="", rt="", grid=GRID), tmp_path)[4]
    plain = sc.parse(BASE.format(link='rate = "100mbit"', rt='max_rate = "6mbit"', grid=""),
                     tmp_path / "plain.toml", ccas=NS3_CCAS)
    assert [keys.cell_key(point, c) for c in cells(point)] == [keys.cell_key(plain, c) for c in cells(plain)]


def test_a_file_without_a_grid_is_one_scenario_and_a_grid_is_never_read_as_one(tmp_path):
    [alone] = points(BASE.format(link='rate = "20mbit"', rt="", grid=""), tmp_path)
    assert alone.name == "home"
    with pytest.raises(sc.ScenarioError, match=r"grid: the file stands for several scenarios.*sim sweep"):
        sc.parse(BASE.format(link="", rt="", grid=GRID), tmp_path / "home.toml", ccas=NS3_CCAS)


def test_the_home_matrix_has_twenty_points():
    found = grid.load_points(REPO / "scenarios" / "home.toml", ccas=NS3_CCAS)
    assert len(found) == 20 and found[0].name == "home-25mbit-2p5mbit" and found[-1].name == "home-1000mbit-100mbit"
    assert {s.web.http for s in found} == {"table3"}


@pytest.mark.parametrize("axes, message", [
    ('schedulers.names = [["fq"]]', r"grid.schedulers: a grid varies keys of link, rt, web, warmup, sim"),
    ("link = 3", r"grid.link: name a key of \[link\] and its values"),
    ('link.rate = "25mbit"', r"grid.link.rate: must be a list of the values"),
    ("link.rate = []", r"grid.link.rate: must be a list of the values"),
    ('link.rate = ["25mbit", "25mbit"]', r"grid.link.rate: a value is listed twice"),
    ('link.rate = ["2.5mbit", "2p5mbit"]', r"a value is listed twice \(or two name the same point\)"),
    ("link.rate = [[1]]", r"grid.link.rate: each value must be a string, number or boolean"),
    ('link.rate = ["25mbit", "fast"]', r"link.rate.*grid point link.rate = 'fast'"),
    ("web.sample = [" + ", ".join(str(n) for n in range(1, 30)) + "]\nrt.fps = ["
     + ", ".join(str(n) for n in range(10, 30)) + "]", r"grid: 580 points, more than 500"),
])
def test_a_bad_axis_is_refused_naming_the_file_and_the_axis(tmp_path, axes, message):
    text = BASE.format(link="", rt="", grid=f"[grid]\n{axes}")
    if "web.sample" in axes:
        text = text.replace("sample = 2\n", "")
    with pytest.raises(sc.ScenarioError, match=message) as refused:
        points(text, tmp_path)
    assert str(tmp_path / "home.toml") in str(refused.value)


def test_an_axis_the_table_also_sets_is_refused(tmp_path):
    with pytest.raises(sc.ScenarioError, match=r"grid.link.rate: \[link\] sets rate too: give it in one place"):
        points(BASE.format(link='rate = "20mbit"', rt="", grid=GRID), tmp_path)
