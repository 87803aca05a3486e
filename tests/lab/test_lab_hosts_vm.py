# SPDX-License-Identifier: MIT
"""Two client hosts in the lab's kernel (UML 6.1, virtual time): both reach the server
through the LAN hop, the qdisc under test on the router's client side sees both hosts'
downloads, and the guest's per-host counters (guest/hosts.py) tell the hosts apart: a
download to host 2 alone grows host 2's received bytes, not host 1's. Then with the router's
NAT: the server sees both hosts as the router's address."""

import json
import os
import sys

import pytest

from confucius.lab import uml

pytestmark = [
    pytest.mark.vm,
    pytest.mark.skipif(not uml.KERNEL_BINARY.is_file(), reason="no UML kernel: run `make uml`"),
    pytest.mark.skipif(os.geteuid() != 0, reason="the UML guest writes the host's files as root"),
]

GUEST_SCRIPT = f"""#!{sys.executable}
import json, os, re, subprocess, time
from pathlib import Path
from confucius.lab import topology as t
from confucius.lab.guest.base import Processes
from confucius.lab.guest.hosts import HostCounters

def run(*argv):
    return subprocess.run(argv, capture_output=True, text=True, check=True).stdout

found = {{}}
t.Topology(qdisc="fq_codel", rate="20mbit", rtt="40ms", clients=2).up()
for ns in ("cli", "cli2"):
    ping = run("ip", "netns", "exec", ns, "ping", "-n", "-c", "3", "-i", "0.2", t.SERVER_ADDRESS)
    found[ns + "_rtt_ms"] = [float(x) for x in re.findall(r"time=([0-9.]+) ms", ping)]
scratch = Path("/tmp/hosts-vm")
scratch.mkdir()
procs = Processes(scratch)
counters = HostCounters(2, 0.2, procs, scratch)
counters.start()
run("ip", "netns", "exec", "srv", "iperf3", "--server", "--daemon", "--one-off")
time.sleep(0.5)
run("ip", "netns", "exec", "cli2", "iperf3", "--client", t.SERVER_ADDRESS, "--reverse", "--time", "3")
counters.stop()
counters.record(None)
found["samples"] = [json.loads(line) for line in (scratch / "hosts.jsonl").read_text().splitlines()]
found["bottleneck"] = run("tc", "-s", "-j", "-n", "rtr", "qdisc", "show", "dev", "rtr-cli")

t.Topology(qdisc="fq_codel", rate="20mbit", rtt="40ms", clients=2, nat=True).up()
listener = subprocess.Popen(["ip", "netns", "exec", "srv", "python3", "-c",
    "import socket\\ns = socket.create_server(('198.18.0.2', 9000))\\n"
    "for _ in range(2):\\n    c, a = s.accept()\\n    print(a[0], flush=True)\\n    c.close()"],
    stdout=subprocess.PIPE, text=True)
time.sleep(0.5)
for ns in ("cli", "cli2"):
    run("ip", "netns", "exec", ns, "python3", "-c",
        "import socket; socket.create_connection(('198.18.0.2', 9000), timeout=5).close()")
found["server_saw"] = listener.communicate(timeout=20)[0].split()
t.down()
json.dump(found, open(os.path.join(os.environ["RESULTS"], "hosts.json"), "w"))
"""


@pytest.fixture(scope="module")
def found(tmp_path_factory) -> dict:
    results = tmp_path_factory.mktemp("hosts")
    result = uml.run(GUEST_SCRIPT, results_dir=results, timeout=300)
    result.check()
    return json.loads((results / "hosts.json").read_text())


def test_both_hosts_reach_the_server_at_the_configured_rtt(found):
    for host in ("cli", "cli2"):
        rtts = found[f"{host}_rtt_ms"]
        assert len(rtts) == 3 and 40.0 <= min(rtts) and sorted(rtts)[1] <= 41.0


def test_the_counters_see_host_2_s_download_and_not_host_1(found):
    first, last = found["samples"][0]["rx_bytes"], found["samples"][-1]["rx_bytes"]
    times = [s["time_ns"] for s in found["samples"]]
    assert times == sorted(times) and len(times) >= 15
    host2_mbit = (last[1] - first[1]) * 8 / 1e6
    print(f"host 1 received {last[0] - first[0]} B, host 2 {last[1] - first[1]} B")
    # 3 s at up to 20 Mbit/s to host 2; host 1 only its neighbour's chatter, if any.
    assert 3 * 20 * 0.6 < host2_mbit <= (times[-1] - times[0]) / 1e9 * 20 * 1.05
    assert last[0] - first[0] < 10_000


def test_behind_the_nat_the_server_sees_the_router_for_both_hosts(found):
    assert found["server_saw"] == ["198.18.0.1", "198.18.0.1"]


def test_the_bottleneck_carried_the_download(found):
    fq_codel = next(q for q in json.loads(found["bottleneck"]) if q["kind"] == "fq_codel")
    assert fq_codel["bytes"] > 3 * 20e6 / 8 * 0.6
