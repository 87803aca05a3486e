# SPDX-License-Identifier: MIT
"""What the run captures from the kernel: the router's qdiscs as installed, the bottleneck's
qdisc statistics over time (qdisc.jsonl) and, at the end, every drop counter (counters.json)."""

from __future__ import annotations

import json
import subprocess
import threading
import time
from pathlib import Path

from .. import topology
from ..contract import GuestEvents
from .base import in_ns, now_ns


def router_qdiscs() -> str:
    """Every device of the router, so that the record shows where the shaper is and where it
    is not (ingress shaping leaves the client side's egress without one)."""
    return subprocess.run(["tc", "-n", topology.ROUTER, "qdisc", "show"], capture_output=True, text=True).stdout


def counters() -> dict:
    """Every place a packet can be dropped, per namespace: links, qdiscs, the kernel's
    SNMP counters (UDP buffer errors, IP forwarding) and the per-CPU backlog (softnet)."""
    found = {}
    for ns in (topology.SERVER, topology.ROUTER, topology.CLIENT):
        read = lambda *argv: subprocess.run(in_ns(ns, argv), capture_output=True, text=True).stdout
        found[ns] = {"links": read("ip", "-s", "-j", "link", "show"), "qdiscs": read("tc", "-s", "-j", "qdisc", "show"),
                     "snmp": read("cat", "/proc/net/snmp", "/proc/net/netstat")}
    found["softnet_stat"] = Path("/proc/net/softnet_stat").read_text()
    return found


class StatsSampler(threading.Thread):
    """`tc -s -j qdisc show` of the bottleneck every `interval_s`, from one tc process."""

    def __init__(self, path: Path, interval_s: float, dev: str = topology.BOTTLENECK[1]):
        super().__init__(daemon=True)
        self.path, self.interval_s, self.dev = path, interval_s, dev
        self.halt = threading.Event()
        self.samples = 0

    def run(self) -> None:
        ns, dev = topology.ROUTER, self.dev
        tc = subprocess.Popen(["tc", "-s", "-j", "-n", ns, "-batch", "-"], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        with self.path.open("w") as out:
            next_at = time.monotonic()
            while not self.halt.is_set():
                taken = now_ns()
                tc.stdin.write(f"qdisc show dev {dev}\n")
                tc.stdin.flush()
                line = tc.stdout.readline()
                if not line:
                    break
                out.write(f'{{"time_ns": {taken}, "qdiscs": {line.strip()}}}\n')
                self.samples += 1
                next_at += self.interval_s
                self.halt.wait(max(0.0, next_at - time.monotonic()))
        tc.stdin.close()
        tc.wait()

    def stop(self) -> None:
        self.halt.set()
        self.join(timeout=5)


class StatsCapture:
    """The capture's Runner: statistics sampled from the start; counters at the end."""

    def __init__(self, scratch: Path, interval_s: float, dev: str):
        self.scratch = scratch
        self.sampler = StatsSampler(scratch / "qdisc.jsonl", interval_s, dev)

    def start(self) -> None:
        self.sampler.start()

    def stop(self) -> None:
        self.sampler.stop()

    def record(self, events: GuestEvents) -> None:
        events.stats_samples = self.sampler.samples
        (self.scratch / "counters.json").write_text(json.dumps(counters(), indent=1) + "\n")
