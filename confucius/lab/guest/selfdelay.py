# SPDX-License-Identifier: MIT
"""A bulk flow's own delay: how long a download waits behind its own backlog.

Run inside a lab guest (either engine). `flows` Cubic downloads (server to client, the
lab's epoll sender and receiver) fill the bottleneck for `duration`; every SAMPLE_S after
WARMUP_S, the server's TCP reports each flow's smoothed RTT (`ss -tin`), and the base RTT
(the topology's netem) is taken off: what is left is the queueing delay each flow causes
itself. A qdisc with no AQM for its flows leaves a download a standing queue (a FIFO, or a
flow queue drained only by a tail or delay drop); fq_codel and cake keep it near their
5 ms target. With `--ecn` both ends negotiate ECN (net.ipv4.tcp_ecn=1), so that an AQM
can mark instead of dropping. Prints one JSON line: the queueing delay's percentiles over
every sample of every flow, the goodput, and the bottleneck's own counters for confucius.

    python -m confucius.lab.guest.selfdelay --qdisc 'confucius bandwidth 20mbit' --own
    python -m confucius.lab.guest.selfdelay --qdisc fq_codel --rate 20mbit --ecn
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import time

from confucius import metrics
from confucius.units import parse_rate, parse_time

from .. import rtnl, topology
from .base import in_ns

PORT = 6000
WARMUP_S = 4.0          # slow start and the first standing queue
SAMPLE_S = 0.5
BULK = [sys.executable, "-m", "confucius.lab.guest.bulk"]
RTT_FIELD = re.compile(r"\brtt:([0-9.]+)/")


def negotiate_ecn() -> None:
    """Both ends ask for ECN (Linux's default, 2, only accepts it)."""
    for namespace in (topology.SERVER, topology.CLIENT):
        subprocess.run(in_ns(namespace, ["sysctl", "-q", "-w", "net.ipv4.tcp_ecn=1"]), check=True)


def flow_rtts_ms() -> list[float]:
    """The smoothed RTT of every established flow the server sends to the client."""
    shown = subprocess.run(in_ns(topology.SERVER, ["ss", "-tin", "state", "established", "dst",
                                  topology.CLIENT_ADDRESS]), capture_output=True, text=True, check=True)
    return [float(rtt) for rtt in RTT_FIELD.findall(shown.stdout)]


def confucius_counters() -> dict:
    """The bottleneck's AQM and drop counters, when it is confucius."""
    with rtnl.Rtnl(topology.ROUTER) as nl:
        stats = rtnl.qdisc_stats(nl.index(topology.BOTTLENECK[1]), "confucius", nl)
    xstats = rtnl.confucius_xstats(stats.pop("app"))
    return {name: xstats[name] for name in ("aqm_drops", "ecn_marks", "delay_drops", "dropped_packets")}


def run_flows(flows: int, duration_s: float, base_rtt_ms: float) -> tuple[list[float], float]:
    """Queueing delays (ms) sampled over the run, and the flows' total goodput (bit/s)."""
    out = "/tmp/selfdelay-receiver.json"
    receiver = subprocess.Popen(in_ns(topology.CLIENT, [*BULK, "receive", "--port", PORT, "--flows",
                                       flows, "--duration", duration_s + 2, "--out", out]))
    sender = subprocess.Popen(in_ns(topology.SERVER, [*BULK, "send", "--address", topology.CLIENT_ADDRESS,
                                     "--port", PORT, "--cca", ",".join(["cubic"] * flows),
                                     "--duration", duration_s]))
    time.sleep(WARMUP_S)
    delays = []
    while sender.poll() is None:
        delays += [rtt - base_rtt_ms for rtt in flow_rtts_ms()]
        time.sleep(SAMPLE_S)
    if sender.returncode or receiver.wait():
        raise RuntimeError("the bulk sender or receiver failed (its error is above)")
    with open(out) as f:
        samples = json.load(f)["samples"]
    (t0, b0), (t1, b1) = samples[0], samples[-1]
    return delays, (sum(b1) - sum(b0)) * 8 / ((t1 - t0) / 1e9)


def measure(qdisc: str, rate: str | None, own: bool, flows: int, duration_s: float, rtt: str,
            ecn: bool) -> dict:
    """Build the topology, run the downloads through it and summarise their own delay."""
    topology.Topology(qdisc=qdisc, rate=None if own else rate, rtt=rtt).up()
    try:
        if ecn:
            negotiate_ecn()
        delays, goodput = run_flows(flows, duration_s, parse_time(rtt) * 1e3)
        if not delays:
            raise RuntimeError("no RTT sample: the flows never established")
        counters = confucius_counters() if qdisc.split()[0] == "confucius" else {}
    finally:
        topology.down()
    return {"qdisc": qdisc, "rate": rate, "flows": flows, "ecn": ecn, "rtt": rtt, "samples": len(delays),
            "delay_ms": {str(p): metrics.nearest_rank(delays, p) for p in (5, 50, 95)},
            "goodput_mbps": goodput / 1e6, **counters}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m confucius.lab.guest.selfdelay",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("--qdisc", required=True, help="qdisc under test (tc spec)")
    parser.add_argument("--rate", help="bottleneck rate for an HTB parent, e.g. 20mbit")
    parser.add_argument("--own", action="store_true", help="the qdisc shapes by itself (no HTB)")
    parser.add_argument("--flows", type=int, default=1, help="Cubic downloads")
    parser.add_argument("--duration", default="12s", help="how long the downloads run")
    parser.add_argument("--rtt", default="20ms", help="base round-trip time (netem)")
    parser.add_argument("--ecn", action="store_true", help="the flows negotiate ECN")
    args = parser.parse_args(argv)
    if not args.own and not args.rate:
        parser.error("give --rate (an HTB parent) or --own (the qdisc shapes)")
    if args.rate:
        parse_rate(args.rate)  # a bad rate is refused before anything is built
    print(json.dumps(measure(args.qdisc, args.rate, args.own, args.flows, parse_time(args.duration),
                             args.rtt, args.ecn)))


if __name__ == "__main__":
    main()
