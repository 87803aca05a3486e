# SPDX-License-Identifier: MIT
"""rtt_fair's servers at their own RTTs, without a VM: the topology's commands for them, the
guest's Flent command line, and the per-server summary of a real run's files
(fixtures/flent-rtt-fair/: rtt_fair_var, 5 s, fq_codel both ways at 20 Mbit/s, servers at 10,
40, 80 and 160 ms, as the lab ran it under UML on December 7), kept in the database."""

import shutil
from pathlib import Path

import pytest

from confucius.experiment import db as lab_db
from confucius.experiment import db_flent
from confucius.experiment.records import Flent
from confucius.experiment.results import FlentTest
from confucius.experiment.shaping import TopologyError
from confucius.lab import flent_files, topology
from confucius.lab.contract import FlentEvent
from confucius.lab.guest import flent as guest_flent
from test_lab_flent_rtt import run_row

FIXTURES = Path(__file__).parent / "fixtures" / "flent-rtt-fair"
SERVER_RTTS_MS = (10.0, 40.0, 80.0, 160.0)


def data_file() -> Path:
    [path] = FIXTURES.glob("rtt_fair_var-*.flent.gz")
    return path


def test_two_servers_get_their_addresses_and_a_netem_each_behind_the_server_s_own():
    ip, tc = topology.rtt_server_steps(0.040, [0.020, 0.070])
    assert (ip.argv, tc.argv) == (("ip", "-n", "srv", "-batch", "-"), ("tc", "-n", "srv", "-batch", "-"))
    assert ip.lines == ("addr add 198.18.1.1/16 dev srv-rtr", "addr add 198.18.1.2/16 dev srv-rtr")
    assert tc.lines == (
        "qdisc replace dev srv-rtr root handle 1: prio bands 3 priomap 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0",
        "qdisc add dev srv-rtr parent 1:1 handle 10: netem delay 20000us limit 1000000",
        "qdisc add dev srv-rtr parent 1:2 handle 11: netem delay 0us limit 1000000",
        "filter add dev srv-rtr parent 1: protocol ip prio 1 u32 match ip src 198.18.1.1/32 flowid 1:2",
        "qdisc add dev srv-rtr parent 1:3 handle 12: netem delay 50000us limit 1000000",
        "filter add dev srv-rtr parent 1: protocol ip prio 1 u32 match ip src 198.18.1.2/32 flowid 1:3")


def test_four_servers_take_five_bands_and_the_rest_of_each_rtt():
    ip, tc = topology.rtt_server_steps(0.020, [0.010, 0.040, 0.080, 0.160])
    assert ip.lines[-1] == "addr add 198.18.1.4/16 dev srv-rtr"
    assert tc.lines[0].startswith("qdisc replace dev srv-rtr root handle 1: prio bands 5 ")
    assert [line.split()[10] for line in tc.lines[2::2]] == ["0us", "30000us", "70000us", "150000us"]
    assert tc.lines[-1] == "filter add dev srv-rtr parent 1: protocol ip prio 1 u32 match ip src 198.18.1.4/32 flowid 1:5"


def test_fifteen_servers_fill_prio_s_bands_with_hex_class_numbers():
    _, tc = topology.rtt_server_steps(0.020, [0.010] * 15)
    assert tc.lines[0].split()[9] == "16"
    assert tc.lines[-2].startswith("qdisc add dev srv-rtr parent 1:10 handle 1f: netem")


def test_no_servers_no_commands_and_the_dumbbell_keeps_its_netem():
    assert topology.rtt_server_steps(0.040, []) == []
    script = topology.Topology(qdisc="fq_codel", rate="20mbit", rtt="40ms").script()
    assert "qdisc add dev srv-rtr root netem delay 20000us limit 1000000" in script
    assert "prio" not in script and "198.18.1." not in script


