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
"""

import json
import os
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


def iperf_servers(*ports):
    for port in ports:
        run(*in_ns(t.SERVER, "iperf3", "--server", "--daemon", "--one-off", "--port", str(port)))
    time.sleep(0.5)


def iperf_client(*args, port=5201):
    return subprocess.Popen(in_ns(t.CLIENT, "iperf3", "--client", t.SERVER_ADDRESS, "--port",
                                  str(port), "--reverse", "--json", *args),
                            stdout=subprocess.PIPE, text=True)


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
    """The wire rate comes from the qdisc's byte counter over the middle 12 s of the run."""
    t.Topology(qdisc="confucius bandwidth 20mbit", rate=None, rtt="40ms").up()
    iperf_servers(5201)
    flows = iperf_client("--parallel", "4", "--congestion", "cubic", "--time", "20", "--omit", "4")
    qdisc = Bottleneck()
    time.sleep(5)
    first, start = qdisc.stats(), time.monotonic()
    during = []
    while time.monotonic() - start < 12:
        time.sleep(0.2)
        during.append(qdisc.stats())
    last, end = qdisc.stats(), time.monotonic()
    report = json.loads(flows.communicate()[0])
    at_rest = drained(qdisc)
    streams = [s["receiver"]["bits_per_second"] for s in report["end"]["streams"]]
    return {"streams_mbps": [s / 1e6 for s in streams], "goodput_mbps": sum(streams) / 1e6,
            "wire_mbps": (last["bytes"] - first["bytes"]) * 8 / (end - start) / 1e6,
            "jfi": jain(streams), "during": during, "at_rest": at_rest}


def classes_of(cca_a, cca_b, seconds=30, settle=12):
    """Two bulk flows of the given CCAs; the per-class flow counts every second after settling."""
    t.Topology(qdisc="confucius bandwidth 20mbit mode class limit 200", rate=None, rtt="40ms").up()
    iperf_servers(5201, 5202)
    flows = [iperf_client("--congestion", cca, "--time", str(seconds), port=port)
             for cca, port in ((cca_a, 5201), (cca_b, 5202))]
    qdisc = Bottleneck()
    time.sleep(settle)
    samples = []
    for _ in range(seconds - settle - 3):
        stats = qdisc.stats()
        samples.append({"flows": stats["class_flows"][:3], "packets": stats["class_packets"][:3],
                        "moves": stats["moves"], "new_flows": stats["new_flows"],
                        "old_flows": stats["old_flows"], "dropped_packets": stats["dropped_packets"]})
        time.sleep(1)
    reports = [json.loads(f.communicate()[0]) for f in flows]
    # Each flow's own story, for a run whose classes come out otherwise than expected.
    return {"ccas": [cca_a, cca_b], "samples": samples,
            "rates_mbps": [r["end"]["sum_received"]["bits_per_second"] / 1e6 for r in reports],
            "per_second_mbps": [[round(i["sum"]["bits_per_second"] / 1e6, 2) for i in r["intervals"]]
                                for r in reports],
            "retransmits": [r["end"].get("sum_sent", {}).get("retransmits") for r in reports]}


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
    iperf_servers(5201)
    client = page_load(12, 1_500_000)
    udp = iperf_client("--udp", "--bitrate", "12M", "--length", "1400", "--time", "9",
                       "--interval", "0.1", port=5201)
    time.sleep(3)
    load = subprocess.run(client, capture_output=True, text=True)
    report = json.loads(udp.communicate()[0])
    run("pkill", "-f", "web-server")
    shares = [i["sum"]["bits_per_second"] / LINK_BPS for i in report["intervals"]]
    return {"qdisc": qdisc, "udp_share_per_100ms": shares, "page_load_exit": load.returncode}


def mean_packet_with_gro(qdisc):
    """A Cubic flow with TSO at the server and GRO at the router, as on a real router: the
    mean size of the packets the bottleneck qdisc queued (its own counters: the stack's
    count GSO segments), and its wire rate."""
    t.Topology(qdisc=qdisc, rate=None, rtt="40ms").up()
    run(*in_ns(t.SERVER, "ethtool", "-K", "srv-rtr", "tso", "on", "gso", "on"))
    run(*in_ns(t.ROUTER, "ethtool", "-K", "rtr-srv", "gro", "on"))
    iperf_servers(5201)
    flow = iperf_client("--congestion", "cubic", "--time", "8")
    qdisc = Bottleneck()
    time.sleep(3)
    first, start = qdisc.stats(), time.monotonic()
    time.sleep(4)
    last, end = qdisc.stats(), time.monotonic()
    flow.communicate()
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


main()
