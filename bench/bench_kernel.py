#!/usr/bin/env python
# SPDX-License-Identifier: MIT
"""Per-packet cost of sch_confucius against fq_codel, cake and pfifo, in one VM run.

Run inside the lab VM (`make bench-kernel`). pktgen sends UDP packets of 10, 100, 1000 and
10 000 flows (source ports in turn) through the root qdisc of a dummy device in queue_xmit
mode, so every packet is enqueued and dequeued by the qdisc under test and then dropped by
the device. One pktgen thread on one CPU is the bottleneck, so its packets per second are
the inverse of the per-packet cost of the whole path; the qdiscs differ only in their part
of it. Each point is the median of REPEATS runs, qdiscs interleaved. Absolute numbers come
from an emulated CPU; the ratios are what to read.
"""

import os
import re
import statistics
import subprocess

FLOWS = (10, 100, 1000, 10000)
QDISCS = {
    "pfifo": "pfifo limit 10000",
    "fq_codel": "fq_codel",
    "cake": "cake",
    "confucius": "confucius",
    "confucius flows 16384": "confucius flows 16384",
}
PACKETS = int(os.environ.get("BENCH_PACKETS", "300000"))
REPEATS = int(os.environ.get("BENCH_REPEATS", "3"))
DEV = "d0"


def sh(*argv):
    subprocess.run(argv, check=True, capture_output=True, text=True)


def pktgen_write(path, line):
    with open(path, "w") as f:
        f.write(line + "\n")


def setup():
    sh("modprobe", "pktgen")
    sh("ip", "link", "add", DEV, "type", "dummy")
    sh("ip", "link", "set", DEV, "up")
    pktgen_write("/proc/net/pktgen/kpktgend_0", "rem_device_all")
    pktgen_write("/proc/net/pktgen/kpktgend_0", f"add_device {DEV}")


def pps(spec, flows):
    sh("tc", "qdisc", "replace", "dev", DEV, "root", *spec.split())
    dev = f"/proc/net/pktgen/{DEV}"
    for line in (f"count {PACKETS}", "clone_skb 0", "pkt_size 100", "delay 0",
                 "xmit_mode queue_xmit", "dst 198.51.100.2", "dst_mac 02:00:00:00:00:02",
                 "udp_src_min 10000", f"udp_src_max {10000 + flows - 1}", "udp_dst_min 9",
                 "udp_dst_max 9"):
        pktgen_write(dev, line)
    pktgen_write("/proc/net/pktgen/pgctrl", "start")
    result = open(dev).read()
    sh("tc", "qdisc", "del", "dev", DEV, "root")
    return int(re.search(r"(\d+)pps", result).group(1))


def main():
    setup()
    results = {(q, f): [] for q in QDISCS for f in FLOWS}
    for _ in range(REPEATS):
        for flows in FLOWS:
            for name, spec in QDISCS.items():
                results[name, flows].append(pps(spec, flows))
    median = {key: statistics.median(v) for key, v in results.items()}
    print(f"pktgen through each qdisc on a dummy device: packets per second "
          f"(median of {REPEATS} x {PACKETS} packets)")
    print(f"{'qdisc':<24}" + "".join(f"{f:>10}" for f in FLOWS))
    for name in QDISCS:
        print(f"{name:<24}" + "".join(f"{median[name, f]:>10.0f}" for f in FLOWS))
    print("\ncost per packet relative to fq_codel (fq_codel pps / qdisc pps; target <= 1.2)")
    for name in QDISCS:
        print(f"{name:<24}" + "".join(f"{median['fq_codel', f] / median[name, f]:>10.2f}" for f in FLOWS))


main()
