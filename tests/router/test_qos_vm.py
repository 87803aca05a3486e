# SPDX-License-Identifier: MIT
"""router/confucius.qos, the router's one command for both directions, in the lab's kernel
(one boot runs guest_qos.py): what start adds and stop removes, that bad input changes
nothing, and that the shaped rate counts link-layer overhead given as tc's size table.

The kernel is the lab's User-Mode Linux in virtual time (inf-cpu): CPU work takes no guest
time, so the senders always keep up and the goodputs measured do not depend on the host's
load. (Under qemu's emulation on a loaded host, 200-byte UDP reached 2.09 of the 2.34
Mbit/s the shaper allowed: the sender, not the shaper, set the rate.) The script itself is
plain POSIX sh and is checked with dash, the router's kind of shell, and shellcheck."""

import json
import subprocess
from pathlib import Path

import pytest


pytestmark = pytest.mark.vm
REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "router" / "confucius.qos"
GUEST = Path(__file__).with_name("guest_qos.py")
ETHERNET_UDP_IP = 14 + 8 + 20   # bytes each datagram's payload carries to the qdisc
TCP_PAYLOAD, TCP_FRAME = 1448, 1514  # MSS with timestamps, and its Ethernet frame
STAB_OVERHEAD = 100
# Measured in virtual time: within 0.1 % of the expected goodput (UDP 0.03 %, TCP 0.08 %:
# a flow's intervals end between packets). 1 % is ten times that, and six times smaller
# than the smallest effect asserted (the overhead costs TCP 6.2 % of its goodput).
TOLERANCE = 0.01


@pytest.fixture(scope="module")
def found(boot_guest):
    return json.loads((boot_guest(GUEST, "qos", timeout=600) / "qos.json").read_text())


def test_the_script_is_posix_sh():
    for check in (["dash", "-n", str(SCRIPT)], ["shellcheck", "--shell=sh", str(SCRIPT)]):
        done = subprocess.run(check, capture_output=True, text=True)
        assert done.returncode == 0, done.stdout + done.stderr


def test_bad_input_is_refused_and_changes_nothing(found):
    for case in found["bad"]:
        print(case["args"], case["env"], case["rc"], case["stderr"].strip().splitlines()[-1])
        assert case["rc"] in (1, 2)
        assert case["stderr"].startswith(("confucius.qos: error: ", "usage: ", "confucius: invalid"))
        assert case["state"] == found["baseline"]
    errors = " ".join(case["stderr"] for case in found["bad"])
    for cause in ("cannot load kernel module sch_confucius", "no interface 'nosuch0'",
                  "got 'ten'", "got '-5'", "got '4'", "nothing to shape", "LINKLAYER=ptm",
                  "got 'lots'", "got '1000'", "need LINKLAYER", "tc does not know 'confucius'",
                  "EECN must be ECN or NOECN, got 'yes'",
                  "egress setup failed on wan0; removed what was added",
                  "ingress setup failed on wan0; removed what was added"):
        assert cause in errors


def qdisc(listing, kind):
    return next(q for q in listing if q["kind"] == kind)


def test_start_puts_confucius_on_both_directions(found):
    started = found["started"]
    assert started["start"]["rc"] == 0, started["start"]["stderr"]
    egress, ifb = qdisc(started["wan0"], "confucius"), qdisc(started["ifb"], "confucius")
    assert egress["root"] and ifb["root"]
    assert egress["options"]["bandwidth"] == 10_000_000 // 8   # UP, bytes/s
    assert ifb["options"]["bandwidth"] == 20_000_000 // 8      # DOWN
    for shaper in (egress, ifb):
        assert {k: shaper["stab"][k] for k in ("linklayer", "overhead", "mpu")} == \
            {"linklayer": "ethernet", "overhead": 100, "mpu": 64}
    # the hosts behind the router share: as sources on the way out, as destinations in
    assert (egress["options"]["isolate"], ifb["options"]["isolate"]) == ("dual-srchost", "dual-dsthost")
    assert egress["options"]["nat"] is ifb["options"]["nat"] is found["conntrack"]
    assert qdisc(started["wan0"], "ingress")["handle"] == "ffff:"
    actions = [a for f in started["filters"] for a in f.get("options", {}).get("actions", [])]
    assert [(a["kind"], a["mirred_action"], a["to_dev"]) for a in actions] == \
        [("mirred", "redirect", "ifb4wan0")]
    assert "ifb4wan0" in started["state"]["links"]


