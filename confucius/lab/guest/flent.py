# SPDX-License-Identifier: MIT
"""Flent's tests across the bottleneck: netperf's and irtt's servers on the server side
(`FlentServers`, a Runner) and Flent itself on the client side, one test after another
(`run_test`, called by schedule.flent_tests).

Flent drives netperf (TCP_STREAM uploads, TCP_MAERTS downloads), ping and irtt (the UDP
round trips of rrul, the VoIP stream of voip: Flent picks irtt when its server answers,
else netperf's UDP_RR or D-ITG) towards one host, the server's address, so every flow
crosses the router: downloads through the bottleneck, uploads through the upload's shaper
(the scenario shapes both). Each test writes its data file (`<test>-<date>.<title>.flent.gz`,
Flent's own format) into flent/<test>/ of the results folder; Flent's summary goes to
logs/flent-<test>.out.

Each bulk flow's own RTT is read where its sender is, from the kernel's tcp_info as `ss -ti`
prints it, every step: Flent's socket stats (`--socket-stats`) sample the client's sockets,
which are the senders of the uploads (netperf TCP_STREAM) only, and go into the data file;
the downloads' senders are netserver's sockets in the server's namespace, which Flent does
not sample, so `ServerSockets` samples them beside the test into flent/<test>/ss-server.txt
(flent_files.py reads both)."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

from .. import topology
from ..contract import FLENT, GUEST_TIMING, SS_TIME_MARK, Flent, FlentEvent, GuestEvents
from .base import Processes, in_ns, log, now_ns
from .traffic import IRTT_PORT

NETPERF_PORT = 12865          # netserver's control port, where Flent's netperf connects
SERVER_START_S = 0.5
SERVER_SOCKETS = "ss-server.txt"


class FlentServers:
    """netserver and an irtt server on the server's address, for the run's Flent tests."""

    def __init__(self, procs: Processes):
        self.procs = procs

    def start(self) -> None:
        self.procs.start("netserver", in_ns(topology.SERVER, [
            "netserver", "-D", "-4", "-L", topology.SERVER_ADDRESS, "-p", NETPERF_PORT]))
        self.procs.start("flent-irtt-server", in_ns(topology.SERVER, [
            "irtt", "server", "-b", f"{topology.SERVER_ADDRESS}:{IRTT_PORT}"]))
        time.sleep(SERVER_START_S)

    def stop(self) -> None:
        self.procs.stop("netserver")
        self.procs.stop("flent-irtt-server")

    def record(self, events: GuestEvents) -> None:
        pass


def command(flent: Flent, test: str, data_dir: Path, title: str) -> list[str]:
    """Flent's command line for one test, run in the client's namespace; tcp_nup's uploads
    and tcp_ndown's downloads are as many streams."""
    return in_ns(topology.CLIENT, [
        FLENT, test, "-4", "-H", topology.SERVER_ADDRESS, "-l", flent.length_s, "-s", f"{flent.step_s:g}",
        "-D", data_dir, "-t", title, "--socket-stats",
        "--test-parameter", f"upload_streams={flent.upload_streams}",
        "--test-parameter", f"download_streams={flent.upload_streams}"])


def server_sockets_command(step_s: float) -> list[str]:
    """Every step, the time (Unix s) and `ss -tin` of the server's TCP connections but
    netperf's control connections: the downloads' senders (and the uploads' receivers)."""
    loop = (f"while :; do echo \"{SS_TIME_MARK}$(date +%s.%N)\"; "
            f"ss -t -i -n -H state established '( sport != :{NETPERF_PORT} and dport != :{NETPERF_PORT} )'; "
            f"sleep {step_s:g}; done")
    return in_ns(topology.SERVER, ["bash", "-c", loop])


def run_test(flent: Flent, test: str, scratch: Path, title: str, procs: Processes) -> FlentEvent:
    """Run one Flent test to its end, the server's sockets sampled meanwhile; its data file
    and output land in `scratch`."""
    data_dir = scratch / "flent" / test
    data_dir.mkdir(parents=True, exist_ok=True)
    output = scratch / "logs" / f"flent-{test}.out"
    started = now_ns()
    log(f"flent {test}: {flent.length_s} s")
    with output.open("w") as out, (data_dir / SERVER_SOCKETS).open("w") as sockets:
        procs.start(f"ss-server-{test}", server_sockets_command(flent.step_s), stdout=sockets)
        try:
            code = subprocess.run(command(flent, test, data_dir, title), stdin=subprocess.DEVNULL, stdout=out,
                                  stderr=subprocess.STDOUT, timeout=GUEST_TIMING.flent_test_budget_s(flent)).returncode
        except subprocess.TimeoutExpired:
            code = -1
        finally:
            procs.stop(f"ss-server-{test}")
    files = sorted(data_dir.glob("*.flent.gz"))
    log(f"flent {test}: exit {code}, {len(files)} data file(s)")
    return FlentEvent(test=test, started_ns=started, ended_ns=now_ns(), exit=code,
                      data_file=str(files[-1].relative_to(scratch)) if files else None,
                      log=str(output.relative_to(scratch)))
