# SPDX-License-Identifier: MIT
"""The old flows' AQM in the lab's UML kernel (virtual time, seeded): a Cubic download's own
queueing delay through `confucius bandwidth 20mbit` (confucius.lab.guest.selfdelay).

Measured (20 ms base RTT, 12 s, samples of the sender's smoothed RTT every 0.5 s after
4 s): with the AQM's defaults (aqm_target 10 ms, aqm_interval 100 ms, aqm_settle 2 s)
median 7.2 ms, 95th percentile 11.6 ms, 14 drops; at fq_codel's 5 ms / 100 ms, 2.4 /
6.7 ms (19 drops), cake 3.6 / 7.7 ms, fq_codel 3.1 / 6.9 ms; with `aqm_target 0` (the AQM
off, the qdisc before it) 353 / 501 ms, only maxdelay's 43 drops. With ECN negotiated the
signals are marks and nothing is dropped. Why the defaults are not fq_codel's:
core/confucius.h."""

import json

import pytest

from confucius.lab import uml

pytestmark = pytest.mark.vm
BASE = "confucius bandwidth 20mbit"


def own_delay(tmp_path, qdisc, *extra):
    if not (uml.PROJECT_MODULES / "sch_confucius.ko").is_file():
        pytest.skip("no sch_confucius.ko for UML: run `make kmod-uml`")
    result = uml.run('exec python -m confucius.lab.guest.selfdelay "$@"', results_dir=tmp_path,
                     args=["--qdisc", qdisc, "--own", *extra], timeout=300, seed=1)
    result.check()
    found = json.loads(result.output.splitlines()[-1])
    print(json.dumps(found))
    return found


def test_a_download_does_not_wait_behind_its_own_backlog(tmp_path):
    with_aqm = own_delay(tmp_path / "aqm", BASE)
    without = own_delay(tmp_path / "off", f"{BASE} aqm_target 0")
    assert with_aqm["delay_ms"]["50"] < 30 and with_aqm["aqm_drops"] > 0
    assert without["delay_ms"]["50"] > 100 and without["aqm_drops"] == 0
    assert with_aqm["goodput_mbps"] > 0.9 * without["goodput_mbps"]


def test_ecn_capable_flows_are_marked_instead_of_dropped(tmp_path):
    found = own_delay(tmp_path, BASE, "--ecn")
    assert found["ecn_marks"] > 0 and found["aqm_drops"] == 0 and found["dropped_packets"] == 0
    assert found["delay_ms"]["50"] < 30
