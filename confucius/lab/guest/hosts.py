# SPDX-License-Identifier: MIT
"""Bytes delivered to each client host over time, for each host's share of the bottleneck
(`[link] clients = 2`): every sample interval, each client's received bytes on its one
device, read from the kernel's counters in its namespace, into hosts.jsonl.

A file read per host and sample, not a program (`ip -s link`) per sample, which costs a
tenth of a second or more under emulation: one idle process sits in each client's namespace,
and /proc/<its pid>/net/dev shows that namespace's devices."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

from .. import topology
from ..contract import GuestEvents
from .base import Processes, in_ns, now_ns

HOSTS_FILE = "hosts.jsonl"


def _devices(net_dev: str) -> dict[str, str]:
    """The text of /proc/net/dev as each device's counters (after its two header lines)."""
    return {name.strip(): counters for name, _, counters in (line.partition(":") for line in net_dev.splitlines()[2:])}


def rx_bytes(net_dev: str, device: str) -> int:
    """The received bytes of `device` in the text of /proc/net/dev."""
    counters = _devices(net_dev).get(device)
    if counters is None:
        raise RuntimeError(f"no device {device} in /proc/net/dev")
    return int(counters.split()[0])


def _wait_in_namespace(net_dev: Path, device: str, timeout_s: float = 10.0) -> None:
    """Until the process behind `net_dev` has entered the namespace that holds `device`."""
    deadline = time.monotonic() + timeout_s
    while device not in _devices(net_dev.read_text()):
        if time.monotonic() > deadline:
            raise RuntimeError(f"{net_dev} did not show {device} within {timeout_s:g} s")
        time.sleep(0.05)


class HostCounters:
    """Each client host's received bytes every `interval_s`, one JSON line per sample:
    {"time_ns": ..., "rx_bytes": [host 1's, host 2's, ...]}."""

    def __init__(self, clients: int, interval_s: float, procs: Processes, scratch: Path):
        self.clients, self.interval_s, self.procs, self.path = clients, interval_s, procs, scratch / HOSTS_FILE
        self.halt = threading.Event()
        self.sampler = threading.Thread(target=self._sample, name="host-counters", daemon=True)
        self.sources: list[tuple[Path, str]] = []

    def start(self) -> None:
        for host in range(1, self.clients + 1):
            namespace, _ = topology.client_host(host)
            # `ip netns exec` becomes `sleep` in the namespace: its pid's view is the host's.
            anchor = self.procs.start(f"host-{host}-anchor", in_ns(namespace, ["sleep", "infinity"]))
            source = (Path(f"/proc/{anchor.pid}/net/dev"), topology.CLIENT_HOSTS[host - 1][2])
            _wait_in_namespace(*source)
            self.sources.append(source)
        self.sampler.start()

    def _sample(self) -> None:
        with self.path.open("w") as out:
            due = time.monotonic()
            while not self.halt.is_set():
                taken = now_ns()
                counts = [rx_bytes(path.read_text(), device) for path, device in self.sources]
                out.write(json.dumps({"time_ns": taken, "rx_bytes": counts}) + "\n")
                due += self.interval_s
                self.halt.wait(max(0.0, due - time.monotonic()))

    def stop(self) -> None:
        self.halt.set()

    def record(self, events: GuestEvents) -> None:
        self.sampler.join(timeout=5 * self.interval_s + 1)
        for host in range(1, self.clients + 1):
            self.procs.stop(f"host-{host}-anchor")
