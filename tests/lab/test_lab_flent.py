# SPDX-License-Identifier: MIT
"""Flent in the lab, without a VM: the summary of a real data file (an rrul test that the lab
ran, kept in fixtures/flent/), the record of a Flent scenario's bottleneck (both directions)
and the database's flent_tests table for databases of the previous schema."""

import sqlite3
from pathlib import Path

import pytest

from confucius import metrics
from confucius.lab import db as lab_db
from confucius.lab import flent, runner
from confucius.lab import scenario as sc

FIXTURES = Path(__file__).parent / "fixtures" / "flent"
REPO = Path(__file__).resolve().parents[2]


def rrul_file() -> Path:
    [path] = FIXTURES.glob("rrul-*.flent.gz")
    return path


def test_a_file_that_is_not_flent_data_is_refused(tmp_path):
    (tmp_path / "x.flent.gz").write_text("plain text")
    with pytest.raises(flent.FlentDataError, match="not a Flent data file"):
        flent.read(tmp_path / "x.flent.gz")


def test_the_record_shapes_both_directions_with_the_scheduler_under_test():
    scenario = sc.load(REPO / "scenarios" / "flent.toml", engine="uml")
    records = {cell.scheduler.name: runner.bottleneck_commands(scenario, cell) for cell in runner.cells(scenario)}
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
    conditions = runner._conditions(demo, runner.cells(demo)[0])
    assert "flent" not in conditions and "upload_rate_bps" not in conditions["link"]


def test_a_database_of_schema_6_gains_the_flent_table(tmp_path):
    path = tmp_path / "lab.sqlite"
    lab_db.Database(path).close()
    with sqlite3.connect(path) as conn:
        conn.execute("DROP TABLE flent_tests")
        conn.execute("UPDATE meta SET value='6' WHERE key='schema_version'")
    with lab_db.Database(path) as db:
        assert db.query("SELECT COUNT(*) FROM flent_tests")[0][0] == 0
        assert db.query("SELECT value FROM meta WHERE key='schema_version'")[0][0] == "7"


def test_the_guest_refuses_a_spec_whose_flent_part_is_wrong():
    from confucius.lab import contract
    scenario = sc.load(REPO / "scenarios" / "flent.toml")
    spec = runner.build_spec(scenario, runner.plan(scenario, None)[0], {}).to_dict()
    spec["flent"]["tests"] = ["rrul", "speedtest"]
    with pytest.raises(contract.ContractError, match=r"flent\.tests\[1\]: 'speedtest' is not one of"):
        contract.RunSpec.parse(spec)
