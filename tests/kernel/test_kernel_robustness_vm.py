# SPDX-License-Identifier: MIT
"""sch_confucius under abuse, inside Debian's kernel (or the one CONFUCIUS_TEST_KERNEL
names, see guest_kernel.py): random netlink options, a flood of
100 000+ flows with changes under load, module removal under load, create/destroy cycles.
One VM boot runs guest_robustness.py; each check below reads its results. The kernel log
must stay free of warnings, bugs, oopses and leak reports throughout."""

import json
from pathlib import Path

import pytest

import guest_kernel

pytestmark = pytest.mark.vm
GUEST = Path(__file__).with_name("guest_robustness.py")


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    results = tmp_path_factory.mktemp("robustness")
    result = guest_kernel.run(GUEST, results_dir=results, timeout=1200)
    found = json.loads((results / "robustness.json").read_text()) if result.returncode == 0 else None
    return result, found


def test_guest_ran(run):
    result, found = run
    assert result.returncode == 0, result.output[-3000:]


def test_kernel_log_is_clean(run):
    result, _ = run
    assert result.kernel_problems() == []


def test_random_option_sets(run):
    options = run[1]["options"]
    print(json.dumps({k: v for k, v in options.items() if not isinstance(v, list)}))
    assert options["ops"] == 1000
    assert options["accepted"] > 100 and options["rejected"] > 100, options["errors"]
    assert options["changed_on_reject"] == [], "a rejected request changed the configuration"
    assert options["reject_without_message"] == [], "EINVAL without an extack message"
    assert options["accepted_not_shown"] == [], "an accepted option does not show in the dump"
    assert options["readded_with_defaults"] == 0
    assert run[1]["forwarded_after_options"] >= 20


@pytest.mark.parametrize("case", ["flood_1024", "flood_32768"])
def test_flood_of_distinct_flows_stays_under_memlimit(run, case):
    flood = run[1][case]
    print(json.dumps(flood))
    assert flood["created"] == 0
    assert flood["distinct_flows"] >= 100_000, "fewer distinct flows than the flood is for"
    assert flood["samples"] > 20
    assert 0 < flood["max_memory"] <= flood["memlimit"]
    assert flood["drops"] > 0, "the flood should overflow the shaped qdisc"
    assert flood["change_errors"] == [] and flood["changes"] == 100
    assert flood["enqueued"] == flood["sent"] + flood["drops"] + flood["backlog_packets"]


def test_module_removal_under_load(run):
    rounds = run[1]["removal"]
    assert all(r["removed"] and r["readded"] == 0 for r in rounds), rounds
    assert run[1]["forwarded_after_removal"] >= 20


def test_create_destroy_leaves_no_memory_behind(run):
    cycle = run[1]["create_destroy"]
    print(json.dumps(cycle))
    assert cycle["errors"] == []
    # 40 tables of ~5.5 MB each: a leak would cost 220 MB
    assert cycle["mem_before_kb"] - cycle["mem_after_kb"] < 64 * 1024
