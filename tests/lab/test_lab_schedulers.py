# SPDX-License-Identifier: MIT
"""The scheduler table: what tc is told for each scheduler (the kernel's verdict on these
commands is in test_lab_sanity_vm.py, which installs every one of them)."""

import pytest

from confucius.experiment import schedulers as sched

RATE, BUFFER = 20e6, 1000


def setup(name: str, **kw) -> sched.TcSetup:
    return sched.tc_setup(name, rate_bps=kw.pop("rate_bps", RATE), buffer_packets=kw.pop("buffer_packets", BUFFER),
                          rt_ports=kw.pop("rt_ports", [5000]), **kw)


@pytest.mark.parametrize("name, qdisc", [
    ("pfifo", "pfifo limit 1000"),
    ("fq_codel", "fq_codel limit 1000"),
    ("fq", "fq_codel target 100s interval 100s limit 1000"),
    ("codel", "codel limit 1000"),
    ("red", "red avpkt 1514 limit 1514000 bandwidth 20000000bit"),
    ("pie", "pie limit 1000"),
    ("fq_pie", "fq_pie limit 1000"),
    ("hhf", "hhf limit 1000"),
])
def test_qdiscs_that_do_not_shape_are_htb_leaves(name, qdisc):
    s = setup(name)
    assert (s.qdisc, s.rate, s.lines) == (qdisc, "20000000bit", ())
    assert s.commands()[-1] == f"qdisc add dev rtr-cli parent 1:1 handle 10: {qdisc}"


@pytest.mark.parametrize("name, qdisc", [
    ("cake", "cake bandwidth 20000000bit memlimit 1514000"),
    ("cake-flows", "cake flows bandwidth 20000000bit memlimit 1514000"),
    ("confucius", "confucius mode flow bandwidth 20000000bit limit 1000"),
    ("confucius-class", "confucius mode class bandwidth 20000000bit limit 1000"),
])
def test_cake_and_confucius_shape_by_themselves_at_the_root(name, qdisc):
    s = setup(name)
    assert (s.qdisc, s.rate) == (qdisc, None)
    assert s.commands() == [f"qdisc add dev rtr-cli root handle 1: {qdisc}"]


def test_under_htb_on_request_they_do_not_shape():
    s = setup("confucius", shaper="htb")
    assert (s.qdisc, s.rate) == ("confucius mode flow limit 1000", "20000000bit")


def test_strict_priority_labels_the_rt_flow_by_port():
    s = setup("prio", rt_ports=[5000, 5001])
    assert s.qdisc == "prio bands 2 priomap " + " ".join(["1"] * 16)
    assert s.lines == (
        "qdisc add dev rtr-cli parent 10:1 handle 101: pfifo limit 1000",
        "qdisc add dev rtr-cli parent 10:2 handle 102: pfifo limit 1000",
        "filter add dev rtr-cli parent 10: protocol ip prio 1 u32 match ip dport 5000 0xffff flowid 10:1",
        "filter add dev rtr-cli parent 10: protocol ip prio 1 u32 match ip dport 5001 0xffff flowid 10:1",
        "filter add dev rtr-cli parent 10: protocol all prio 2 u32 match u32 0 0 flowid 10:2",
    )


def test_pias_marks_each_flows_level_by_conntracks_bytes_and_serves_the_levels_in_priority():
    s = setup("pias", rt_ports=[])
    assert s.qdisc == "prio bands 4 priomap " + " ".join(["3"] * 16)   # unmarked: the lowest
    assert s.lines == (
        *(f"qdisc add dev rtr-cli parent 10:{b} handle 10{b}: pfifo limit 1000" for b in range(1, 5)),
        *(f"filter add dev rtr-cli parent 10: protocol all prio 1 handle {b} fw flowid 10:{b}" for b in range(1, 5)))
    assert s.netfilter == (
        "nft add table ip lab_pias",
        "nft add chain ip lab_pias forward { type filter hook forward priority 0 ; }",
        'nft add rule ip lab_pias forward oifname "rtr-cli" meta mark set ct bytes map '
        "{ 0-99999 : 1, 100000-999999 : 2, 1000000-9999999 : 3, 10000000-18446744073709551615 : 4 }",
        "sysctl net.netfilter.nf_conntrack_acct=1")
    assert s.commands()[-len(s.netfilter):] == list(s.netfilter)


