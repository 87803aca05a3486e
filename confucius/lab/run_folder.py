# SPDX-License-Identifier: MIT
"""A run's results folder read back: what the guest (guest/) wrote, as the experiment's
records for the database (experiment/results.py's RunData), through the contract.

    run = read_run(Path("results/lab/demo/<run>"))
    run.pages[0].load.plt, run.sessions[0].flows[0].frames, run.qdisc_samples[:3], run.qdisc_flows[:3]

Every time is the guest's CLOCK_MONOTONIC in ns (rtflow's clock); the Web client's and
irtt's wall-clock times are moved onto it with the offset the guest recorded. A page's RT
sender that paused longer than results.DISTURBED_GAP_MS marks the page disturbed.
"""

from __future__ import annotations

import json
from pathlib import Path

from confucius import rtflow
from confucius.experiment.results import (BulkFlow, FlentTest, PageRecord, ResultsError, RtFlowLog, RunData,
                                          Session, read_samples)
from confucius.web.client_report import ReportError, parse_report

from . import flent_files
from .contract import SS_TIME_MARK, ContractError, FlentEvent, GuestEvents, PageEvent, PageSpec, RunSpec


def _json(path: Path, what: str):
    try:
        return json.loads(path.read_text())
    except FileNotFoundError:
        raise ResultsError(f"{path.parent}: {path.name} is missing ({what})") from None
    except ValueError as err:
        raise ResultsError(f"{path}: not JSON: {err}") from None


def _sessions(directory: Path, events: GuestEvents) -> list[Session]:
    sessions = []
    for s in events.sessions:
        flows = []
        for f in s.flows:
            try:
                frames = rtflow.read_frames(directory / f.frames)
                rates = rtflow.read_rates(directory / f.rates)
            except rtflow.RtflowError as err:
                raise ResultsError(str(err)) from None
            flows.append(RtFlowLog(s.index, f.flow, f.label, f.port, frames, rates))
        sessions.append(Session(s.index, s.started_ns, s.stopped_ns, flows))
    return sessions


def _page(directory: Path, entry: PageEvent, spec_page: PageSpec, offset_ns: int, sessions: list[Session],
          hold_s: float) -> PageRecord:
    where = f"{directory}/events.json: pages[{entry.number}]"
    if entry.session is None or entry.window_end_ns is None:
        raise ResultsError(f"{where}: the load has no {'session' if entry.session is None else 'window_end_ns'}")
    load, error = None, None
    report = directory / entry.report
    if report.is_file():
        try:
            load = parse_report(report.read_text())
        except ReportError as err:
            error = str(err)
    else:
        error = entry.stderr or "no report"
    load_start = round(load.start_unix * 1e9) - offset_ns if load else None
    session = next((s for s in sessions if s.index == entry.session), None)
    if session is None:
        raise ResultsError(f"{where}.session: no session {entry.session}")
    # The page's window, and the hold before it in which the flow had to be converged.
    window = (entry.started_ns - int(hold_s * 1e9), entry.window_end_ns)
    gap = max((f.max_gap_ms(*window) for f in session.flows), default=0.0)
    return PageRecord(
        number=entry.number, key=spec_page.key, unit_key=spec_page.unit_key, page_id=entry.id,
        session=entry.session, started_ns=entry.started_ns, load_start_ns=load_start,
        window_end_ns=entry.window_end_ns, exit=entry.exit, error=error or (load.error if load else None),
        load=load, warmup_s=entry.warmup_s, converged=entry.converged, warmups=entry.warmups,
        calm=entry.calm, rt_target_bps=entry.rt_target_bps, sender_max_gap_ms=gap)


def _probes(path: Path, offset_ns: int) -> list[tuple[int, float | None]]:
    if not path.is_file():
        return []
    data = _json(path, "irtt's output")
    probes = []
    for trip in data.get("round_trips", []):
        sent = trip["timestamps"]["client"]["send"]["wall"] - offset_ns
        lost = trip.get("lost", "false") != "false"
        rtt = trip.get("delay", {}).get("rtt")
        probes.append((sent, None if lost or rtt is None else rtt / 1e6))
    return probes


