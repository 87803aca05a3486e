# SPDX-License-Identifier: MIT
"""The guest's main: reads the spec, builds the topology, composes the runners and the
schedule from the spec, and leaves the results folder as the host's run_folder.py reads it."""

from __future__ import annotations

import os
import shutil
import sys
import time
from pathlib import Path

from .. import topology
from ..contract import EVENTS_FORMAT, ContractError, GuestEvents, RunSpec
from .base import Context, Processes, Runner, log, now_ns
from .capture import StatsCapture, router_qdiscs
from .flent import FlentServers
from .flows import FlowSampler
from .hosts import HostCounters
from .pages import WebServer
from .schedule import MODES
from .trace import TracePlayer
from .traffic import BulkFlows, RttProbes

SCRATCH = Path("/tmp/lab-run")


def build_topology(spec: RunSpec) -> list[str]:
    """The dumbbell with a bare bottleneck, then the run's record of the bottleneck's tc
    commands as it is (runner.bottleneck_commands; the database stores the same list).
    Returns what was run, for the host to compare with the record."""
    topology.Topology(qdisc=None, rate=None, rtt=spec.topology.rtt, shaping=spec.topology.shaping,
                      clients=spec.topology.clients, nat=spec.topology.nat).up()
    ran = topology.install_bottleneck(spec.tc_commands)
    if spec.addresses:
        topology.add_server_addresses(spec.addresses)
    return ran


def runners(ctx: Context, flows: FlowSampler) -> list[Runner]:
    """The tools the spec asks for besides the RT flow, in the order they start. Bulk flows
    start last: their start times count from then."""
    spec, dev = ctx.spec, topology.shaping_device(ctx.spec.topology.shaping)
    chosen: list[Runner] = [StatsCapture(ctx.scratch, spec.stats_interval_s, dev), flows]
    if spec.pages:
        chosen.append(WebServer(spec, ctx.procs))
    if spec.probes:
        chosen.append(RttProbes(spec.probes, ctx.procs, ctx.scratch))
    if spec.flent:
        chosen.append(FlentServers(ctx.procs, spec.flent, spec.topology.rtt))
    if spec.topology.clients > 1:
        chosen.append(HostCounters(spec.topology.clients, spec.stats_interval_s, ctx.procs, ctx.scratch))
    chosen.append(BulkFlows(spec.bulk, ctx.procs, ctx.scratch))
    return chosen


def run(spec: RunSpec, results: Path) -> GuestEvents:
    shutil.rmtree(SCRATCH, ignore_errors=True)
    SCRATCH.mkdir(parents=True)
    ctx = Context(spec, SCRATCH, Processes(SCRATCH))
    events = GuestEvents(format=EVENTS_FORMAT, clock_offset_ns=time.time_ns() - time.monotonic_ns(),
                         mode=spec.mode)
    try:
        events.tc_commands = build_topology(spec)
        events.tc_show = router_qdiscs()
        dev = topology.shaping_device(spec.topology.shaping)
        flows = FlowSampler(SCRATCH / "flows.jsonl", spec.stats_interval_s, dev,
                            enabled=spec.topology.kind == "confucius")
        tools = runners(ctx, flows)
        trace = TracePlayer(spec.trace, SCRATCH, spec.topology.shaping) if spec.trace else None
        events.t0_ns = now_ns()
        for tool in tools:
            tool.start()
        sessions = MODES[spec.mode if spec.pages or spec.mode == "flent" else "timed"](ctx, events, trace, flows)
        if trace:
            trace.stop()
        for tool in tools:
            tool.stop()
        for session in sessions:
            session.record(events)
        for tool in tools:
            tool.record(events)
        events.end_ns = now_ns()
    finally:
        ctx.procs.stop_all()
        try:
            events.write(SCRATCH / "events.json")
        finally:
            # One copy at the end: the results folder is 9p, where small writes are slow.
            shutil.copytree(SCRATCH, results, dirs_exist_ok=True)
    return events


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: python -m confucius.lab.guest SPEC.json", file=sys.stderr)
        return 2
    spec_path = Path(argv[0])
    try:
        spec = RunSpec.read(spec_path)
    except (OSError, ContractError) as err:
        print(f"not a run spec: {err}", file=sys.stderr)
        return 2
    run(spec, Path(os.environ.get("RESULTS", spec_path.parent)))
    log("done")
    return 0