@pytest.mark.parametrize("name, web_quantum", [("drr-1:1", 1514), ("drr-1:5", 7570)])
def test_weighted_classes_rt_to_rest(name, web_quantum):
    s = setup(name)
    assert s.qdisc == "drr"
    assert s.lines[:2] == ("class add dev rtr-cli parent 10: classid 10:1 drr quantum 1514",
                           f"class add dev rtr-cli parent 10: classid 10:2 drr quantum {web_quantum}")
    assert s.lines[-1].endswith("match u32 0 0 flowid 10:2")


def test_variant_options_are_appended():
    s = sched.tc_setup("confucius-500ms", base="confucius", rate_bps=RATE, buffer_packets=100,
                       extra_options="interval 500ms hysteresis 20%")
    assert s.qdisc == "confucius mode flow bandwidth 20000000bit limit 100 interval 500ms hysteresis 20%"


REDIRECT = ["qdisc add dev rtr-srv handle ffff: ingress",
            "filter add dev rtr-srv parent ffff: protocol all prio 1 matchall "
            "action mirred egress redirect dev rtr-ifb"]


def test_ingress_shaping_puts_a_self_shaping_root_on_the_ifb():
    s = sched.tc_setup("cake-ingress", base="cake", rate_bps=RATE, buffer_packets=BUFFER,
                       extra_options="ingress", shaping="ingress")
    assert s.commands() == [*REDIRECT, "qdisc add dev rtr-ifb root handle 1: "
                                       "cake bandwidth 20000000bit memlimit 1514000 ingress"]


def test_ingress_shaping_puts_htb_and_its_leaf_on_the_ifb():
    assert setup("pfifo", shaping="ingress").commands(0.0) == [
        *REDIRECT, "qdisc add dev rtr-ifb root handle 1: htb default 1",
        "class add dev rtr-ifb parent 1: classid 1:1 htb rate 20000000bit burst 3028b cburst 3028b quantum 1514",
        "qdisc add dev rtr-ifb parent 1:1 handle 10: pfifo limit 1000"]


def test_ingress_shaping_puts_the_labels_on_the_ifb():
    commands = setup("drr-1:1", shaping="ingress").commands()
    assert commands[:2] == REDIRECT
    assert all("rtr-cli" not in line for line in commands)
    assert "filter add dev rtr-ifb parent 10: protocol ip prio 1 u32 match ip dport 5000 0xffff flowid 10:1" in commands


@pytest.mark.parametrize("call, message", [
    (lambda: setup("pfifo", shaping="wan"), "shaping must be one of egress, ingress, got 'wan'"),
    (lambda: setup("sfb"), "unknown scheduler 'sfb'"),
    (lambda: setup("prio", rt_ports=[]), "needs an RT flow"),
    (lambda: setup("pfifo", buffer_packets=0), "at least 1 packet"),
    (lambda: setup("pfifo", shaper="tbf"), "'own' or 'htb'"),
    (lambda: setup("pfifo", extra_options="limit 5; rm -rf /"), "plain tc words"),
    (lambda: setup("pfifo", extra_options="'unbalanced"), "options for pfifo"),
    (lambda: setup("pias", shaping="ingress"), "only with the download shaped at the router.s egress"),
])
def test_bad_requests_are_refused(call, message):
    with pytest.raises(sched.SchedulerError, match=message):
        call()


def test_every_scheduler_of_the_issue_is_in_the_table():
    kinds = {s.kind for s in sched.SCHEDULERS.values()}
    assert {"pfifo", "fq_codel", "codel", "red", "pie", "fq_pie", "hhf", "cake", "prio", "drr",
            "confucius"} <= kinds
    modes = {s.options for s in sched.SCHEDULERS.values() if s.kind == "confucius"}
    assert modes == {"mode flow", "mode flow pace fixed maxdelay 0", "mode class"}


def test_the_router_runs_the_tc_lines_as_one_batch_then_nfts_script_then_the_settings():
    from confucius.lab import topology

    steps = topology.router_steps(setup("pias", rt_ports=[]).commands())
    assert [step.argv for step in steps] == [
        ("tc", "-n", "rtr", "-batch", "-"), ("ip", "netns", "exec", "rtr", "nft", "-f", "-"),
        ("ip", "netns", "exec", "rtr", "sysctl", "-qw", "net.netfilter.nf_conntrack_acct=1")]
    assert steps[0].lines[-1] == "filter add dev rtr-cli parent 10: protocol all prio 1 handle 4 fw flowid 10:4"
    assert steps[1].lines[0] == "add table ip lab_pias"
    assert [step.argv[0] for step in topology.router_steps(setup("pfifo").commands())] == ["tc"]
