# SPDX-License-Identifier: MIT
"""`confucius report delay-map` (seed 002 Fig. 4): each point of a grid of capacities and RT
caps with its loads' largest frame delays, worked out by hand, and the heat maps drawn."""

import sys
from dataclasses import replace
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from test_report_summary import result  # noqa: E402

from confucius.experiment import grid  # noqa: E402
from confucius.report import delay_map  # noqa: E402
from confucius.report.data import ReportError  # noqa: E402

GRID = """
name = "fig4"
[link]
rtt = "40ms"
[schedulers]
names = ["confucius", "fq"]
[rt]
controllers = ["gcc"]
[web]
sample = 2
[grid]
link.rate = ["10mbit", "40mbit"]
rt.max_share = [0.3, 0.9]
"""


def points(tmp_path, text=GRID):
    path = tmp_path / "fig4.toml"
    path.write_text(text)
    return grid.load_points(path)


def loads(scenario: str, scheduler: str, delays: list[float]) -> list:
    return [replace(result(scheduler, f"p{n}", 0.1 if d > 190 else 0.0, 1.0, max_delay=d), scenario=scenario)
            for n, d in enumerate(delays)]


def test_each_point_carries_its_capacity_cap_and_loads_largest_delays(tmp_path):
    found = delay_map.delay_cells(points(tmp_path), loads("fig4-40mbit-0p9", "fq", [300.0, 500.0])
                                  + loads("fig4-40mbit-0p9", "confucius", [100.0, 120.0])
                                  + loads("fig4-10mbit-0p3", "fq", [40.0]) + loads("other", "fq", [900.0]))
    assert [(c.scenario, c.scheduler) for c in found] == [
        ("fig4-10mbit-0p3", "fq"), ("fig4-40mbit-0p9", "confucius"), ("fig4-40mbit-0p9", "fq")]
    fq = found[2]
    assert (fq.link_bps, fq.rt_max_bps, fq.share, fq.loads) == (40e6, pytest.approx(36e6), pytest.approx(0.9), 2)
    assert fq.max_delay_ms == 400.0 and fq.worst_ms == 500.0 and fq.stall_s == pytest.approx(0.1)


def test_the_maps_are_drawn_and_a_point_without_a_capacity_is_refused(tmp_path):
    found = delay_map.delay_cells(points(tmp_path), loads("fig4-40mbit-0p9", "fq", [300.0])
                                  + loads("fig4-10mbit-0p3", "confucius", [60.0]))
    out = delay_map.draw(found, tmp_path / "maps" / "fig4.png")
    assert out.stat().st_size > 10_000
    (tmp_path / "t.log").write_text("0 10\n")
    traced = GRID.replace("[grid]\nlink.rate = [\"10mbit\", \"40mbit\"]\nrt.max_share = [0.3, 0.9]",
                          '[grid]\nrt.max_rate = ["3mbit", "9mbit"]').replace('rtt = "40ms"', 'rtt = "40ms"\ntrace = "t.log"')
    with pytest.raises(ReportError, match="has no constant link rate: the map needs a capacity"):
        delay_map.delay_cells(points(tmp_path, traced), [])
