# SPDX-License-Identifier: MIT
"""upstream/tdc_cases.py: the project's tc cases in the form of the kernel's tdc."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "upstream"))

import tdc_cases  # noqa: E402

CASES = REPO / "tests" / "kernel" / "tc_cases"


def case(**fields) -> dict:
    base = {"id": "a1b2", "name": "add with limit 5", "category": ["qdisc", "confucius", "add"],
            "setup": [], "cmdUnderTest": "$TC qdisc add dev $DEV root confucius limit 5",
            "expExitCode": 0, "verifyCmd": "$TC -j qdisc show dev $DEV",
            "matchJSON": [{"kind": "confucius"}], "teardown": []}
    return {**base, **fields}


def test_a_case_comes_over_in_tdcs_form():
    converted = tdc_cases.convert(case(setup=["ip link set dev $DEV mtu 9000"]))
    assert converted == {
        "id": "a1b2", "name": "add with limit 5", "category": ["qdisc", "confucius", "add"],
        "plugins": {"requires": "nsPlugin"}, "setup": ["$IP link set dev $DUMMY mtu 9000"],
        "cmdUnderTest": "$TC qdisc add dev $DUMMY root confucius limit 5", "expExitCode": "0",
        "verifyCmd": "$TC -j qdisc show dev $DUMMY", "matchJSON": [{"kind": "confucius"}], "teardown": []}


def test_what_tdc_cannot_run_or_check_stays_behind():
    assert not tdc_cases.convertible(case(setup=["udp 5000 10"]))
    assert not tdc_cases.convertible(case(cmdUnderTest="nlqdisc add $DEV confucius limit=u32:0"))
    assert not tdc_cases.convertible(case(setup=["ping -c1 $PEER"]))
    assert not tdc_cases.convertible(case(xfail="known"))
    assert not tdc_cases.convertible(case(verifyCmd="grep -c '^sch_confucius ' /proc/modules"))
    assert not tdc_cases.convertible(case(matchJSON=[{"options": {"weights": [4, 2, 1]}}]))
    unchanged = case(setup=["$TC qdisc add dev $DEV root confucius"], expExitCode=1, verifyUnchanged=True)
    del unchanged["matchJSON"]
    assert not tdc_cases.convertible(unchanged)


def test_a_refused_add_checks_that_nothing_was_created():
    refused = case(cmdUnderTest="$TC qdisc add dev $DEV root confucius limit 0", expExitCode=1,
                   verifyUnchanged=True, expStderr="limit")
    del refused["matchJSON"]
    converted = tdc_cases.convert(refused)
    assert (converted["verifyCmd"], converted["matchPattern"], converted["matchCount"]) == \
        ("$TC qdisc show dev $DUMMY", "qdisc confucius", "0")
    assert "expStderr" not in converted and "verifyUnchanged" not in converted


def test_an_id_tdc_already_has_is_refused_not_replaced(tmp_path):
    (tmp_path / "add.json").write_text(json.dumps([case(), case(id="c3d4", name="other")]))
    with pytest.raises(tdc_cases.CaseError, match="tdc's own cases have too.*: c3d4$"):
        tdc_cases.tdc_cases(tmp_path, taken_ids={"C3D4", "ffff"})
    assert [c["id"] for c in tdc_cases.tdc_cases(tmp_path, taken_ids={"ffff"})] == ["a1b2", "c3d4"]


def test_ids_used_twice_in_the_project_are_refused(tmp_path):
    (tmp_path / "add.json").write_text(json.dumps([case(), case(name="again")]))
    with pytest.raises(tdc_cases.CaseError, match="a1b2"):
        tdc_cases.tdc_cases(tmp_path, taken_ids=set())


def test_the_projects_cases_convert_and_every_one_verifies_something():
    cases = tdc_cases.tdc_cases(CASES, taken_ids=set())
    assert len(cases) >= 100
    for converted in cases:
        assert "$DEV" not in json.dumps(converted)
        assert "matchPattern" in converted or "matchJSON" in converted
        assert converted["plugins"] == {"requires": "nsPlugin"}
