# SPDX-License-Identifier: MIT
"""Per-host fairness through a router's NAT, in the lab's UML kernel (virtual time, seeded;
tests/kernel/guest_hosts.py): an inside host with four Cubic flows and another with one
share the router's WAN link. With `nat`, the qdisc finds the inside hosts through
conntrack, on the WAN's egress after NAT rewrote the sources and on an IFB fed by its
ingress before NAT rewrites the destinations, and each host gets half the link; with
`nonat` it sees the router's one address there, and each flow gets a fifth."""

import json
from pathlib import Path

import pytest

from confucius.lab import uml

pytestmark = pytest.mark.vm
GUEST = Path(__file__).with_name("guest_hosts.py")


@pytest.fixture(scope="module")
def found(boot_guest):
    if not (uml.PROJECT_MODULES / "sch_confucius.ko").is_file():
        pytest.skip("no sch_confucius.ko for UML: run `make kmod-uml`")
    return json.loads((boot_guest(GUEST, "hosts", timeout=600) / "hosts.json").read_text())


def share_of_b(run: dict) -> float:
    print(run["a"], run["b"])
    return run["b"] / (run["a"] + run["b"])


@pytest.mark.parametrize("direction", ["upload", "download"])
def test_behind_the_nat_each_host_gets_half_the_link(found, direction):
    assert 0.4 < share_of_b(found[f"{direction}-nat"]) < 0.6
    assert found[f"{direction}-nat"]["a"] + found[f"{direction}-nat"]["b"] > 8.5   # of 10 Mbit/s


@pytest.mark.parametrize("direction", ["upload", "download"])
def test_without_nat_the_router_s_address_is_one_host_and_each_flow_gets_a_fifth(found, direction):
    assert 0.12 < share_of_b(found[f"{direction}-nonat"]) < 0.28
