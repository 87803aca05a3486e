# SPDX-License-Identifier: MIT
"""When the RT flow runs and the pages load: the run's modes (episodes, continuous, timed;
the package's docstring says why episodes are the default), and Flent's tests instead of
both (flent). Each fills the run's events (pages, the measured span or the tests) and
returns the RT sessions it ran."""

from __future__ import annotations

import dataclasses
import time
from typing import Callable

from ..contract import GUEST_TIMING, GuestEvents, Measured, PageEvent, Warmup
from . import flent
from .base import Context, now_ns, wait_until
from .flows import FlowSampler
from .pages import load_page
from .rt import RtSession, Warm
from .trace import TracePlayer

DRAIN_S, IDLE_S = GUEST_TIMING.drain_s, GUEST_TIMING.idle_s


def tail(session: RtSession, since_ns: int, settle_s: float) -> tuple[int, bool]:
    """Keep the RT flow running until its frames have been on time for a while; returns
    the end of the load's window and whether the frames got calm by then."""
    deadline = since_ns + int(settle_s * 1e9)
    calm = wait_until(lambda: session.calm(since_ns), deadline)
    return now_ns(), calm


def earliest_load_ns(session: RtSession, warmup: Warmup, phase_s: float) -> int:
    """The earliest a load can follow the session's start: its warm-up's minimum, and two
    `hold` windows of rate log (RtSession.converged), then the load's phase."""
    return session.started_ns + int((max(warmup.min_s, 2 * warmup.hold_s) + phase_s) * 1e9)


def warmed_session(number: int, ctx: Context, flows: FlowSampler) -> tuple[RtSession, Warm]:
    """A fresh RT session, warmed up, for the load of page `number`. One that settled below
    its share of the link is stopped and replaced, at most `retries` times; the warm-up
    returned counts them all. Then the load's phase passes (PageSpec.phase_s)."""
    warmup, attempt = ctx.spec.warmup, 1
    phase_s = ctx.spec.pages[number].phase_s
    while True:
        session = RtSession(number, ctx.spec.rt, ctx.procs, ctx.scratch)
        session.start()
        flows.arm(earliest_load_ns(session, warmup, phase_s))
        warm = session.warm_up(warmup)
        if attempt > warmup.retries or not session.settled_low(warm, warmup.min_share):
            time.sleep(phase_s)
            return session, dataclasses.replace(warm, warmups=attempt)
        session.stop()
        flows.relax()
        time.sleep(IDLE_S)
        attempt += 1


def _note_warm_up(load: PageEvent, warm: Warm) -> None:
    load.warmup_s, load.converged, load.warmups = warm.warmup_s, warm.converged, warm.warmups
    load.rt_target_bps = warm.rt_target_bps


def episodes(ctx: Context, events: GuestEvents, trace: TracePlayer | None,
             flows: FlowSampler) -> list[RtSession]:
    spec = ctx.spec
    sessions = []
    previous_start = 0
    for number, page in enumerate(spec.pages):
        session, warm = warmed_session(number, ctx, flows)
        sessions.append(session)
        wait_until(lambda: False, previous_start + int(spec.web.interval_s * 1e9))
        trace_start = trace.play() if trace else None
        flows.record_load()
        load = load_page(spec, page, number, ctx.scratch)
        previous_start = load.started_ns
        _note_warm_up(load, warm)
        load.session, load.trace_start_ns = number, trace_start
        load.window_end_ns, load.calm = tail(session, load.ended_ns, spec.web.settle_s)
        flows.relax()
        events.pages.append(load)
        if trace:
            trace.stop()
        time.sleep(DRAIN_S)
        session.stop()
        time.sleep(IDLE_S)
    return sessions


def continuous(ctx: Context, events: GuestEvents, trace: TracePlayer | None,
               flows: FlowSampler) -> list[RtSession]:
    """Loads follow one another: each load's window ends where the next one starts, so the
    flows are sampled fast from the first load to the last one's tail."""
    spec, pages = ctx.spec, events.pages
    if trace:
        trace.play()
    session, warm = warmed_session(0, ctx, flows)
    previous_start, previous_end = 0, session.started_ns
    for number, page in enumerate(spec.pages):
        earliest = previous_start + int(spec.web.interval_s * 1e9)
        latest = max(earliest, previous_end + int(spec.web.settle_s * 1e9))
        wait_until(lambda: False, earliest)
        if number == 0:
            converged = warm.converged
        else:
            converged = wait_until(lambda: session.converged(previous_end, spec.warmup), latest)
        flows.record_load()
        load = load_page(spec, page, number, ctx.scratch)
        if number == 0:
            _note_warm_up(load, warm)
        load.session, load.converged = 0, converged
        load.rt_target_bps = session.targets_bps(load.started_ns - int(spec.warmup.hold_s * 1e9))
        if pages:
            pages[-1].window_end_ns = load.started_ns
        previous_start, previous_end = load.started_ns, load.ended_ns
        pages.append(load)
    if pages:
        pages[-1].window_end_ns, pages[-1].calm = tail(session, previous_end, spec.web.settle_s)
    flows.relax()
    time.sleep(DRAIN_S)
    session.stop()
    return [session]


def timed(ctx: Context, events: GuestEvents, trace: TracePlayer | None,
          flows: FlowSampler) -> list[RtSession]:
    """No pages: the RT flow warms up, then runs for the scenario's duration."""
    session = RtSession(0, ctx.spec.rt, ctx.procs, ctx.scratch)
    session.start()
    warm = session.warm_up(ctx.spec.warmup)
    measured_from = trace.play() if trace else now_ns()
    time.sleep(ctx.spec.duration_s)
    events.measured = Measured(from_ns=measured_from, to_ns=now_ns(), warmup_s=warm.warmup_s,
                               converged=warm.converged, rt_target_bps=warm.rt_target_bps)
    time.sleep(DRAIN_S)
    session.stop()
    return [session]


def flent_tests(ctx: Context, events: GuestEvents, trace: TracePlayer | None,
                flows: FlowSampler) -> list[RtSession]:
    """Flent's tests one after another, IDLE_S apart so that no qdisc still holds the last
    test's flows; no RT flow."""
    for number, test in enumerate(ctx.spec.flent.tests):
        if number:
            time.sleep(IDLE_S)
        events.flent.append(flent.run_test(ctx.spec.flent, test, ctx.scratch, ctx.spec.topology.kind, ctx.procs))
    return []


MODES: dict[str, Callable[[Context, GuestEvents, TracePlayer | None, FlowSampler], list[RtSession]]] = {
    "episodes": episodes, "continuous": continuous, "timed": timed, "flent": flent_tests}
