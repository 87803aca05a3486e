# SPDX-License-Identifier: MIT
"""Flent's tests from the database (experiment/db_flent.py, one row per test): per scenario,
scheduler and test, latency under load (median and 99th percentile), the bulk flows' own
RTT (median and 95th percentile per direction) and throughput per direction, the figures
operators read off Flent's own summaries and plots; and Flent's own plots of the data
files, the schedulers of a test side by side (`plots`). For rtt_fair's tests, per server
(one RTT each): its download's and upload's throughput and their share of the direction's,
their own RTT and the server's ping, with Jain's fairness index over the servers.

The data file is the source of truth, as the frames are for `report summary`: each test's
figures are computed again from its `*.flent.gz` with `lab/flent_files.summarise_file` when the file is
there, so rows stored by older code follow today's definitions; the stored columns stand in
for a file that is gone."""

from __future__ import annotations

import math
import subprocess
from dataclasses import dataclass
from pathlib import Path


from confucius import metrics
from confucius.lab import flent_files
from confucius.experiment.records import FLENT_TESTS
from confucius.experiment import db_flent
from confucius.experiment.db import Database


FIGURES = ("latency_median_ms", "latency_p99_ms", "udp_median_ms", "udp_p99_ms", "download_mbps", "upload_mbps",
           "down_rtt_median_ms", "down_rtt_p95_ms", "up_rtt_median_ms", "up_rtt_p95_ms")
# Flent's own plots per test, each over the schedulers' data files: the sparse flows'
# latency (ping_cdf, voip_delay_cdf), the uploads' own RTT from Flent's socket stats
# (tcp_rtt_cdf; Flent samples no download's sender) and the throughput (box_totals).
PLOTS = {"rrul": ("ping_cdf", "tcp_rtt_cdf", "box_totals"),
         # rtt_fair's: each server's download and upload, and its ping, the schedulers side by side.
         "rtt_fair": ("bar_combine_down", "bar_combine_up", "ping_cdf_combine"),
         "rtt_fair_var": ("bar_combine_down", "bar_combine_up", "ping_cdf_combine"), "rrul_be": ("ping_cdf", "tcp_rtt_cdf", "box_totals"),
         "tcp_nup": ("ping_cdf", "tcp_rtt_cdf", "box_totals"), "tcp_ndown": ("ping_cdf", "box_totals"),
         "voip": ("voip_delay_cdf",), "voip-rrul": ("voip_delay_cdf", "ping_cdf", "tcp_rtt_cdf", "box_totals")}
PLOT_TIMEOUT_S = 300.0
SERVER_FIGURES = ("download_mbps", "upload_mbps", "down_rtt_median_ms", "down_rtt_p95_ms", "up_rtt_median_ms",
                  "up_rtt_p95_ms", "ping_median_ms")


@dataclass(frozen=True)
class ServerRow:
    """One of rtt_fair's servers under one scheduler, means over the runs' tests."""
    address: str
    rtt_ms: float                    # the RTT the lab gives it
    download_mbps: float
    upload_mbps: float
    download_share: float            # of the servers' download total
    upload_share: float
    down_rtt_median_ms: float        # its flows' own RTT (flent_files.ServerShare)
    down_rtt_p95_ms: float
    up_rtt_median_ms: float
    up_rtt_p95_ms: float
    ping_median_ms: float


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
    down_rtt_median_ms: float        # the bulk flows' own RTT per direction (flent_files)
    down_rtt_p95_ms: float
    up_rtt_median_ms: float
    up_rtt_p95_ms: float
    data_files: tuple[str, ...]
    servers: tuple[ServerRow, ...] = ()   # rtt_fair's, in the order of their RTTs
    download_jfi: float = math.nan        # Jain's index over the servers' throughput
    upload_jfi: float = math.nan


def rows(db: Database, scenario: str | None = None) -> list[FlentRow]:
    """One row per scenario, scheduler and test, over the tests with a summary of valid runs."""
    found = db_flent.summarised_tests(db, scenario)
    groups: dict[tuple, list] = {}
    for row in found:
        groups.setdefault((row["scenario"], row["scheduler"], row["test"]), []).append(row)
    order = {name: n for n, name in enumerate(FLENT_TESTS)}
    result = [_row(db, key, group) for key, group in groups.items()]
    return sorted(result, key=lambda r: (r.scenario, order.get(r.test, len(order)), _first_run(groups, r)))


