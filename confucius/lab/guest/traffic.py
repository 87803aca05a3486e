# SPDX-License-Identifier: MIT
"""Traffic beside the RT flow: irtt probes and iperf3 bulk flows, one Runner each.

Both write their JSON when stopped: thousands of round trips or intervals take them many
seconds under TCG, longer than the default wait before a kill (which left empty files), so
`stop` sends one signal (a second one makes irtt quit without writing) and `record` waits.
Bulk flows of other kinds (the per-CCA experiments') are further Runners of their own."""

from __future__ import annotations

import signal
import subprocess
import threading
import time
from pathlib import Path

from .. import topology
from ..contract import GUEST_TIMING, SS_TIME_MARK, Bulk, GuestEvents, Probes
from .base import Processes, in_ns, now_ns

IRTT_PORT = 2112
IPERF_BASE_PORT = 5201
WRITE_RESULTS_S = GUEST_TIMING.write_results_s
SENDER_SAMPLE_S = 0.2


class RttProbes:
    """irtt from the client to the server at the spec's interval, into irtt.json."""

    def __init__(self, probes: Probes, procs: Processes, scratch: Path):
        self.probes, self.procs, self.scratch = probes, procs, scratch

    def start(self) -> None:
        self.procs.start("irtt-server", in_ns(topology.SERVER, ["irtt", "server", "-b",
                                                                f"{topology.SERVER_ADDRESS}:{IRTT_PORT}"]))
        time.sleep(0.5)
        self.procs.start("irtt-client", in_ns(topology.CLIENT, [
            "irtt", "client", "-i", f"{self.probes.interval_s * 1e3:g}ms", "-d", "24h", "-q",
            "-o", self.scratch / "irtt.json", f"{topology.SERVER_ADDRESS}:{IRTT_PORT}"]))

    def stop(self) -> None:
        self.procs.signal("irtt-client", signal.SIGTERM)

    def record(self, events: GuestEvents) -> None:
        if "irtt-client" in self.procs.running:
            self.procs.wait("irtt-client", timeout=WRITE_RESULTS_S)


class BulkFlows:
    """iperf3 flows server -> client host (its `host`) through the bottleneck, each from its start time after
    the run's t0 (noted in the events: iperf3's own times count from its start), into
    bulk-<n>.json.

    With -R the iperf3 server sends, and the client's JSON has no tcp_info of the sender;
    so every SENDER_SAMPLE_S a thread prints each flow's server-side sockets (`ss -tin` on
    its port: the data connection and iperf3's control connection) into bulk-<n>-ss.txt,
    each sample after a line with the run's clock (`Time: <ns>`). The host keeps the
    sender's smoothed RTT (run_folder.py)."""

    def __init__(self, bulk: list[Bulk], procs: Processes, scratch: Path):
        self.bulk, self.procs, self.scratch = bulk, procs, scratch
        self.timers: list[threading.Timer] = []
        self.started_ns: dict[str, int] = {}
        self.stopping = threading.Event()
        self.sampler = threading.Thread(target=self._sample_senders, name="bulk-ss", daemon=True)

    def start(self) -> None:
        t0 = time.monotonic()
        for number, bulk in enumerate(self.bulk):
            port = IPERF_BASE_PORT + number
            self.procs.start(f"bulk-server-{number}", in_ns(topology.SERVER, [
                "iperf3", "-s", "-1", "-p", port, "-B", topology.SERVER_ADDRESS]))
            seconds = bulk.duration_s or 86400
            client, _ = topology.client_host(bulk.host)
            argv = in_ns(client, ["iperf3", "-c", topology.SERVER_ADDRESS, "-p", port, "-R",
                                           "-C", bulk.cca, "-t", f"{seconds:g}", "-i", "0.5", "-J"])
            out = open(self.scratch / f"bulk-{number}.json", "w")
            delay = max(0.0, t0 + bulk.start_s - time.monotonic())
            timer = threading.Timer(delay, self._start_flow, args=(number, argv, out))
            timer.start()
            self.timers.append(timer)
        if self.bulk:
            self.sampler.start()

    def _start_flow(self, number: int, argv: list[str], out) -> None:
        self.started_ns[str(number)] = now_ns()
        self.procs.start(f"bulk-{number}", argv, stdout=out)

    def _sample_senders(self) -> None:
        outs = [open(self.scratch / f"bulk-{n}-ss.txt", "w") for n in range(len(self.bulk))]
        try:
            due = time.monotonic()
            while not self.stopping.is_set():
                for number, out in enumerate(outs):
                    out.write(f"{SS_TIME_MARK}{now_ns()}\n")
                    out.flush()
                    subprocess.run(sender_sockets_command(IPERF_BASE_PORT + number), stdin=subprocess.DEVNULL,
                                   stdout=out, stderr=subprocess.DEVNULL, check=False)
                due += SENDER_SAMPLE_S
                self.stopping.wait(max(0.0, due - time.monotonic()))
        finally:
            for out in outs:
                out.close()

    def _running(self) -> list[str]:
        return [name for name in (f"bulk-{n}" for n in range(len(self.bulk))) if name in self.procs.running]

    def stop(self) -> None:
        for timer in self.timers:
            timer.cancel()
        self.stopping.set()
        for name in self._running():
            self.procs.signal(name, signal.SIGTERM)

    def record(self, events: GuestEvents) -> None:
        for name in self._running():
            self.procs.wait(name, timeout=WRITE_RESULTS_S)
        if self.sampler.is_alive():
            self.sampler.join(timeout=WRITE_RESULTS_S)
        events.bulk_started_ns = dict(self.started_ns)


def sender_sockets_command(port: int) -> list[str]:
    """`ss -tin` of the established sockets on the server's side of one iperf3 port."""
    return in_ns(topology.SERVER, ["ss", "-t", "-i", "-n", "-H", "state", "established", f"( sport = :{port} )"])
