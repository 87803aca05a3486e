# SPDX-License-Identifier: MIT
"""Flent's tests from the database (experiment/db_flent.py, one row per test): per scenario,
scheduler and test, latency under load (median and 99th percentile) and throughput per
direction, the figures operators read off Flent's own summaries and plots.

The data file is the source of truth, as the frames are for `report summary`: each test's
figures are computed again from its `*.flent.gz` with `lab/flent_files.summarise` when the file is
there, so rows stored by older code follow today's definitions; the stored columns stand in
for a file that is gone."""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass

from pathlib import Path

from confucius import metrics
from confucius.lab import flent_files
from confucius.experiment.records import FLENT_TESTS
from confucius.experiment import db_flent
from confucius.experiment.db import Database

FIGURES = ("latency_median_ms", "latency_p99_ms", "udp_median_ms", "udp_p99_ms", "download_mbps", "upload_mbps")


@dataclass(frozen=True)
class FlentRow:
    scenario: str
    scheduler: str
    test: str
    latency: str                     # the latency series (Ping (ms) ICMP or VoIP::delay)
    runs: int                        # the figures are means over these runs' tests
    engine: str
    latency_median_ms: float
    latency_p99_ms: float
    udp_median_ms: float
    udp_p99_ms: float
    download_mbps: float
    upload_mbps: float
    data_files: tuple[str, ...]


def rows(db: Database, scenario: str | None = None) -> list[FlentRow]:
    """One row per scenario, scheduler and test, over the tests with a summary of valid runs."""
    found = db_flent.summarised_tests(db, scenario)
    groups: dict[tuple, list] = {}
    for row in found:
        groups.setdefault((row["scenario"], row["scheduler"], row["test"]), []).append(row)
    order = {name: n for n, name in enumerate(FLENT_TESTS)}
    result = [_row(key, group) for key, group in groups.items()]
    return sorted(result, key=lambda r: (r.scenario, order.get(r.test, len(order)), _first_run(groups, r)))


def _first_run(groups: dict, row: FlentRow) -> int:
    """Schedulers in the order they were run (the scenario's order)."""
    return groups[(row.scenario, row.scheduler, row.test)][0]["run_id"]


def _figures(row) -> dict:
    """A test's figures: from its data file if it is there, else as stored."""
    path = Path(row["data_file"]) if row["data_file"] else None
    if path is None or not path.is_file():
        return {name: row[name] for name in FIGURES}
    summary = flent_files.summarise(flent_files.read(path)).to_dict()
    return {name: summary[name] for name in FIGURES}


def _row(key: tuple, group: list) -> FlentRow:
    scenario, scheduler, test = key
    each = [_figures(r) for r in group]
    figures = {name: metrics.mean(f[name] for f in each) for name in FIGURES}
    return FlentRow(scenario=scenario, scheduler=scheduler, test=test, latency=group[0]["latency"], runs=len(group),
                    engine=f"{group[0]['engine']} ({group[0]['time_mode']})", **figures,
                    data_files=tuple(r["data_file"] for r in group))


def rows_json(found: list[FlentRow]) -> str:
    def clean(value):
        return None if isinstance(value, float) and math.isnan(value) else value
    return json.dumps([{k: clean(v) for k, v in asdict(r).items()} for r in found], indent=1)