def _bulk(directory: Path, spec: RunSpec, events: GuestEvents) -> list[BulkFlow]:
    flows = []
    started = {int(k): v for k, v in events.bulk_started_ns.items()}
    for number, bulk in enumerate(spec.bulk):
        path = directory / f"bulk-{number}.json"
        rtts = read_sender_rtts(directory / f"bulk-{number}-ss.txt")
        try:
            data = json.loads(path.read_text())
        except (OSError, ValueError) as err:
            flows.append(BulkFlow(number, bulk.cca, started.get(number), [], 0, f"no iperf3 report: {err}", rtts))
            continue
        begin = started.get(number)
        samples = [(begin + round(i["sum"]["end"] * 1e9) if begin is not None else round(i["sum"]["end"] * 1e9),
                    i["sum"]["bits_per_second"]) for i in data.get("intervals", [])]
        received = data.get("end", {}).get("sum_received", {}).get("bytes", 0)
        error = data.get("error")
        # iperf3 reports a stop by signal as an error; that is how a run-long flow ends.
        if error and "interrupt" in error:
            error = None
        flows.append(BulkFlow(number, bulk.cca, begin, samples, received, error, rtts))
    return flows


def read_sender_rtts(path: Path) -> list[tuple[int, float]]:
    """A bulk flow's own RTT samples from its sender's sockets (guest/traffic.py BulkFlows);
    none from a run older than that file."""
    if not path.is_file():
        return []
    return sender_rtts(path.read_text(), str(path))


def sender_rtts(text: str, where: str) -> list[tuple[int, float]]:
    """(time ns, smoothed RTT ms) per sample of `ss -tin` on an iperf3 port's server side:
    of its sockets, the sender is the one that got more acknowledged than it received (the
    control connection receives the test's parameters and sends a few state bytes), the
    one with the most acknowledged if there are several; a sample without one is skipped."""
    samples: list[tuple[int, float]] = []
    at, after_socket, best = None, False, None
    for number, line in enumerate(text.splitlines(), 1):
        if line.startswith(SS_TIME_MARK):
            if best is not None:
                samples.append((at, best[1]))
            at, after_socket, best = _sample_time(line, at, f"{where}:{number}"), False, None
        elif at is None and line.strip():
            raise ResultsError(f"{where}:{number}: a socket before the first '{SS_TIME_MARK}' line")
        elif line[:1].isspace() and line.strip():
            if not after_socket:
                raise ResultsError(f"{where}:{number}: tcp_info without its socket line before it")
            sender = _sender(line, f"{where}:{number}")
            if sender is not None and (best is None or sender[0] > best[0]):
                best = sender
            after_socket = False
        elif line.strip():
            if len(line.split()) != 4:
                raise ResultsError(f"{where}:{number}: not a socket line of `ss -tin -H` "
                                   f"(Recv-Q Send-Q local peer): {line!r}")
            after_socket = True
    if best is not None:
        samples.append((at, best[1]))
    return samples


def _sample_time(line: str, previous: int | None, where: str) -> int:
    try:
        at = int(line.removeprefix(SS_TIME_MARK))
    except ValueError:
        raise ResultsError(f"{where}: the time of a sample is not integer ns: {line!r}") from None
    if previous is not None and at <= previous:
        raise ResultsError(f"{where}: the sample's time {at} does not follow the previous one's {previous}")
    return at


def _sender(line: str, where: str) -> tuple[int, float] | None:
    """(bytes acknowledged, smoothed RTT ms) of a socket's tcp_info line, if it is a sender."""
    info = dict(field.split(":", 1) for field in line.split() if ":" in field)   # the bare words (cubic) left out
    try:
        acked, received = int(info.get("bytes_acked", 0)), int(info.get("bytes_received", 0))
        rtt = float(info["rtt"].split("/")[0]) if "rtt" in info else None
    except ValueError:
        raise ResultsError(f"{where}: tcp_info's rtt, bytes_acked or bytes_received is not a number: {line!r}") from None
    return (acked, rtt) if rtt is not None and acked > received else None