def _first_run(groups: dict, row: FlentRow) -> int:
    """Schedulers in the order they were run (the scenario's order)."""
    return groups[(row.scenario, row.scheduler, row.test)][0]["run_id"]


def _figures(db: Database, row) -> tuple[dict, list[dict]]:
    """A test's figures and its servers' (rtt_fair's): from its data file if it is there,
    else as stored."""
    path = Path(row["data_file"]) if row["data_file"] else None
    if path is None or not path.is_file():
        return {name: row[name] for name in FIGURES}, [dict(s) for s in db_flent.stored_servers(db, row["id"])]
    summary = flent_files.summarise_file(path).to_dict()
    return {name: summary[name] for name in FIGURES}, summary["servers"]


def _row(db: Database, key: tuple, group: list) -> FlentRow:
    scenario, scheduler, test = key
    each = [_figures(db, r) for r in group]
    figures = {name: metrics.mean(f[name] for f, _ in each) for name in FIGURES}
    servers = _server_rows([servers for _, servers in each])
    return FlentRow(scenario=scenario, scheduler=scheduler, test=test, latency=group[0]["latency"], runs=len(group),
                    engine=f"{group[0]['engine']} ({group[0]['time_mode']})", **figures,
                    data_files=tuple(r["data_file"] for r in group), servers=servers,
                    download_jfi=_jfi([s.download_mbps for s in servers]),
                    upload_jfi=_jfi([s.upload_mbps for s in servers]))


def _server_rows(runs: list[list[dict]]) -> tuple[ServerRow, ...]:
    """Each server's figures, means over the runs (matched by address: the same scenario
    gives the same servers in the same order), with its share of each direction."""
    by_address: dict[str, list[dict]] = {}
    for servers in runs:
        for server in servers:
            by_address.setdefault(server["address"], []).append(server)
    means = {address: {name: metrics.mean(s[name] for s in found) for name in SERVER_FIGURES}
             for address, found in by_address.items()}
    totals = {name: sum(m[name] for m in means.values()) for name in ("download_mbps", "upload_mbps")}
    return tuple(ServerRow(address=address, rtt_ms=found[0]["rtt_ms"], **means[address],
                           download_share=_share(means[address]["download_mbps"], totals["download_mbps"]),
                           upload_share=_share(means[address]["upload_mbps"], totals["upload_mbps"]))
                 for address, found in by_address.items())


def _share(part: float, total: float) -> float:
    return part / total if total > 0 else math.nan


def _jfi(throughputs: list[float]) -> float:
    if not throughputs or any(math.isnan(t) for t in throughputs):
        return math.nan
    return metrics.jfi(throughputs)


class PlotError(RuntimeError):
    """Flent could not draw a plot (its complaint in the message)."""


def plots(found: list[FlentRow], out: Path) -> list[Path]:
    """Flent's own plots (PLOTS) of each scenario's tests into `out`, every scheduler's data
    files in one figure (Flent labels each by its title, the scheduler), as
    `<scenario>-<test>-<plot>.png`: Flent's command line on the kept data files."""
    out.mkdir(parents=True, exist_ok=True)
    by_test: dict[tuple[str, str], list[str]] = {}
    for row in found:
        by_test.setdefault((row.scenario, row.test), []).extend(f for f in row.data_files if f and Path(f).is_file())
    drawn = []
    for (scenario, test), files in by_test.items():
        for plot in PLOTS.get(test, ()) if files else ():
            drawn.append(_plot(files, plot, out / f"{scenario}-{test}-{plot}.png"))
    return drawn


def _plot(files: list[str], plot: str, target: Path) -> Path:
    inputs = [arg for f in files for arg in ("-i", f)]
    try:
        done = subprocess.run([str(flent_files.FLENT), *inputs, "-p", plot, "-o", str(target)],
                              capture_output=True, text=True, timeout=PLOT_TIMEOUT_S)
    except (OSError, subprocess.TimeoutExpired) as err:
        raise PlotError(f"flent -p {plot}: {err}") from None
    if done.returncode != 0 or not target.is_file():
        raise PlotError(f"flent -p {plot} ({len(files)} files): exit {done.returncode}: "
                        f"{(done.stderr or done.stdout).strip()[-500:]}")
    return target
