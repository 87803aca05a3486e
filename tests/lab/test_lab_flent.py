# SPDX-License-Identifier: MIT
"""Flent in the lab, without a VM: the summary of a real data file (fixtures/flent/: rrul, 10 s,
fq_codel both ways at 20 Mbit/s and 40 ms, as the lab ran it under UML on November 25),
checked against what Flent itself computed into the same file; the record of a Flent scenario's bottleneck (both directions)
and the database's flent_tests table for databases of the previous schema."""

from pathlib import Path

import pytest

from confucius import metrics
from confucius.experiment import db as lab_db
from confucius.lab import flent_files, runner
from confucius.experiment import keys, plan as planning, scenario as sc
from test_lab_db import database_of_schema, schema_version

FIXTURES = Path(__file__).parent / "fixtures" / "flent"
REPO = Path(__file__).resolve().parents[2]


def rrul_file() -> Path:
    [path] = FIXTURES.glob("rrul-*.flent.gz")
    return path


def test_the_summary_of_a_real_rrul_run_agrees_with_flent_s_own_figures():
    data = flent_files.read(rrul_file())
    summary = flent_files.summarise(data)
    meta = data["metadata"]["SERIES_META"]
    assert summary.test == "rrul" and summary.window_s == (5.0, 15.0)  # Flent's 5 s delay, then 10 s of load
    # ICMP every 0.2 s over the window; irtt's three UDP flows (BE, BK, EF) likewise.
    assert 45 <= summary.latency_samples <= 51 and 3 * 45 <= summary.udp_samples <= 3 * 51
    # Round trips never below the 40 ms of netem, nor above the largest ping Flent recorded
    # (irtt's largest: its own statistics); fq_codel keeps them within a few ms of it.
    largest_ping = max(p["val"] for p in data["raw_values"]["Ping (ms) ICMP"])
    assert 40.0 <= summary.latency_median_ms <= summary.latency_p99_ms <= largest_ping < 45
    assert 40.0 <= summary.udp_median_ms <= summary.udp_p99_ms <= max(
        meta[f"Ping (ms) UDP {mark}"]["RTT_MAX"] for mark in ("BE", "BK", "EF"))
    # Each direction's throughput agrees with the bytes its flows' receivers counted.
    for ours, direction in ((summary.download_mbps, "download"), (summary.upload_mbps, "upload")):
        flows = [m for name, m in meta.items() if name.startswith(f"TCP {direction} ") and "BYTES_RECVD" in m]
        assert len(flows) == 4, direction
        received = sum(m["BYTES_RECVD"] * 8 / m["ELAPSED_TIME"] for m in flows) / 1e6
        assert ours == pytest.approx(received, rel=0.02), direction
    # Both directions carried load at the 20 Mbit/s the scheduler shaped them to.
    assert 15 < summary.download_mbps < 19.2 and 15 < summary.upload_mbps < 19.2


def test_a_data_file_without_samples_in_the_window_is_refused(tmp_path):
    data = flent_files.read(rrul_file())
    data["metadata"]["T0"] = "2030-01-01T00:00:00.000000Z"  # every sample long before the test's start
    with pytest.raises(flent_files.FlentDataError, match=r"no Ping \(ms\) ICMP samples between 5 and 15 s"):
        flent_files.summarise(data)
    del data["metadata"]["TOTAL_LENGTH"]
    with pytest.raises(flent_files.FlentDataError, match="TOTAL_LENGTH"):
        flent_files.summarise(data)


def test_a_file_that_is_not_flent_data_is_refused(tmp_path):
    (tmp_path / "x.flent.gz").write_text("plain text")
    with pytest.raises(flent_files.FlentDataError, match="not a Flent data file"):
        flent_files.read(tmp_path / "x.flent.gz")


def test_the_record_shapes_both_directions_with_the_scheduler_under_test():
    scenario = sc.load(REPO / "scenarios" / "flent.toml", engine="uml")
    records = {cell.scheduler.name: runner.bottleneck_commands(scenario, cell) for cell in planning.cells(scenario)}
    assert records["cake"] == ["qdisc add dev rtr-cli root handle 1: cake bandwidth 20000000bit memlimit 1514000",
                               "qdisc add dev rtr-srv root handle 1: cake bandwidth 20000000bit memlimit 1514000"]
    assert records["fq_codel"][3:] == [
        "qdisc add dev rtr-srv root handle 1: htb default 1",
        "class add dev rtr-srv parent 1: classid 1:1 htb rate 20000000bit burst 3028b cburst 3028b quantum 1514",
        "qdisc add dev rtr-srv parent 1:1 handle 10: fq_codel limit 1000"]
    task = runner.plan(scenario, None)[0]
    spec = runner.build_spec(scenario, task, {})
    assert (spec.mode, spec.flent, spec.rt.flows) == ("flent", scenario.flent, [])


def test_scenarios_without_flent_or_upload_rate_keep_their_cell_keys():
    # The keys digest the conditions: a new key in every scenario's conditions would make
    # every measured unit new.
    demo = sc.load(REPO / "scenarios" / "demo.toml")
    conditions = keys.conditions(demo, planning.cells(demo)[0]).key_input()
    assert "flent" not in conditions and "upload_rate_bps" not in conditions["link"]
    assert "kernel" not in conditions  # 6.1, which every earlier run ran


def test_a_run_on_the_second_kernel_generation_has_a_key_of_its_own():
    path = REPO / "scenarios" / "demo.toml"
    on_612 = sc.load(path, kernel="6.12")
    cell = planning.cells(on_612)[0]
    assert keys.conditions(on_612, cell).key_input()["kernel"] == "6.12"
    assert keys.cell_key(on_612, cell) != keys.cell_key(sc.load(path), cell)


def test_a_database_of_schema_6_gains_the_flent_table(tmp_path):
    path = database_of_schema(tmp_path / "lab.sqlite", 6, "DROP TABLE flent_tests")
    with lab_db.Database(path) as db:
        assert db.query("SELECT COUNT(*) FROM flent_tests")[0][0] == 0
        assert schema_version(db) == str(lab_db.SCHEMA_VERSION)


def test_the_guest_refuses_a_spec_whose_flent_part_is_wrong():
    from confucius.lab import contract
    scenario = sc.load(REPO / "scenarios" / "flent.toml")
    spec = runner.build_spec(scenario, runner.plan(scenario, None)[0], {}).to_dict()
    spec["flent"]["tests"] = ["rrul", "speedtest"]
    with pytest.raises(contract.ContractError, match=r"flent\.tests\[1\]: 'speedtest' is not one of"):
        contract.RunSpec.parse(spec)