def test_a_second_start_is_refused_and_changes_nothing(found):
    again = found["started"]["again"]
    assert again["rc"] == 1 and "run 'confucius.qos stop wan0' first" in again["stderr"]
    assert again["state"] == found["started"]["state"]


def test_ingress_traffic_passes_the_ifbs_confucius(found):
    """50 pings in: the IFB's qdisc counts the requests; 50 out: the interface's root
    counts the requests and the IFB the replies."""
    c = found["started"]["counters"]
    assert c["after_ping_in"]["ingress"]["packets"] - c["before"]["ingress"]["packets"] >= 50
    assert c["after_ping_out"]["egress"]["packets"] - c["after_ping_in"]["egress"]["packets"] >= 50
    assert c["after_ping_out"]["ingress"]["packets"] - c["after_ping_in"]["ingress"]["packets"] >= 50


def test_stop_removes_all_that_start_added(found):
    stopped = found["stopped"]
    assert stopped["stop"]["rc"] == 0, stopped["stop"]["stderr"]
    assert stopped["state"] == found["baseline"]
    assert stopped["again"]["rc"] == 0 and stopped["again"]["state"] == found["baseline"]


def test_sourced_as_an_sqm_recipe_it_sets_up_what_sqm_asks(found):
    """Sourcing runs nothing (sqm's variables stand, the IFB is sqm's); egress() and
    ingress() put confucius with sqm's rates, its ATM size table, its ECN settings (sqm's
    defaults: NOECN out, ECN in) and the host words in its option strings on both sides:
    confucius's own out, cake's in (`ingress`, cake's word for the direction, is dropped)."""
    sqm = found["sqm"]
    assert sqm["start"]["returncode"] == 0, sqm["start"]["stderr"]
    assert sqm["start"]["stdout"] == "sourced: confucius\n" and sqm["start"]["stderr"] == ""
    for listing, bandwidth, ecn, isolate, nat in (
            (sqm["wan0"], 10_000_000 // 8, False, "triple-isolate", False),
            (sqm["ifb"], 20_000_000 // 8, True, "dual-dsthost", True)):
        shaper = qdisc(listing, "confucius")
        assert shaper["options"]["bandwidth"] == bandwidth
        assert shaper["options"]["ecn"] is ecn
        assert (shaper["options"]["isolate"], shaper["options"]["nat"]) == (isolate, nat)
        assert (shaper["stab"]["linklayer"], shaper["stab"]["overhead"]) == ("atm", 44)
    assert sqm["state_after_stop"] == found["baseline"]


def expected_bps(rate_bps, payload, on_the_link):
    return rate_bps * payload / on_the_link


@pytest.mark.parametrize("flow", ["udp_out", "udp_in", "tcp_out"])
def test_goodput_counts_the_link_layer_overhead(found, flow):
    """Shaped at RATE, a flow's goodput is RATE x payload / (bytes on the link per packet):
    the qdisc's built-in shaper charges what the size table makes of each packet, UDP
    datagrams and the segments of TCP's GSO packets alike. Without the table the goodput
    is the plain Ethernet figure, far from the one with overhead."""
    rate, payload = found["constants"]["rate_bps"], found["constants"]["payload"]
    packet, carried = ((TCP_FRAME, TCP_PAYLOAD) if flow.startswith("tcp") else
                       (payload + ETHERNET_UDP_IP, payload))
    plain, stab = found["rates"]["plain"][flow], found["rates"]["stab"][flow]
    offered = found["constants"]["udp_offered_bps"]
    want_plain = expected_bps(rate, carried, packet)
    want_stab = expected_bps(rate, carried, packet + STAB_OVERHEAD)
    print(f"{flow}: plain {plain / 1e6:.4f} (expected {want_plain / 1e6:.4f}), "
          f"stab {stab / 1e6:.4f} (expected {want_stab / 1e6:.4f}) Mbit/s")
    assert plain == pytest.approx(want_plain, rel=TOLERANCE)
    assert stab == pytest.approx(want_stab, rel=TOLERANCE)
    assert abs(plain - want_stab) > 5 * TOLERANCE * want_stab
    if flow.startswith("udp"):  # asked for more: the shaper set the rate
        assert want_plain < 0.75 * offered
