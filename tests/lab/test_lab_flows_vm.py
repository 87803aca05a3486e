# SPDX-License-Identifier: MIT
"""The guest's flow sampler against a real Confucius qdisc: two UDP flows (ports 5000 and
5001, 8 Mbit/s each) through a 10 Mbit/s bottleneck, sampled every 20 ms for 4 s over
netlink, as the guest does around a page load. One boot of the UML kernel, in virtual
time: under qemu its pace and cost followed the host's load (tests/README.md)."""

import json
import sys

import pytest

from confucius.lab.guest.flows import FLOW_FAST_S

pytestmark = pytest.mark.vm

GUEST_SCRIPT = f"""#!{sys.executable}
import json, os, subprocess, time
from pathlib import Path
from confucius.lab import topology as t
from confucius.lab.guest.flows import FlowSampler

def netns(ns, *argv):
    return subprocess.Popen(["ip", "netns", "exec", ns, *argv], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

t.Topology(qdisc="confucius bandwidth 10mbit", rate=None, rtt="10ms").up()
servers = [netns(t.CLIENT, "iperf3", "-s", "-1", "-p", str(port)) for port in (5000, 5001)]
time.sleep(1)
senders = [netns(t.SERVER, "iperf3", "-c", t.CLIENT_ADDRESS, "-p", str(port), "-u", "-b", "8M", "-l", "1200",
                 "-t", "8", "--cport", str(port)) for port in (5000, 5001)]
time.sleep(2)
path = Path("/tmp/flows.jsonl")
sampler = FlowSampler(path, interval_s=0.2)
sampler.start()
sampler.record_load()
time.sleep(4)
sampler.stop()
found = {{"stats": sampler.statistics().to_dict(), "samples": [json.loads(line) for line in path.read_text().splitlines()],
          "tc": subprocess.run(["tc", "-n", t.ROUTER, "-s", "class", "show", "dev", t.BOTTLENECK[1]],
                               capture_output=True, text=True).stdout}}
for proc in senders + servers:
    proc.kill()
json.dump(found, open(os.path.join(os.environ["RESULTS"], "flows.json"), "w"))
"""


@pytest.fixture(scope="module")
def found(boot_guest) -> dict:
    return json.loads((boot_guest(GUEST_SCRIPT, "flows", timeout=240) / "flows.json").read_text())


def test_the_sampler_sees_both_udp_flows_queue(found):
    ports = {f["dport"] for s in found["samples"] for f in s["flows"] if f["packets"] and f["ip_proto"] == 17}
    assert {5000, 5001} <= ports, found["tc"]
    queued = [f["bytes"] for s in found["samples"] for f in s["flows"] if f["dport"] in (5000, 5001)]
    assert max(queued) > 0


def test_samples_are_20ms_apart(found):
    times = [s["time_ns"] for s in found["samples"]]
    gaps = sorted((b - a) / 1e6 for a, b in zip(times, times[1:]))
    stats = found["stats"]
    print(f"{stats['samples']} samples in 4 s, median gap {gaps[len(gaps) // 2]:.1f} ms, "
          f"max {gaps[-1]:.1f} ms, CPU {stats['cpu_ms_per_sample']:.2f} ms per sample")
    assert stats["written"] == stats["samples"] == len(times)
    # In virtual time the pace holds on every sample, the qdisc busy forwarding or not: 4 s
    # of them, each within half a period of the last. (What a sample costs in CPU is the
    # host's question, not asked here: virtual time charges it nothing, and under qemu it
    # followed the host's load, 25 ms a sample with two test suites beside it.)
    assert len(times) >= 0.9 * 4 / FLOW_FAST_S
    assert gaps[-1] <= 1.5 * FLOW_FAST_S * 1e3
