#!/usr/bin/env python
# SPDX-License-Identifier: MIT
"""Hosts behind a router's NAT share its link (run by test_kernel_hosts_vm.py under UML,
in virtual time).

Two inside hosts, `a` (10.0.1.2) and `b` (10.0.2.2), each on a link of its own to the
router `rtr`, whose WAN link (198.18.0.1) leads to `srv` (198.18.0.2). The router
masquerades what leaves by the WAN and forwards ports to the inside hosts; `srv` has no
route to the inside, so every packet that reaches it went through the NAT. `a` has four
Cubic flows, `b` one:

- upload: from a and b to srv, the bottleneck the router's WAN egress (after NAT, where
  every packet's source is the router's address) under `isolate dual-srchost`;
- download: from srv to a and b through the forwarded ports, the bottleneck an IFB fed
  by the WAN's ingress (before NAT, where every packet's destination is the router's
  address) under `isolate dual-dsthost`;

each with `nat` and with `nonat`. Results go to $RESULTS/hosts.json: each host's goodput
in Mbit/s after the first seconds, per direction and setting.
"""

import json
import os
import subprocess
import sys

A, B, RTR, SRV = "a", "b", "rtr", "srv"
WAN, IFB = "rtr-wan", "rtr-ifb"
ADDRESS = {A: "10.0.1.2", B: "10.0.2.2", SRV: "198.18.0.2"}
ROUTER_SIDE = {A: "10.0.1.1", B: "10.0.2.1", SRV: "198.18.0.1"}
FLOWS = {A: 4, B: 1}
PORT = {A: 6000, B: 7000}      # each host's flows: ports PORT, PORT + 1, ...
RATE = "10mbit"
# Per run. Measured from SKIP_S: one flow is old from its first packet (nobody to protect)
# and the other four new, gaining weight step by step; the schedule is held while the old
# flow's queue stands, for at most maxhold (2 s), so their fair shares come at most twice
# that later (they did by 4.5 s). Up to a second before the end, when the senders stop.
SECONDS, SKIP_S, TAIL_S = 12, 6, 1
BULK = [sys.executable, "-m", "confucius.lab.guest.bulk"]
NAT_RULES = f"""
table ip nat {{
    chain forward_ports {{
        type nat hook prerouting priority dstnat;
        iifname "{WAN}" tcp dport {PORT[A]}-{PORT[A] + FLOWS[A] - 1} dnat to {ADDRESS[A]}
        iifname "{WAN}" tcp dport {PORT[B]} dnat to {ADDRESS[B]}
    }}
    chain masquerade_out {{
        type nat hook postrouting priority srcnat;
        oifname "{WAN}" masquerade
    }}
}}
"""


def run(*argv, stdin=None):
    return subprocess.run(argv, input=stdin, capture_output=True, text=True, check=True).stdout


def in_ns(ns, *argv):
    return ["ip", "netns", "exec", ns, *argv]


def link(ns, dev, peer_ns, peer_dev, address, peer_address):
    run("ip", "link", "add", dev, "netns", ns, "type", "veth", "peer", peer_dev, "netns", peer_ns)
    for where, name, addr in ((ns, dev, address), (peer_ns, peer_dev, peer_address)):
        run(*in_ns(where, "ip", "addr", "add", f"{addr}/24", "dev", name))
        run(*in_ns(where, "ip", "link", "set", name, "up"))


def topology():
    for ns in (A, B, RTR, SRV):
        run("ip", "netns", "add", ns)
        run(*in_ns(ns, "ip", "link", "set", "lo", "up"))
    for host in (A, B):
        link(RTR, f"rtr-{host}", host, "eth0", ROUTER_SIDE[host], ADDRESS[host])
        run(*in_ns(host, "ip", "route", "add", "default", "via", ROUTER_SIDE[host]))
    link(RTR, WAN, SRV, "eth0", ROUTER_SIDE[SRV], ADDRESS[SRV])
    run(*in_ns(RTR, "sysctl", "-qw", "net.ipv4.ip_forward=1"))
    run(*in_ns(RTR, "nft", "-f", "-"), stdin=NAT_RULES)
    run(*in_ns(RTR, "ip", "link", "add", IFB, "type", "ifb"))
    run(*in_ns(RTR, "ip", "link", "set", IFB, "up"))


