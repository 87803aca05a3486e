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
    # 40 tables of 4 MiB, half of them with 2 MiB of heaps: a leak would cost 200 MB
    assert cycle["mem_before_kb"] - cycle["mem_after_kb"] < 64 * 1024


def test_class_dump_over_many_messages_while_flows_are_forgotten(run):
    """A flow listed by the fast dumps before and after the slow one was remembered all
    along: the slow dump, read a message at a time while others were forgotten between
    messages, lists it, and lists no flow twice. A walk that resumed at a count of the
    flows remembered skipped one flow for each flow forgotten ahead of the resume point."""
    dump = run[1]["class_dump"]
    before, during, after = dump["before"], dump["during"], dump["after"]
    kept = set(before) & set(after)
    print(json.dumps({"reads": dump["reads"], "before": len(before), "during": len(during),
                      "after": len(after), "kept": len(kept), "max_keep_gap_s": dump["max_keep_gap_s"]}))
    assert dump["created"] == 0
    assert dump["max_keep_gap_s"] < dump["interval_s"] / 2, "the kept flows' sender fell behind"
    assert dump["reads"] >= 10, "the dump should span many netlink messages"
    assert len(set(before)) - len(set(after)) >= 50, "flows should be forgotten during the dump"
    assert len(kept) >= 150
    assert sorted(b for b in set(during) if during.count(b) > 1) == [], "listed twice"
    assert sorted(kept - set(during)) == [], "remembered throughout, but skipped"


def _by_handle(qdiscs):
    return {q["handle"]: q for q in qdiscs}


def test_htb_leaves_dropping_at_dequeue_until_empty(run):
    """Confucius as HTB's leaves, dropping at dequeue (maxdelay) until empty under bursts
    several times HTB's rate: once idle, every queue length and backlog is 0, HTB's root
    counts exactly its leaves' packets, bytes and drops, each leaf's own counters add up,
    and the tree still forwards."""
    htb = run[1]["htb_leaf"]
    qdiscs = _by_handle(htb["qdiscs"])
    root, leaves = qdiscs.pop("1:"), list(qdiscs.values())
    print(json.dumps({"offered": htb["offered"], "root": {k: root[k] for k in ("packets", "drops")},
                      "leaves": [{k: q[k] for k in ("packets", "drops", "delay_drops")} for q in leaves]}))
    assert [q["kind"] for q in leaves] == ["confucius", "confucius"]
    for q in [root, *leaves, *htb["classes"].values()]:
        assert (q["qlen"], q["backlog"]) == (0, 0), q
    for q in leaves:
        assert q["delay_drops"] > 1000 and q["packets"] > 100, q
        assert q["drops"] == q["dropped_packets"] == q["delay_drops"], "all drops at dequeue"
        assert q["enqueued_packets"] == q["sent_packets"] + q["dropped_packets"]
        assert (q["packets"], q["bytes"]) == (q["sent_packets"], q["sent_bytes"])
    for counter in ("packets", "bytes", "drops"):
        assert root[counter] == sum(q[counter] for q in leaves), counter
    assert root["packets"] + root["drops"] == htb["offered"]
    after = _by_handle(htb["after"]["qdiscs"])
    assert after["1:"]["packets"] > root["packets"]
    assert (after["1:"]["qlen"], after["1:"]["backlog"]) == (0, 0)
