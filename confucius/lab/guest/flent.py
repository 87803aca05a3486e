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
(flent_files.py reads both).

rtt_fair and rtt_fair_var load one server per RTT (the scenario's `server_rtts`): the
server's namespace gets an address per RTT (topology.add_rtt_servers), netserver and irtt
answer on each, Flent targets each with one -H, and each test's folder gets `servers.txt`
(an address and its RTT in ms per line) for flent_files.py to tell the servers apart."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

from .. import topology
from ...units import parse_time
from ...experiment.records import FLENT_RTT_FAIR_SERVERS
from ..contract import FLENT, GUEST_TIMING, SS_TIME_MARK, Flent, FlentEvent, GuestEvents
from .base import Processes, in_ns, log, now_ns
from .traffic import IRTT_PORT

NETPERF_PORT = 12865          # netserver's control port, where Flent's netperf connects
SERVER_START_S = 0.5
SERVER_SOCKETS = "ss-server.txt"
SERVERS = "servers.txt"


class FlentServers:
    """netserver and an irtt server on the server's address, for the run's Flent tests, and
    on each rtt_fair server's (after giving the server those, at their RTTs; the link's RTT
    `link_rtt` as tc writes it)."""

    def __init__(self, procs: Processes, flent: Flent, link_rtt: str):
        self.procs, self.flent, self.link_rtt = procs, flent, link_rtt
        self.addresses = [topology.SERVER_ADDRESS]

    def start(self) -> None:
        if self.flent.server_rtts_s:
            self.addresses += topology.add_rtt_servers(parse_time(self.link_rtt), self.flent.server_rtts_s)
            log(f"flent: servers {', '.join(self._rtt_servers())}")
        # One netserver per address: each listens on its own, as the lone one always did.
        for address in self.addresses:
            self.procs.start(f"netserver-{address}", in_ns(topology.SERVER, [
                "netserver", "-D", "-4", "-L", address, "-p", NETPERF_PORT]))
        self.procs.start("flent-irtt-server", in_ns(topology.SERVER, [
            "irtt", "server", "-b", ",".join(f"{address}:{IRTT_PORT}" for address in self.addresses)]))
        time.sleep(SERVER_START_S)

    def _rtt_servers(self) -> list[str]:
        return [f"{address} at {rtt * 1e3:g} ms" for address, rtt in zip(self.addresses[1:], self.flent.server_rtts_s)]

    def stop(self) -> None:
        for address in self.addresses:
            self.procs.stop(f"netserver-{address}")
        self.procs.stop("flent-irtt-server")

    def record(self, events: GuestEvents) -> None:
        pass


def targets(flent: Flent, test: str) -> list[str]:
    """The hosts a test loads: each rtt_fair server for rtt_fair's tests, else the server."""
    if test in FLENT_RTT_FAIR_SERVERS:
        return topology.rtt_server_addresses(len(flent.server_rtts_s))
    return [topology.SERVER_ADDRESS]


def command(flent: Flent, test: str, data_dir: Path, title: str) -> list[str]:
    """Flent's command line for one test, run in the client's namespace; tcp_nup's uploads
    and tcp_ndown's downloads are as many streams."""
    hosts = [word for address in targets(flent, test) for word in ("-H", address)]
    return in_ns(topology.CLIENT, [
        FLENT, test, "-4", *hosts, "-l", flent.length_s, "-s", f"{flent.step_s:g}",
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
    if test in FLENT_RTT_FAIR_SERVERS:
        (data_dir / SERVERS).write_text("".join(
            f"{address} {rtt * 1e3:g}\n" for address, rtt in zip(targets(flent, test), flent.server_rtts_s)))
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
