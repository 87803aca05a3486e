#!/usr/bin/env python
# SPDX-License-Identifier: MIT
"""Real TCP and UDP through sch_confucius inside the lab's UML kernel (run by
test_kernel_traffic_vm.py).

1. Four Cubic flows through `confucius bandwidth 20mbit`: total rate, fairness, and the
   qdisc's counters (enqueued = sent + dropped + backlog).
2. `mode class`: a Vegas flow and a Cubic flow (then BBR and Cubic) end in different
   classes, read from the qdisc's statistics every second.
3. The motivating behaviour: a long-lived UDP flow, then a page load of 12 objects on 12
   domains (12 TCP flows, from the project's HTTP client and server); the UDP flow's share of
   the link every 100 ms, under confucius and under fq_codel.
Results go to $RESULTS/traffic.json.

No iperf3 here: it polls (pselect6 on an always-writable socket plus clock_gettime), and in
virtual time a poller advances only as fast as the host runs it, 256 ns a clock read
(vm/README.md, "Hazards of virtual time"). Four iperf3 streams needed more than a minute of
host CPU for one guest second on a slower host, and the watchdog ended the boot as stalled.
The TCP flows are the lab's own epoll sender and receiver (confucius.lab.guest.bulk) and the
UDP flow a sender that sleeps between 1 ms slices: each guest second then costs the same
few host seconds on any host.
"""

import json
import os
import socket
import subprocess
import sys
import time

from confucius.lab import topology as t
from confucius.web.generate import sweep_page
from confucius.web.hosts import address_map, write_hosts
from confucius.web.page import write_page

from confucius.lab import rtnl

TOOLS = os.path.join(os.environ["LAB_REPO"], "build", "cargo", "release")


def run(*argv, **kw):
    return subprocess.run(argv, capture_output=True, text=True, check=True, **kw).stdout


def in_ns(ns, *argv):
    return ["ip", "netns", "exec", ns, *argv]


BULK = [sys.executable, "-m", "confucius.lab.guest.bulk"]
BULK_PORT = 5201
BULK_SAMPLE_S = 0.5


class BulkFlows:
    """TCP flows from the server to the client, one per CCA, each kept full for `seconds`;
    the receiver samples every flow's byte count every BULK_SAMPLE_S."""

    def __init__(self, ccas, seconds):
        self.out = os.path.join("/tmp", f"bulk-{time.monotonic_ns()}.json")
        # The receiver outlasts the sender, whose connections may start a little late.
        self.receiver = subprocess.Popen(in_ns(t.CLIENT, *BULK, "receive", "--port", str(BULK_PORT),
                                               "--flows", str(len(ccas)), "--duration", str(seconds + 2),
                                               "--interval", str(BULK_SAMPLE_S), "--out", self.out))
        self.sender = subprocess.Popen(in_ns(t.SERVER, *BULK, "send", "--address", t.CLIENT_ADDRESS,
                                             "--port", str(BULK_PORT), "--cca", ",".join(ccas),
                                             "--duration", str(seconds)))

    def samples(self):
        """[(seconds since the first sample, [bytes received by each flow])], once both ended."""
        if self.sender.wait() or self.receiver.wait():
            raise RuntimeError("a bulk sender or receiver failed (its error is above)")
        with open(self.out) as f:
            samples = json.load(f)["samples"]
        first = samples[0][0]
        return [((ns - first) / 1e9, received) for ns, received in samples]


def rates_mbps(samples, start_s, end_s):
    """Each flow's goodput between the samples nearest start_s and end_s."""
    (t0, b0), (t1, b1) = (min(samples, key=lambda s: abs(s[0] - at)) for at in (start_s, end_s))
    return [(after - before) * 8 / (t1 - t0) / 1e6 for before, after in zip(b0, b1)]


class Bottleneck:
    """The router's bottleneck qdisc, read through one netlink socket in its namespace
    (starting a program per sample costs seconds under emulation)."""

    def __init__(self, kind="confucius"):
        self.nl = rtnl.Rtnl(t.ROUTER)
        self.ifindex = self.nl.index(t.BOTTLENECK[1])
        self.kind = kind

    def stats(self):
        found = rtnl.qdisc_stats(self.ifindex, self.kind, self.nl)
        found.update(rtnl.confucius_xstats(found.pop("app")))
        return found


LINK_BPS = 10e6  # the motivating run's link; UDP goodput is 1400/1442 of the wire rate
BIN_S = 0.1      # the UDP flow's share is read every 100 ms


def jain(values):
    return sum(values) ** 2 / (len(values) * sum(v * v for v in values))


