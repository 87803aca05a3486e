# SPDX-License-Identifier: MIT
"""rtt_fair's servers at their own RTTs under User-Mode Linux (virtual time), through the
whole pipeline: scenario -> spec -> guest (an address per server, each behind its own netem
on the server's egress, netserver and irtt on each) -> Flent's rtt_fair_var with one -H per
server -> the per-server summary in the database and the report.

Two servers at 20 and 100 ms over a 40 ms link (the client's 20 ms half in both), fq_codel
both ways at 20 Mbit/s, 5 s: fq_codel keeps ICMP apart from the bulk flows, so each server's
ping stays within a few ms of the RTT the topology gives it, and each server's bulk flows'
own RTT is above it."""

import pytest
from test_lab_flent_vm import pytestmark, run_scenario  # noqa: F401 (the marks apply here too)

from confucius.experiment import db_flent
from confucius.experiment.db import Database
from confucius.report import flent_table

SCENARIO = """
name = "flent-rtt-fair-short"
engine = "uml"
[link]
rate = "20mbit"
rtt = "40ms"
[schedulers]
names = ["fq_codel"]
[flent]
tests = ["rtt_fair_var"]
length = "5s"
server_rtts = ["20ms", "100ms"]
"""
SERVER_RTTS_MS = [20.0, 100.0]


def test_each_server_answers_at_its_own_rtt(tmp_path):
    report = run_scenario(tmp_path, SCENARIO)
    assert (report.runs, report.failed, report.units_valid) == (1, 0, 1)
    with Database(tmp_path / "lab.sqlite") as db:
        [row] = flent_table.rows(db)
        [test] = db.query("SELECT id FROM flent_tests")
        stored = db_flent.stored_servers(db, test["id"])
    assert [s.rtt_ms for s in row.servers] == SERVER_RTTS_MS == [s["rtt_ms"] for s in stored]
    for server in row.servers:
        assert server.rtt_ms <= server.ping_median_ms <= server.rtt_ms + 3
        assert server.down_rtt_median_ms > server.rtt_ms and server.up_rtt_median_ms > server.rtt_ms
        assert server.download_mbps > 1 and server.upload_mbps > 1
    assert row.download_mbps == pytest.approx(sum(s.download_mbps for s in row.servers), abs=0.011)
