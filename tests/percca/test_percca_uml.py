# SPDX-License-Identifier: MIT
"""One short per-CCA run on the real kernel (UML, virtual time): against BBR, per-CCA
queues with an ideal classifier give Reno clearly more of its fair share than a shared
FIFO (paper 003 §III-B: 11.9 % of the fair share in a shared buffer).

Measured here (20 Mbit/s, 40 ms, 2 Reno + 2 BBR, buffer C·RTT/√N = 33 packets, 2 s warm-up
+ 3 s): shared FIFO MinThr 0.074-0.186 (8 runs); per-CCA queues (confucius mode external,
filters on the destination port) 0.857-0.864 (2 runs) with classes weighted 2:2 by their
mapped flows, and 0.715-0.769 (6 runs) when the qdisc weighed them by their backlogged
flows; 12-25 s of wall time per run. The test asks for a gap of 0.4 and
a shared MinThr under 0.3.
"""

import os

import pytest

from confucius.lab import uml
from confucius.experiment.db import Database
from confucius.percca import runner
from confucius.percca.mix_scenario import parse

pytestmark = [
    pytest.mark.skipif(not uml.KERNEL_BINARY.is_file(), reason="no UML kernel: run `make uml`"),
    pytest.mark.skipif(os.geteuid() != 0, reason="the UML guest writes the host's files as root"),
]

SCENARIO = """
name = "percca-reno-bbr"
engine = "uml"
seeds = [1]
duration = "3s"
warmup = "2s"
[link]
rate = "20mbit"
rtt = "40ms"
[flows]
reno = 2
bbr = 2
[queues]
policies = ["shared", "per-cca"]
[classifier]
kind = "ideal"
"""
GAP = 0.4
SHARED_AT_MOST = 0.3


def test_per_cca_queues_protect_reno_from_bbr(tmp_path):
    sc = parse(SCENARIO, tmp_path / "reno-bbr.toml")
    outcomes = runner.run_scenario(sc, tmp_path / "db.sqlite", tmp_path / "runs", progress=print)
    assert [error for _, _, error in outcomes] == [None, None]
    with Database(tmp_path / "db.sqlite") as db:
        runs = {r["policy"]: r for r in db.query("SELECT * FROM percca_runs")}
        reno = {r["policy"]: r["normalised"] for r in db.query(
            "SELECT r.policy, c.normalised FROM percca_ccas c JOIN percca_runs r ON r.id = c.run_id "
            "WHERE c.cca = 'reno'")}
        queues = db.query("SELECT q.* FROM percca_queues q JOIN percca_runs r ON r.id = q.run_id "
                          "WHERE r.policy = 'per-cca' ORDER BY q.queue")
    shared, isolated = runs["shared"]["min_thr"], runs["per-cca"]["min_thr"]
    print(f"Reno's share of its fair share: shared FIFO {shared:.3f}, per-CCA queues {isolated:.3f} "
          f"(paper 003: 0.119 shared); link use {runs['shared']['total_bps'] / 20e6:.0%}, "
          f"{runs['per-cca']['total_bps'] / 20e6:.0%}")
    # Reno is the starved CCA in both, and the measured figures are what the rows say.
    assert reno == {"shared": pytest.approx(shared), "per-cca": pytest.approx(isolated)}
    assert shared < SHARED_AT_MOST
    assert isolated - shared > GAP
    # Both links were full, and each CCA had its own queue, occupied.
    assert runs["shared"]["total_bps"] > 0.85 * 20e6 and runs["per-cca"]["total_bps"] > 0.85 * 20e6
    assert [(q["ccas"], q["flows"]) for q in queues] == [("reno", 2), ("bbr", 2)]
    assert all(q["mean_packets"] > 0 for q in queues)
