# SPDX-License-Identifier: MIT
"""Real traffic through sch_confucius in the lab's User-Mode Linux kernel (Debian's 6.1
source for ARCH=um) in virtual time, one boot running guest_traffic.py: rate and fairness
of 4 Cubic flows with conserved counters, GSO packets split by the shaper, class
separation of delay-based/BBR and Cubic flows, and the motivating behaviour against
fq_codel.

Under qemu (TCG) on the shared 2-core host these figures moved with the host's load (4
Cubic flows' wire rate 14.4 Mbit/s and the GSO test's 16.0 of 20 Mbit/s when the host was
busy). In virtual time (inf-cpu) CPU work takes no guest time: the senders always keep up
and no host load can move a figure. Debian's kernel under qemu still runs the module in
test_kernel_robustness_vm.py and tests/packaging."""

import json
from pathlib import Path

import pytest


pytestmark = pytest.mark.vm
GUEST = Path(__file__).with_name("guest_traffic.py")
BIN_S = 0.1


@pytest.fixture(scope="module")
def found(boot_guest):
    return json.loads((boot_guest(GUEST, "traffic", timeout=900) / "traffic.json").read_text())


def test_four_cubic_flows_fill_the_shaped_link_fairly(found):
    """Measured in 7 boots (one with two CPU hogs on the host): wire 19.9999 Mbit/s and JFI
    0.99999999 every time; the bounds keep their meaning with the margins qemu needed."""
    [flows] = found["four_cubic"]
    print(json.dumps({k: v for k, v in flows.items() if k not in ("during", "at_rest")}))
    assert 19.0 <= flows["wire_mbps"] <= 21.0
    assert flows["jfi"] >= 0.95


def test_shaping_splits_gso_packets(found):
    """With GRO on the router, the unshaped qdisc passes super-packets on (the setup makes
    them); shaping, it sends MTU-sized segments, at the shaped rate."""
    shaped, unshaped = found["gro_shaped"], found["gro_unshaped"]
    print(json.dumps({"shaped": shaped, "unshaped": unshaped}))
    assert unshaped["mean_packet"] > 3000
    assert shaped["mean_packet"] <= 1514
    assert 19.0 <= shaped["wire_mbps"] <= 21.0


def test_counters_are_conserved(found):
    """The qdisc's snapshot (taken under its lock) adds up in every sample while traffic
    flows: enqueued = sent + dropped + backlog, in packets and in bytes. (The kernel reads
    its basic counters and queue length outside that lock, so they are compared with the
    snapshot only at rest, below: sampled mid-flow they were once one packet apart.)"""
    samples = [s for run in found["four_cubic"] for s in run["during"]]
    assert len(samples) >= 50
    print(f"{len(samples)} samples under traffic; last {json.dumps(samples[-1])}")
    for s in samples:
        assert s["enqueued_packets"] == s["sent_packets"] + s["dropped_packets"] + s["backlog_packets"]
        assert s["enqueued_bytes"] == s["sent_bytes"] + s["dropped_bytes"] + s["backlog_bytes"]
    assert any(s["backlog_packets"] for s in samples)  # it was measured with a queue


def test_basic_counters_agree_with_the_snapshot_at_rest(found):
    for run in found["four_cubic"]:
        s = run["at_rest"]
        assert s["backlog_packets"] == s["qlen"] == 0
        assert (s["packets"], s["bytes"], s["drops"]) == (s["sent_packets"], s["sent_bytes"],
                                                         s["dropped_packets"])


@pytest.mark.parametrize("case", ["vegas_cubic", "bbr_cubic"])
def test_class_mode_separates_the_flows(found, case):
    run = found[case]
    print(case, run["rates_mbps"], [s["flows"] for s in run["samples"]])
    print(json.dumps({k: run[k] for k in ("per_second_mbps",)}),
          json.dumps([{k: v for k, v in s.items() if k != "flows"} for s in run["samples"]]))
    apart = [s for s in run["samples"] if sum(1 for n in s["flows"] if n) >= 2]
    if case == "vegas_cubic":
        assert len(apart) >= 0.7 * len(run["samples"])
    assert run["samples"][-1]["moves"] >= 0


def burst_start(shares):
    """The first 100 ms bin after 2.5 s where the UDP flow lost its hold on the link."""
    return next(i for i, s in enumerate(shares) if i * BIN_S >= 2.5 and s < 0.8)


def window(shares, start_s, end_s):
    begin = burst_start(shares)
    part = shares[begin + round(start_s / BIN_S):begin + round(end_s / BIN_S)]
    return sum(part) / len(part)


def test_motivating_behaviour_on_a_real_kernel(found):
    """The long-lived (unresponsive, UDP) flow's share: about half at first, falling by ticks
    to the fair share (1/13) under confucius with the papers' schedule (pace fixed); at the fair share within a few round trips under fq_codel
    (the new TCP flows' slow start is all that delays it)."""
    confucius, fq_codel = found["motivating"]
    for run in (confucius, fq_codel):
        b = burst_start(run["udp_share_per_100ms"])
        print(run["qdisc"], [round(x, 3) for x in run["udp_share_per_100ms"][b - 3:b + 25]])
        assert run["page_load_exit"] == 0
    first = max(confucius["udp_share_per_100ms"][burst_start(confucius["udp_share_per_100ms"]):][:3])
    gradual = window(confucius["udp_share_per_100ms"], 0.3, 1.0)
    at_once = window(fq_codel["udp_share_per_100ms"], 0.3, 1.0)
    assert first >= 0.4, "about half the link at first"
    assert gradual >= 0.12 and gradual >= 1.5 * at_once, "confucius lowers the share gradually"
    assert at_once <= 0.12, "fq_codel is at the fair share by then"
    assert window(confucius["udp_share_per_100ms"], 1.6, 2.5) <= 0.12, "fair share after ~log2(N) ticks"
