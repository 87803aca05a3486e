# SPDX-License-Identifier: MIT
"""One short Flent run through the whole pipeline under User-Mode Linux (virtual time):
scenario -> spec -> guest (netserver and irtt on the server side, Flent on the client side,
fq_codel shaping both directions at 20 Mbit/s) -> Flent's data file kept in the results
folder, summarised into the database and the report, with Flent's own plot beside it.

tcp_nup with 2 uploads for 5 s (Flent adds its 5 s delay before and after): the uploads
cross the upload's shaper, so their sum sits just under TCP's goodput ceiling at 20 Mbit/s
(1448 payload bytes per 1514 on the wire: 19.13 Mbit/s), and ping's round trips under that
load stay near the 40 ms of propagation, as fq_codel keeps ICMP apart from the uploads; the
uploads' own RTT (Flent's socket stats) stays near it too."""

import gzip
import json
import math
import os
from pathlib import Path

import pytest

from confucius.lab import flent_files, runner, uml
from confucius.experiment import scenario as sc
from confucius.experiment.db import Database
from confucius.report import flent_table

pytestmark = [
    pytest.mark.vm,
    pytest.mark.skipif(not uml.KERNEL_BINARY.is_file(), reason="no UML kernel: run `make uml`"),
    pytest.mark.skipif(os.geteuid() != 0, reason="the UML guest writes the host's files as root"),
    pytest.mark.skipif(not flent_files.FLENT.is_file(), reason="no Flent in the virtualenv: run `make venv`"),
]

SCENARIO = """
name = "flent-short"
engine = "uml"
[link]
rate = "20mbit"
rtt = "40ms"
[schedulers]
names = ["fq_codel"]
[flent]
tests = ["tcp_nup"]
length = "5s"
upload_streams = 2
"""
GOODPUT_CEILING_MBPS = 20 * 1448 / 1514


def run_scenario(root: Path, text: str):
    """The scenario `text` run through the whole lab into root/lab.sqlite: its report."""
    path = root / "scenario.toml"
    path.write_text(text)
    return runner.run_matrix(sc.load(path), db_path=root / "lab.sqlite", results_root=root / "runs", progress=False)


@pytest.fixture(scope="module")
def measured(tmp_path_factory):
    root = tmp_path_factory.mktemp("flent")
    return root, run_scenario(root, SCENARIO)


def test_flent_runs_in_the_lab_and_its_data_file_is_kept(measured):
    root, report = measured
    assert (report.runs, report.failed, report.units_valid) == (1, 0, 1)
    with Database(root / "lab.sqlite") as db:
        [test] = db.query("SELECT * FROM flent_tests")
        [run] = db.query("SELECT * FROM runs")
    assert test["test"] == "tcp_nup" and test["exit"] == 0 and test["error"] is None
    data_file = Path(test["data_file"])
    assert data_file.is_file() and data_file.name.endswith(".flent.gz")
    assert data_file.parent.parent.parent == Path(run["results_dir"])  # <run>/flent/tcp_nup/
    assert Path(test["plot_file"]).is_file(), test["plot_error"]
    with gzip.open(data_file, "rt") as f:
        assert json.load(f)["metadata"]["NAME"] == "tcp_nup"
    # Virtual time: the test lasted what Flent asks (5 s delay, 5 s, 5 s delay), give or take its start.
    assert 15 <= (test["ended_ns"] - test["started_ns"]) / 1e9 <= 25


def test_the_summary_is_plausible_against_the_link(measured):
    root, _ = measured
    with Database(root / "lab.sqlite") as db:
        [row] = flent_table.rows(db)
    assert (row.scheduler, row.test, row.latency) == ("fq_codel", "tcp_nup", "Ping (ms) ICMP")
    assert 0.9 * GOODPUT_CEILING_MBPS <= row.upload_mbps <= GOODPUT_CEILING_MBPS * 1.01
    assert math.isnan(row.download_mbps)  # no downloads in tcp_nup
    assert 40.0 <= row.latency_median_ms <= 50.0
    assert row.latency_median_ms <= row.latency_p99_ms <= 100.0
    # The uploads' own RTT (Flent's socket stats): never below the propagation; under
    # fq_codel each flow's standing queue stays short (its 5 ms target, plus a packet's
    # serialisation). No downloads, so no download senders on the server.
    assert 40.0 <= row.up_rtt_median_ms <= row.up_rtt_p95_ms <= 100.0
    assert math.isnan(row.down_rtt_median_ms)
    print(f"tcp_nup, fq_codel: {row.upload_mbps:.2f} Mbit/s up, ping {row.latency_median_ms} / {row.latency_p99_ms} ms, "
          f"uploads' RTT {row.up_rtt_median_ms} / {row.up_rtt_p95_ms} ms")
