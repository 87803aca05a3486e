# SPDX-License-Identifier: MIT
"""The host<->VM contract (contract.py): a spec or events file that breaks it is refused
with the field it breaks, on either side; a good one reads back as it was written."""

import copy
import json

import pytest

from confucius.experiment import scenario as sc
from confucius.lab import runner
from confucius.lab.contract import EVENTS_FORMAT, ContractError, GuestEvents, RunSpec
from confucius.lab.guest import run as guest_run
from confucius.experiment.results import ResultsError
from confucius.lab.run_folder import read_run

from test_lab_db import SCENARIO, hand_spec, make_run


@pytest.fixture
def spec(tmp_path) -> RunSpec:
    path = tmp_path / "handmade.toml"
    path.write_text(SCENARIO)
    scenario = sc.load(path)
    task = runner.plan(scenario, None)[0]
    inputs = {"pages": [{"id": "flows-2-size-1000", "file": "/in/page-0.json"}], "hosts": "/in/hosts.txt",
              "addresses": ["198.18.128.1"]}
    return runner.build_spec(scenario, task, inputs)


def test_a_spec_reads_back_as_it_was_written(tmp_path, spec):
    spec.write(tmp_path / "spec.json")
    assert RunSpec.read(tmp_path / "spec.json") == spec
    assert RunSpec.parse(hand_spec("u1")).rt.flows[0].label == "gcc"


def broken(change) -> dict:
    data = copy.deepcopy(hand_spec("u1"))
    change(data)
    return data


@pytest.mark.parametrize("change, message", [
    (lambda d: d.pop("tc_commands"), r"tc_commands: missing key"),
    (lambda d: d["rt"]["flows"][0].pop("port"), r"rt\.flows\[0\]\.port: missing key"),
    (lambda d: d.update(extra=1), r"^RunSpec: unknown key extra"),
    (lambda d: d["warmup"].update(holds=3), r"warmup: unknown key holds"),
    (lambda d: d["rt"]["flows"][0].update(port="5000"), r"rt\.flows\[0\]\.port: expected a int, got str '5000'"),
    (lambda d: d["warmup"].update(retries=2.5), r"warmup\.retries: expected a int, got float"),
    (lambda d: d["warmup"].update(retries=True), r"warmup\.retries: expected a int, got bool"),
    (lambda d: d.update(tc_commands="qdisc add"), r"tc_commands: expected a list"),
    (lambda d: d["tc_commands"].append(7), r"tc_commands\[3\]: expected a str"),
    (lambda d: d.update(mode="burst"), r"mode: 'burst' is not one of 'episodes', 'continuous', 'timed'"),
    (lambda d: d["rt"].update(cpu=None), r"rt\.cpu: None is not one of"),
    (lambda d: d.update(web=[]), r"web: expected an object, got list"),
    (lambda d: d.update(format="confucius-lab-run/2"),
     r"format: expected 'confucius-lab-run/1', got 'confucius-lab-run/2'"),
    (lambda d: d.pop("format"), r"format: expected 'confucius-lab-run/1', got None"),
])
def test_a_broken_spec_is_refused_naming_the_field(change, message):
    with pytest.raises(ContractError, match=message):
        RunSpec.parse(broken(change))


def test_optional_parts_may_be_null_and_numbers_may_be_whole():
    data = broken(lambda d: d.update(web=None, probes=None, trace=None, hosts=None))
    data["warmup"]["min_s"] = 5  # JSON does not tell 5 from 5.0
    spec = RunSpec.parse(data)
    assert spec.web is None and spec.warmup.min_s == 5


def test_the_host_does_not_write_a_spec_the_guest_would_refuse(tmp_path, spec):
    bad = RunSpec.parse(broken(lambda d: None))
    object.__setattr__(bad.rt, "fps", "60")
    with pytest.raises(ContractError, match=r"rt\.fps: expected a int"):
        bad.write(tmp_path / "spec.json")
    assert not (tmp_path / "spec.json").exists()


def test_the_guest_refuses_a_broken_spec_before_it_runs_anything(tmp_path, capsys):
    (tmp_path / "spec.json").write_text(json.dumps(broken(lambda d: d["topology"].pop("kind"))))
    assert guest_run.main([str(tmp_path / "spec.json")]) == 2
    assert "topology.kind: missing key" in capsys.readouterr().err


def test_the_host_refuses_broken_events_naming_the_field(tmp_path):
    folder = make_run(tmp_path / "run", "u1")
    events = json.loads((folder / "events.json").read_text())
    for change, message in [
            (lambda e: e["pages"][0].update(exit="0"), r"events\.json: pages\[0\]\.exit: expected a int"),
            (lambda e: e["sessions"][0]["flows"][0].pop("rates"), r"sessions\[0\]\.flows\[0\]\.rates: missing key"),
            (lambda e: e.update(format="confucius-lab-events/0"), r"format: expected 'confucius-lab-events/1'"),
            (lambda e: e["pages"][0].update(window_end_ns=None), r"pages\[0\]: the load has no window_end_ns"),
            (lambda e: e["pages"][0].update(number=4), r"load 4 is not in the spec's 1 pages")]:
        wrong = copy.deepcopy(events)
        change(wrong)
        (folder / "events.json").write_text(json.dumps(wrong))
        with pytest.raises(ResultsError, match=message):
            read_run(folder)


def test_events_of_a_guest_that_stopped_early_read_with_their_defaults():
    events = GuestEvents.parse({"format": EVENTS_FORMAT, "clock_offset_ns": 1, "mode": "timed"})
    assert events.pages == [] and events.sessions == [] and events.measured is None
