# SPDX-License-Identifier: MIT
"""A scenario file with a grid: one file for a matrix of conditions, such as access links
against the real-time application's rate.

    [grid]                        # every combination is a scenario of its own,
    link.rate = ["25mbit", "100mbit"]       # named after the file's name and its values:
    rt.max_rate = ["2.5mbit", "35mbit"]     # home-25mbit-2p5mbit, home-25mbit-35mbit, ...

Each axis names a key of one of the file's tables (which must not set it itself) and the
values it takes; a point is the file with those keys set, read and checked as any scenario
(scenario.parse), so a value the key would refuse is refused with the point's name. Points are ordered as the axes are
written, the last varying fastest. Each point's cells carry their own link and RT flow in
their keys (keys.CellConditions), so points never resume one another's measurements and
adding a value to an axis keeps what the others measured.
"""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from . import scenario as sc

# The tables a grid may vary: what describes the link, the RT flow, the pages and the
# simulator's settings, not the schedulers compared (they are every point's columns).
AXIS_TABLES = ("link", "rt", "web", "warmup", "sim")
MAX_POINTS = 500


@dataclass(frozen=True)
class GridPoint:
    """One combination: (table, key, value) per axis."""
    values: tuple[tuple[str, str, Any], ...]

    @property
    def suffix(self) -> str:
        """What the point adds to the file's name, e.g. 25mbit-2p5mbit."""
        return "-".join(label(value) for _, _, value in self.values)

    def describe(self) -> str:
        return ", ".join(f"{table}.{key} = {value!r}" for table, key, value in self.values)

    def apply(self, data: dict, path: Path) -> None:
        """Set the point's values in the parsed TOML of the scenario file at `path` (and
        drop its [grid])."""
        data.pop("grid", None)
        for table, key, value in self.values:
            section = data.setdefault(table, {})
            if not isinstance(section, dict):
                raise sc.ScenarioError(f"{path}: grid.{table}.{key}: [{table}] must be a table")
            if key in section:
                raise sc.ScenarioError(f"{path}: grid.{table}.{key}: [{table}] sets {key} too: give it in one place")
            section[key] = value


def label(value: Any) -> str:
    """A value as part of a scenario's name: 2.5mbit -> 2p5mbit, True -> true."""
    text = str(value).lower()
    return re.sub(r"[^a-z0-9_-]", "_", text.replace(".", "p"))


def points(data: dict, path: Path) -> list[GridPoint]:
    """The grid's points from a scenario file's parsed TOML, in the order written, or []
    when it has none. Axes and values are checked here; the values' meaning by the point."""
    grid = data.get("grid")
    if grid is None:
        return []
    if not isinstance(grid, dict) or not grid:
        raise sc.ScenarioError(f"{path}: grid: must be a table of axes, e.g. link.rate = [\"25mbit\", \"100mbit\"]")
    axes = [_axis(table, key, values, path) for table, keys in grid.items()
            for key, values in _axis_keys(table, keys, path)]
    count = 1
    for axis in axes:
        count *= len(axis)
    if count > MAX_POINTS:
        raise sc.ScenarioError(f"{path}: grid: {count} points, more than {MAX_POINTS}: split the file")
    return [GridPoint(tuple(combination)) for combination in itertools.product(*axes)]


def _axis_keys(table: str, keys: Any, path: Path) -> list[tuple[str, Any]]:
    if table not in AXIS_TABLES:
        raise sc.ScenarioError(f"{path}: grid.{table}: a grid varies keys of {', '.join(AXIS_TABLES)} "
                               f"(e.g. link.rate), not {table!r}")
    if not isinstance(keys, dict) or not keys:
        raise sc.ScenarioError(f"{path}: grid.{table}: name a key of [{table}] and its values, "
                               f"e.g. {table}.rate = [...]")
    return list(keys.items())


def _axis(table: str, key: str, values: Any, path: Path) -> list[tuple[str, str, Any]]:
    where = f"{path}: grid.{table}.{key}"
    if not isinstance(values, list) or not values:
        raise sc.ScenarioError(f"{where}: must be a list of the values the key takes, e.g. [\"25mbit\", \"100mbit\"]")
    for value in values:
        if not isinstance(value, (str, int, float, bool)):
            raise sc.ScenarioError(f"{where}: each value must be a string, number or boolean, got {value!r}")
    labels = [label(v) for v in values]
    if len(set(labels)) != len(labels):
        raise sc.ScenarioError(f"{where}: a value is listed twice (or two name the same point): {values}")
    return [(table, key, value) for value in values]


def parse_points(text: str, path: Path, **options) -> list[sc.Scenario]:
    """Every scenario the file stands for: itself when it has no grid, else one per point.
    `options` are scenario.parse's."""
    path = Path(path)
    grid = points(sc.read_toml(text, path), path)
    if not grid:
        return [sc.parse(text, path, **options)]
    return [_point_scenario(text, path, point, options) for point in grid]


def _point_scenario(text: str, path: Path, point: GridPoint, options: dict) -> sc.Scenario:
    try:
        return sc.parse(text, path, point=point, **options)
    except sc.ScenarioError as err:
        raise sc.ScenarioError(f"{err} (grid point {point.describe()})") from None


def load_points(path, **options) -> list[sc.Scenario]:
    """Read the scenario file at `path` as every scenario it stands for (parse_points)."""
    path = Path(path)
    return parse_points(sc.read_text(path), path, **options)
