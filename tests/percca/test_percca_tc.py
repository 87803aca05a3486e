# SPDX-License-Identifier: MIT
"""The bottleneck's tc lines: queues weighted by their mapped flows, one filter per flow on
its destination port, class numbers in tc's hex."""

from confucius.percca import tc

FLOWS = [(6000, 0), (6001, 0), (6002, 2), (6003, 2), (6004, 2)]


def test_confucius_classes_are_weighted_by_their_mapped_flows():
    lines = tc.bottleneck("per-cca", "confucius", 150e6, 128, 3, None, FLOWS)
    assert lines[0].endswith("confucius mode external classes 3 bandwidth 150000000bit limit 128 "
                             "weights 2:1:3")   # an empty queue weighs 1: it has nothing to send
    assert lines[1:] == [f"filter add dev rtr-cli parent 1: protocol ip prio 1 u32 match ip dport "
                         f"{port} 0xffff classid 1:{queue + 1}" for port, queue in FLOWS]
    active = tc.bottleneck("per-cca", "confucius", 150e6, 128, 3, None, FLOWS, active=True)
    assert "weights" not in active[0]


def test_drr_queues_split_the_buffer_and_catch_what_no_filter_matches():
    lines = tc.bottleneck("per-class", "drr", 150e6, 128, 12, None, [(6000 + q, q) for q in range(12)])
    assert "class add dev rtr-cli parent 10: classid 10:c drr quantum 1514" in lines
    assert "qdisc add dev rtr-cli parent 10:c handle 10c: pfifo limit 11" in lines   # ⌈128/12⌉
    assert lines[-1].endswith("matchall classid 10:1")


def test_the_shared_fifo_ignores_the_classifier():
    assert tc.bottleneck("shared", "confucius", 20e6, 33, 3, None, FLOWS)[-1].endswith("handle 10: pfifo limit 33")