@pytest.mark.parametrize("rtts, words", [
    ([0.019, 0.040], ["at least half the link's (20 ms)", "19 ms"]),
    ([0.040] * 16, ["at most 15 servers", "16 asked"]),
])
def test_servers_the_topology_cannot_give_are_refused(rtts, words):
    with pytest.raises(TopologyError) as err:
        topology.rtt_server_steps(0.040, rtts)
    for word in words:
        assert word in str(err.value)


def test_flent_loads_each_server_in_rtt_fair_and_the_server_in_the_other_tests(tmp_path):
    flent = Flent(tests=["rrul", "rtt_fair_var"], length_s=30, step_s=0.2, upload_streams=4,
                  server_rtts_s=[0.01, 0.04, 0.08])
    rtt_fair = guest_flent.command(flent, "rtt_fair_var", tmp_path, "cake")
    assert rtt_fair[rtt_fair.index("rtt_fair_var") + 1:][:7] == [
        "-4", "-H", "198.18.1.1", "-H", "198.18.1.2", "-H", "198.18.1.3"]
    rrul = guest_flent.command(flent, "rrul", tmp_path, "cake")
    assert rrul[rrul.index("rrul") + 1:][:5] == ["-4", "-H", "198.18.0.2", "-l", "30"]


def test_each_server_s_share_of_a_real_run():
    summary = flent_files.summarise_file(data_file())
    servers = summary.servers
    assert [(s.address, s.rtt_ms) for s in servers] == list(zip(topology.rtt_server_addresses(4), SERVER_RTTS_MS))
    for share in servers:
        # fq_codel keeps the queue short: each ping within 2 ms of its server's RTT, and
        # each bulk flow's own RTT above its server's and within fq_codel's target and a burst.
        assert share.rtt_ms <= share.ping_median_ms <= share.rtt_ms + 2
        assert share.ping_samples == 25            # 5 s at 0.2 s
        for rtt in (share.down_rtt_median_ms, share.up_rtt_median_ms):
            assert share.rtt_ms < rtt < share.rtt_ms + 15
    # The servers' flows are the test's: their throughput adds up to Flent's sums.
    assert sum(s.download_mbps for s in servers) == pytest.approx(summary.download_mbps, abs=0.011)
    assert sum(s.upload_mbps for s in servers) == pytest.approx(summary.upload_mbps, abs=0.011)
    downloads = [f for f in summary.flows if f.direction == "download"]
    assert sorted(f.flow.split(":")[0] for f in downloads) == topology.rtt_server_addresses(4)
    assert summary.latency == "Ping (ms) ICMP *" and summary.latency_samples == 100


def test_without_servers_txt_the_test_has_no_servers(tmp_path):
    copy = tmp_path / data_file().name
    shutil.copy(data_file(), copy)
    assert flent_files.summarise_file(copy).servers == ()


def test_a_garbled_servers_txt_is_refused_naming_its_line():
    with pytest.raises(flent_files.FlentDataError) as err:
        flent_files.read_servers("198.18.1.1 10\n198.18.1.2 fast\n")
    assert "servers.txt:2" in str(err.value) and "'198.18.1.2 fast'" in str(err.value)


def test_the_database_keeps_each_server_s_share(tmp_path):
    summary = flent_files.summarise_file(data_file())
    event = FlentEvent(test="rtt_fair_var", started_ns=0, ended_ns=15_000_000_000, exit=0,
                       data_file=f"flent/rtt_fair_var/{data_file().name}", log="logs/flent-rtt_fair_var.out")
    with lab_db.Database(tmp_path / "lab.sqlite") as db:
        db_flent.store_flent_test(db, run_row(db), FlentTest(0, event, data_file(), summary, None))
        [row] = db.query("SELECT * FROM flent_tests")
        stored = db_flent.stored_servers(db, row["id"])
    assert [tuple(r) for r in stored] == [tuple(getattr(s, c) for c in db_flent.SERVER_COLUMNS) for s in summary.servers]
    assert row["latency"] == "Ping (ms) ICMP *"
