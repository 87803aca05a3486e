# SPDX-License-Identifier: MIT
"""The topology inside the VM: propagation delay, bottleneck rate, rate changes, addresses.

One boot of the lab's kernel under User-Mode Linux in virtual time (host load cannot move
what it measures); the guest script (Python, the venv's interpreter) measures and writes
JSON to the results share, and the tests read it.
"""

import json
import os
import sys

import pytest

from confucius.lab import uml

pytestmark = [
    pytest.mark.skipif(not uml.KERNEL_BINARY.is_file(), reason="no UML kernel: run `make uml`"),
    pytest.mark.skipif(os.geteuid() != 0, reason="the UML guest writes the host's files as root"),
]

GUEST_SCRIPT = f"""#!{sys.executable}
import json, os, re, subprocess, time
from confucius.lab import topology as t

def run(*argv):
    return subprocess.run(argv, capture_output=True, text=True, check=True).stdout

found = {{}}
t.Topology(qdisc="fq_codel", rate="20mbit", rtt="40ms").up()
found["bottleneck"] = run("tc", "-n", "rtr", "qdisc", "show", "dev", "rtr-cli")
found["offloads"] = run("ip", "netns", "exec", "rtr", "ethtool", "-k", "rtr-cli")
ping = run("ip", "netns", "exec", "cli", "ping", "-n", "-c", "20", "-i", "0.2", t.SERVER_ADDRESS)
found["rtt_ms"] = [float(x) for x in re.findall(r"time=([0-9.]+) ms", ping)]

def cubic_mbps():
    run("ip", "netns", "exec", "srv", "iperf3", "--server", "--daemon", "--one-off")
    time.sleep(0.5)
    report = json.loads(run("ip", "netns", "exec", "cli", "iperf3", "--client", t.SERVER_ADDRESS,
                            "--reverse", "--congestion", "cubic", "--time", "10", "--omit", "2",
                            "--json"))
    return report["end"]["sum_received"]["bits_per_second"] / 1e6

found["cubic_mbps"] = cubic_mbps()

t.set_rate("10mbit")
found["class_after_change"] = run("tc", "-n", "rtr", "class", "show", "dev", "rtr-cli")
with open("/tmp/trace.log", "w") as trace:
    trace.write("50.0 12\\n50.3 0\\n50.6 6.5\\n")
started = time.monotonic()
found["trace_changes"] = t.follow_trace("/tmp/trace.log")
found["trace_seconds"] = time.monotonic() - started
found["class_after_trace"] = run("tc", "-n", "rtr", "class", "show", "dev", "rtr-cli")
run("tc", "-n", "rtr", "qdisc", "replace", "dev", "rtr-cli", "root", "cake", "bandwidth", "20mbit")
t.set_rate("7mbit")
found["cake_after_change"] = run("tc", "-n", "rtr", "qdisc", "show", "dev", "rtr-cli")

domains = t.domain_addresses(300)
t.add_server_addresses(domains)
found["domains"] = [domains[0], domains[-1]]
found["last_domain_ping"] = subprocess.run(
    ["ip", "netns", "exec", "cli", "ping", "-n", "-c", "1", "-W", "2", domains[-1]]).returncode

t.down()
found["namespaces_after_down"] = run("ip", "netns", "list")
json.dump(found, open(os.path.join(os.environ["RESULTS"], "topology.json"), "w"))
"""


@pytest.fixture(scope="module")
def found(tmp_path_factory) -> dict:
    results = tmp_path_factory.mktemp("topology")
    result = uml.run(GUEST_SCRIPT, results_dir=results, timeout=300)
    result.check()
    return json.loads((results / "topology.json").read_text())


def test_qdisc_under_test_sits_under_htb_at_the_bottleneck(found):
    lines = found["bottleneck"].splitlines()
    assert lines[0].startswith("qdisc htb 1: root")
    assert lines[1].startswith("qdisc fq_codel 10: parent 1:1")


def test_offloads_are_off(found):
    for feature in ("tcp-segmentation-offload", "generic-segmentation-offload",
                    "generic-receive-offload"):
        assert f"{feature}: off" in found["offloads"]


def test_round_trip_time_is_the_configured_40ms(found):
    # Measured in three boots: min and median 40.0 ms (the first ping also resolves the
    # neighbour: 80 ms).
    rtts = sorted(found["rtt_ms"])
    assert len(rtts) == 20
    median = rtts[len(rtts) // 2]
    print(f"RTT min {rtts[0]:.1f} median {median:.1f} max {rtts[-1]:.1f} ms")
    assert 40.0 <= rtts[0] and median <= 41.0


# TCP's goodput ceiling through 20 Mbit/s of 1514-byte frames carrying 1448 bytes each
# (timestamps on); Cubic reached 18.442 Mbit/s in three boots.
GOODPUT_CEILING_MBPS = 20 * 1448 / 1514


def test_cubic_fills_the_20mbit_bottleneck(found):
    print(f"Cubic through 20 Mbit/s: {found['cubic_mbps']:.3f} Mbit/s")
    assert 0.95 * GOODPUT_CEILING_MBPS <= found["cubic_mbps"] <= GOODPUT_CEILING_MBPS


def test_rate_changes_during_a_run(found):
    assert "rate 10Mbit" in found["class_after_change"]
    assert "bandwidth 7Mbit" in found["cake_after_change"]  # a qdisc that shapes by itself


def test_rate_follows_a_trace(found):
    print(f"trace of 0.6 s followed in {found['trace_seconds']:.4f} s")
    assert found["trace_changes"] == 3
    assert 0.6 <= found["trace_seconds"] < 0.7
    assert "rate 6500Kbit" in found["class_after_trace"]


def test_server_holds_many_domain_addresses(found):
    assert found["domains"] == ["198.18.128.1", "198.18.129.44"]
    assert found["last_domain_ping"] == 0


def test_down_removes_the_namespaces(found):
    assert found["namespaces_after_down"] == ""
