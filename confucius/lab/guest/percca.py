# SPDX-License-Identifier: MIT
"""What runs inside the VM for one per-CCA run: `python -m confucius.lab.guest.percca spec.json`.

Builds the lab's dumbbell (confucius.lab.topology) with a bare bottleneck, installs the
run's tc lines (queues and the classifier's filters), starts the bulk receiver in the
client's namespace and the senders in the server's (confucius.lab.guest.bulk), samples the
bottleneck's queues until the flows end, and writes `$RESULTS/percca.json`:

    {"sender_started_ns", "receiver": {"samples": [[ns, [bytes per flow]], ...]},
     "occupancy": [[ns, {queue: packets}], ...], "qdiscs": tc -s -j qdisc show at the end}

The spec (written by confucius.percca.runner): rtt_s, warmup_s, duration_s, port,
flows [{cca, queue}], tc [lines], occupancy ("confucius" | "qdisc"), sample_s.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

from .. import rtnl, topology

# Flows start together; the receiver outlives the senders by this much.
RECEIVER_GRACE_S = 1.0


def in_ns(namespace: str, argv: list) -> list[str]:
    return ["ip", "netns", "exec", namespace, *map(str, argv)]


def _bulk(namespace: str, *args) -> list[str]:
    return in_ns(namespace, [sys.executable, "-m", "confucius.lab.guest.bulk", *args])


def _qdiscs() -> list[dict]:
    done = subprocess.run(in_ns(topology.ROUTER, ["tc", "-s", "-j", "qdisc", "show", "dev",
                                                  topology.BOTTLENECK[1]]),
                          capture_output=True, text=True, check=True)
    return json.loads(done.stdout)


def _queue_of_handle(handle: str) -> int | None:
    """The per-queue pfifo under DRR has handle 101:, 102: ...; the shared FIFO is 10:."""
    major = int(handle.rstrip(":"), 16) if handle else 0
    return major - 0x101 if 0x101 <= major else (0 if major == 0x10 else None)


def qdisc_occupancy() -> dict[int, int]:
    found = {}
    for q in _qdiscs():
        queue = _queue_of_handle(q.get("handle", ""))
        if queue is not None and q["kind"] == "pfifo":
            found[queue] = q.get("qlen", 0)
    return found


def confucius_occupancy(dump: rtnl.ClassDump, ifindex: int) -> dict[int, int]:
    found: dict[int, int] = {}
    for flow in dump.confucius_flows(ifindex):
        queue = flow["class"] - 1
        found[queue] = found.get(queue, 0) + flow["packets"]
    return found


def sample_occupancy(kind: str, interval: float, until_ns: int) -> list:
    samples = []
    with rtnl.ClassDump(topology.ROUTER) as dump:
        ifindex = dump.index(topology.BOTTLENECK[1])
        while time.monotonic_ns() < until_ns:
            now = time.monotonic_ns()
            found = confucius_occupancy(dump, ifindex) if kind == "confucius" else qdisc_occupancy()
            samples.append([now, found])
            time.sleep(interval)
    return samples


def run(spec: dict, results: Path) -> dict:
    topology.Topology(qdisc=None, rate=None, rtt=f"{spec['rtt_s']}s").up()
    topology.install_bottleneck(spec["tc"])
    flows = spec["flows"]
    total = spec["warmup_s"] + spec["duration_s"]
    rx_out = results / "receiver.json"
    receiver = subprocess.Popen(_bulk(topology.CLIENT, "receive", "--port", spec["port"],
                                      "--flows", len(flows), "--duration", total + RECEIVER_GRACE_S,
                                      "--interval", spec["sample_s"], "--out", rx_out))
    started = time.monotonic_ns()
    sender = subprocess.Popen(_bulk(topology.SERVER, "send", "--address", topology.CLIENT_ADDRESS,
                                    "--port", spec["port"], "--duration", total,
                                    "--cca", ",".join(f["cca"] for f in flows)))
    occupancy = sample_occupancy(spec["occupancy"], spec["sample_s"], started + round(total * 1e9))
    for name, proc in (("sender", sender), ("receiver", receiver)):
        if proc.wait() != 0:
            raise RuntimeError(f"the bulk {name} exited {proc.returncode}")
    return {"sender_started_ns": started, "receiver": json.loads(rx_out.read_text()),
            "occupancy": occupancy, "qdiscs": _qdiscs()}


def main() -> None:
    spec = json.loads(Path(sys.argv[1]).read_text())
    results = Path(os.environ["RESULTS"])
    (results / "percca.json").write_text(json.dumps(run(spec, results)))


if __name__ == "__main__":
    main()