def _flent_test(directory: Path, number: int, event: FlentEvent) -> FlentTest:
    if event.data_file is None:
        output = directory / event.log
        tail = output.read_text(errors="replace")[-1000:] if output.is_file() else ""
        return FlentTest(number, event, None, None, f"Flent wrote no data file (exit {event.exit}): {tail}")
    path = directory / event.data_file
    try:
        summary = flent_files.summarise_file(path)
    except flent_files.FlentDataError as err:
        return FlentTest(number, event, path, None, str(err))
    error = f"Flent exited {event.exit}" if event.exit != 0 else None
    return FlentTest(number, event, path, summary, error)


def _check_bottleneck(directory: Path, spec: RunSpec, events: GuestEvents) -> None:
    """The guest installs the bottleneck from the spec's record (the runs row stores the
    same); what it says it ran must be that record, or the row would not say what ran."""
    if events.tc_commands != spec.tc_commands:
        raise ResultsError(f"{directory}: the guest ran {events.tc_commands!r} at the bottleneck, not the run's "
                           f"record {spec.tc_commands!r}")


def _contract(directory: Path, name: str, kind, what: str):
    """spec.json or events.json, checked against the contract (contract.py)."""
    path = directory / name
    if not path.is_file():
        raise ResultsError(f"{directory}: {name} is missing ({what})")
    try:
        return kind.read(path)
    except ContractError as err:
        raise ResultsError(str(err)) from None


def read_run(directory) -> RunData:
    """Read a run's results folder (spec.json from the host, the rest from the guest)."""
    directory = Path(directory)
    spec = _contract(directory, "spec.json", RunSpec, "the run's spec, written by the runner")
    events = _contract(directory, "events.json", GuestEvents, "the guest's timeline; did the run start?")
    _check_bottleneck(directory, spec, events)
    offset = events.clock_offset_ns
    sessions = _sessions(directory, events)
    pages = [_page(directory, entry, _spec_page(directory, spec, entry), offset, sessions, spec.warmup.hold_s)
             for entry in events.pages]
    run = RunData(directory=directory, sessions=sessions, pages=pages,
                  qdisc_samples=read_samples(directory / "qdisc.jsonl", "qdiscs"),
                  qdisc_flows=read_samples(directory / "flows.jsonl", "flows"),
                  probes=_probes(directory / "irtt.json", offset),
                  bulk=_bulk(directory, spec, events), measured=events.measured,
                  flent=[_flent_test(directory, n, e) for n, e in enumerate(events.flent)],
                  host_bytes=_host_bytes(directory / "hosts.jsonl", spec.topology.clients))
    if spec.pages and len(pages) < len(spec.pages):
        run.notes.append(f"{len(spec.pages) - len(pages)} of {len(spec.pages)} pages were not loaded")
    if spec.flent and len(run.flent) < len(spec.flent.tests):
        run.notes.append(f"{len(spec.flent.tests) - len(run.flent)} of {len(spec.flent.tests)} Flent tests did not run")
    return run


def _host_bytes(path: Path, clients: int) -> list[tuple[int, list[int]]]:
    """Each client host's received bytes over time (guest/hosts.py), with more than one host."""
    samples = read_samples(path, "rx_bytes")
    for at, counts in samples:
        if len(counts) != clients or not all(isinstance(c, int) and c >= 0 for c in counts):
            raise ResultsError(f"{path}: the sample at {at} ns has {counts!r}, not {clients} byte counts")
    return samples


def _spec_page(directory: Path, spec: RunSpec, entry: PageEvent) -> PageSpec:
    if not 0 <= entry.number < len(spec.pages):
        raise ResultsError(f"{directory}/events.json: pages: load {entry.number} is not in the spec's "
                           f"{len(spec.pages)} pages")
    return spec.pages[entry.number]