def drained(qdisc, within_s=20):
    """The statistics once the queue is empty (Cubic leaves seconds of data in a deep
    buffer): at rest, the basic counters and the snapshot meet again."""
    deadline = time.monotonic() + within_s
    while True:
        stats = qdisc.stats()
        if stats["qlen"] == 0 or time.monotonic() > deadline:
            return stats
        time.sleep(0.2)


def four_cubic_flows():
    """The wire rate comes from the qdisc's byte counter over the middle 12 s of the run.
    32768 buckets, not the default 1024: what is measured is the sharing among flows, and at
    1024 two of the four shared a bucket in the seeded boot (3.17, 6.38, 6.38, 3.15 Mbit/s:
    a third of the link to the pair, as any hashed fair queue does; the odds are 0.6 % a
    boot at 1024 buckets, 0.02 % at 32768)."""
    t.Topology(qdisc="confucius bandwidth 20mbit flows 32768", rate=None, rtt="40ms").up()
    flows = BulkFlows(["cubic"] * 4, 20)
    qdisc = Bottleneck()
    time.sleep(5)
    first, start = qdisc.stats(), time.monotonic()
    during = []
    while time.monotonic() - start < 12:
        time.sleep(0.2)
        during.append(qdisc.stats())
    last, end = qdisc.stats(), time.monotonic()
    streams = rates_mbps(flows.samples(), 4, 20)
    at_rest = drained(qdisc)
    return {"streams_mbps": streams, "goodput_mbps": sum(streams),
            "wire_mbps": (last["bytes"] - first["bytes"]) * 8 / (end - start) / 1e6,
            "jfi": jain(streams), "during": during, "at_rest": at_rest}


def classes_of(cca_a, cca_b, seconds=30, settle=12):
    """Two bulk flows of the given CCAs; the per-class flow counts every second after settling."""
    t.Topology(qdisc="confucius bandwidth 20mbit mode class limit 200", rate=None, rtt="40ms").up()
    flows = BulkFlows([cca_a, cca_b], seconds)
    qdisc = Bottleneck()
    time.sleep(settle)
    samples = []
    for _ in range(seconds - settle - 3):
        stats = qdisc.stats()
        samples.append({"flows": stats["class_flows"][:3], "packets": stats["class_packets"][:3],
                        "moves": stats["moves"], "new_flows": stats["new_flows"],
                        "old_flows": stats["old_flows"], "dropped_packets": stats["dropped_packets"]})
        time.sleep(1)
    received = flows.samples()
    # Each flow's own story, for a run whose classes come out otherwise than expected.
    per_second = [rates_mbps(received, second, second + 1) for second in range(seconds)]
    return {"ccas": [cca_a, cca_b], "samples": samples,
            "rates_mbps": rates_mbps(received, 0, seconds),
            "per_second_mbps": [[round(second[flow], 2) for second in per_second] for flow in (0, 1)]}