def bottleneck(direction, nat):
    """The qdisc under test on the upload (WAN egress) or the download (the IFB)."""
    word = "nat" if nat else "nonat"
    if direction == "upload":
        run(*in_ns(RTR, "tc", "qdisc", "replace", "dev", WAN, "root", "confucius", "bandwidth", RATE,
                   "isolate", "dual-srchost", word))
        return
    run(*in_ns(RTR, "tc", "qdisc", "replace", "dev", IFB, "root", "confucius", "bandwidth", RATE,
               "isolate", "dual-dsthost", word))
    run(*in_ns(RTR, "tc", "qdisc", "replace", "dev", WAN, "handle", "ffff:", "ingress"))
    run(*in_ns(RTR, "tc", "filter", "replace", "dev", WAN, "parent", "ffff:", "protocol", "ip",
               "prio", "1", "matchall", "action", "mirred", "egress", "redirect", "dev", IFB))


def unshaped():
    for args in (("dev", WAN, "root"), ("dev", WAN, "ingress"), ("dev", IFB, "root")):
        subprocess.run(in_ns(RTR, "tc", "qdisc", "del", *args), capture_output=True)


def flows(direction, tag):
    """Each host's flows for SECONDS: senders inside for the upload, srv for the download
    (to the router's forwarded ports); returns each host's receiver output file."""
    receivers, senders, outs = [], [], {}
    for host in (A, B):
        receiver = SRV if direction == "upload" else host
        outs[host] = os.path.join(os.environ["RESULTS"], f"{tag}-{host}.json")
        receivers.append(subprocess.Popen(in_ns(receiver, *BULK, "receive", "--port", str(PORT[host]),
                                                "--flows", str(FLOWS[host]), "--duration",
                                                str(SECONDS + 2), "--out", outs[host])))
    for host in (A, B):
        sender = host if direction == "upload" else SRV
        to = ADDRESS[SRV] if direction == "upload" else ROUTER_SIDE[SRV]
        senders.append(subprocess.Popen(in_ns(sender, *BULK, "send", "--address", to, "--port",
                                              str(PORT[host]), "--cca", ",".join(["cubic"] * FLOWS[host]),
                                              "--duration", str(SECONDS))))
    if any(p.wait() for p in senders + receivers):
        raise RuntimeError(f"{tag}: a sender or receiver failed")
    return outs


def goodput_mbps(path):
    """The host's flows together, from SKIP_S to the last sample TAIL_S before SECONDS."""
    with open(path) as f:
        samples = json.load(f)["samples"]
    first_ns = samples[0][0]
    window = [(ns - first_ns) / 1e9 for ns, _ in samples]
    start = min(range(len(samples)), key=lambda i: abs(window[i] - SKIP_S))
    end = max(i for i in range(len(samples)) if window[i] <= SECONDS - TAIL_S)
    bits = 8 * (sum(samples[end][1]) - sum(samples[start][1]))
    return bits / (window[end] - window[start]) / 1e6


def main():
    topology()
    found = {}
    for direction in ("upload", "download"):
        for nat in (True, False):
            tag = f"{direction}-{'nat' if nat else 'nonat'}"
            bottleneck(direction, nat)
            outs = flows(direction, tag)
            found[tag] = {host: goodput_mbps(outs[host]) for host in (A, B)}
            found[tag]["qdisc"] = json.loads(run(*in_ns(RTR, "tc", "-s", "-j", "qdisc", "show", "dev",
                                                       WAN if direction == "upload" else IFB)))[0]
            print(tag, {h: round(found[tag][h], 2) for h in (A, B)}, flush=True)
            unshaped()
    with open(os.path.join(os.environ["RESULTS"], "hosts.json"), "w") as out:
        json.dump(found, out, indent=1)


main()
