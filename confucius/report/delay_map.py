# SPDX-License-Identifier: MIT
"""Seed 002 Fig. 4: the video's largest frame delay while a page loads, over the link's
capacity and the video's bitrate as a share of it, for every point of a grid of links and RT
caps (scenarios/seeds-fig4.toml, scenarios/home.toml) and every scheduler measured there.

The seed gives one visit's largest delay per cell; over many pages each cell here has the
mean of the loads' largest delays (metrics.max_frame_delay, as every report) and the
largest of them. The capacity and the cap are read from the grid's scenario file, point by
point, since a load records the link but not the cap it ran under.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from confucius import metrics
from confucius.experiment.scenario import Scenario

from .data import PageResult, ReportError


@dataclass(frozen=True)
class DelayCell:
    scenario: str
    controller: str
    scheduler: str
    link_bps: float
    rt_max_bps: float
    share: float                # the RT flow's cap over the link's rate (the seed's "utilization")
    loads: int
    max_delay_ms: float         # mean of the loads' largest frame delays
    worst_ms: float             # the largest of them
    stall_s: float              # mean stall per load, beside


def _constant_rate(point: Scenario) -> float:
    if point.link.rate_bps is None:
        raise ReportError(f"{point.path}: {point.name} has no constant link rate: the map needs a capacity")
    return point.link.rate_bps


def delay_cells(points: list[Scenario], results: list[PageResult]) -> list[DelayCell]:
    """A cell per point, controller and scheduler with loads, in the points' order."""
    cells = []
    for point in points:
        link = _constant_rate(point)
        groups: dict[tuple[str, str], list[PageResult]] = {}
        for r in results:
            if r.scenario == point.name:
                groups.setdefault((r.controller, r.scheduler), []).append(r)
        for (controller, scheduler), loads in sorted(groups.items()):
            delays = [r.max_delay_ms for r in loads]
            cells.append(DelayCell(point.name, controller, scheduler, link, point.rt.max_rate_bps,
                                   point.rt.max_rate_bps / link, len(loads), metrics.mean(delays), max(delays),
                                   metrics.mean(r.stall_s for r in loads)))
    return cells


def draw(cells: list[DelayCell], out: Path) -> Path:
    """One heat map per controller and scheduler: capacity across, the RT flow's cap up (as a
    share of the capacity when the grid varies the share, as the seed's figure, else in
    Mbit/s), the mean largest frame delay in each square."""
    from .plots import heat_maps

    by_share = len({round(c.share, 3) for c in cells}) <= len({c.rt_max_bps for c in cells})
    panels: dict[str, dict[tuple[float, float], float]] = {}
    for c in cells:
        up = round(c.share, 3) if by_share else c.rt_max_bps / 1e6
        panels.setdefault(f"{c.scheduler} ({c.controller})", {})[(c.link_bps / 1e6, up)] = c.max_delay_ms
    return heat_maps(panels, out, "capacity (Mbit/s)", "RT cap / capacity" if by_share else "RT cap (Mbit/s)",
                     "largest frame delay (ms, mean per load)")