def page_load(flows, size):
    """A page of `flows` objects of `size` bytes on as many domains, served from the server
    namespace (one address per domain); returns the client's command line."""
    page = sweep_page(flows, size)
    mapping = address_map(page.domains, str(t.DOMAIN_NETWORK))
    work = os.path.join("/tmp", page.id)
    os.makedirs(work, exist_ok=True)
    write_page(page, os.path.join(work, "page.json"))
    write_hosts(mapping, os.path.join(work, "hosts"))
    t.add_server_addresses(mapping.values())
    subprocess.Popen(in_ns(t.SERVER, os.path.join(TOOLS, "web-server"), "--hosts",
                           os.path.join(work, "hosts"), "--cca", "cubic"),
                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return in_ns(t.CLIENT, os.path.join(TOOLS, "web-client"), "--page", os.path.join(work, "page.json"),
                 "--hosts", os.path.join(work, "hosts"), "--cca", "cubic",
                 "--out", os.path.join(work, "load.json"))


def udp_share_timeline(qdisc, rate):
    """UDP a little faster than the 10 Mbit/s link, then a page load of 12 objects of 1.5 MB
    on 12 domains from 3 s on: the UDP flow's received rate every 100 ms as a share of the
    link. (10 Mbit/s keeps the emulated CPU from becoming the bottleneck.)"""
    t.Topology(qdisc=qdisc, rate=rate, rtt="40ms").up()
    client = page_load(12, 1_500_000)
    receiver = subprocess.Popen(in_ns(t.CLIENT, sys.executable, __file__, "udp-receive"),
                                stdout=subprocess.PIPE, text=True)
    if receiver.stdout.readline().strip() != "ready":
        raise RuntimeError("the UDP receiver did not start (its error is above)")
    sender = subprocess.Popen(in_ns(t.SERVER, sys.executable, __file__, "udp-send", "12e6", "9"))
    time.sleep(3)
    load = subprocess.run(client, capture_output=True, text=True)
    if sender.wait():
        raise RuntimeError("the UDP sender failed (its error is above)")
    arrivals = json.loads(receiver.communicate()[0])
    run("pkill", "-f", "web-server")
    shares = udp_shares(arrivals)
    return {"qdisc": qdisc, "udp_share_per_100ms": shares, "page_load_exit": load.returncode}


UDP_PORT = 5300
UDP_PAYLOAD = 1400
UDP_SLICE_S = 0.001
UDP_QUIET_S = 1.0


def udp_send(rate_bps, seconds):
    """UDP_PAYLOAD datagrams to the client at rate_bps of payload, a 1 ms slice at a time,
    sleeping between slices (never spinning: in virtual time a spin stops the clock)."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.connect((t.CLIENT_ADDRESS, UDP_PORT))
    payload, owed, start = bytes(UDP_PAYLOAD), 0.0, time.monotonic()
    while (now := time.monotonic()) - start < seconds:
        owed += rate_bps * UDP_SLICE_S / 8 / UDP_PAYLOAD
        while owed >= 1:
            try:
                sock.send(payload)
            except OSError:  # ENOBUFS: the queue is full, which is the point
                pass
            owed -= 1
        time.sleep(max(0.0, UDP_SLICE_S - (time.monotonic() - now)))


def udp_receive():
    """Print "ready", then, once UDP_QUIET_S passed without a datagram, the arrival time (ns)
    of each."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 8 << 20)
    sock.bind(("0.0.0.0", UDP_PORT))
    print("ready", flush=True)
    sock.settimeout(30.0)  # the first datagram: the sender starts after the page tool
    arrivals = []
    try:
        while True:
            sock.recv(UDP_PAYLOAD)
            arrivals.append(time.monotonic_ns())
            sock.settimeout(UDP_QUIET_S)
    except socket.timeout:
        pass
    json.dump(arrivals, sys.stdout)


def udp_shares(arrivals_ns):
    """The UDP flow's goodput in each BIN_S from its first arrival, as a share of LINK_BPS."""
    bins = [0] * (int((arrivals_ns[-1] - arrivals_ns[0]) / 1e9 / BIN_S) + 1)
    for ns in arrivals_ns:
        bins[int((ns - arrivals_ns[0]) / 1e9 / BIN_S)] += 1
    return [n * UDP_PAYLOAD * 8 / BIN_S / LINK_BPS for n in bins[:-1]]  # the last is cut short


def mean_packet_with_gro(qdisc):
    """A Cubic flow with TSO at the server and GRO at the router, as on a real router: the
    mean size of the packets the bottleneck qdisc queued (its own counters: the stack's
    count GSO segments), and its wire rate."""
    t.Topology(qdisc=qdisc, rate=None, rtt="40ms").up()
    run(*in_ns(t.SERVER, "ethtool", "-K", "srv-rtr", "tso", "on", "gso", "on"))
    run(*in_ns(t.ROUTER, "ethtool", "-K", "rtr-srv", "gro", "on"))
    flow = BulkFlows(["cubic"], 8)
    qdisc = Bottleneck()
    time.sleep(3)
    first, start = qdisc.stats(), time.monotonic()
    time.sleep(4)
    last, end = qdisc.stats(), time.monotonic()
    flow.samples()
    queued = last["enqueued_packets"] - first["enqueued_packets"]
    return {"mean_packet": (last["enqueued_bytes"] - first["enqueued_bytes"]) / max(queued, 1),
            "wire_mbps": (last["bytes"] - first["bytes"]) * 8 / (end - start) / 1e6}


def main():
    found = {"four_cubic": [four_cubic_flows()],
             "vegas_cubic": classes_of("vegas", "cubic"),
             "bbr_cubic": classes_of("bbr", "cubic"),
             "gro_shaped": mean_packet_with_gro("confucius bandwidth 20mbit"),
             "gro_unshaped": mean_packet_with_gro("confucius"),
             "motivating": [udp_share_timeline("confucius bandwidth 10mbit limit 1000 pace fixed", None),
                            udp_share_timeline("fq_codel", "10mbit")]}
    t.down()
    json.dump(found, open(os.path.join(os.environ["RESULTS"], "traffic.json"), "w"), indent=1)


if sys.argv[1:2] == ["udp-send"]:
    udp_send(float(sys.argv[2]), float(sys.argv[3]))
elif sys.argv[1:2] == ["udp-receive"]:
    udp_receive()
else:
    main()
