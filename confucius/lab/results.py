# SPDX-License-Identifier: MIT
"""A run's results folder read back: what the guest (guest/) wrote, as records for the database.

    run = read_run(Path("results/lab/demo/<run>"))
    run.pages[0].load.plt, run.sessions[0].flows[0].frames, run.qdisc_samples[:3], run.qdisc_flows[:3]

Every time is the guest's CLOCK_MONOTONIC in ns (rtflow's clock); the Web client's and
irtt's wall-clock times are moved onto it with the offset the guest recorded.

A measurement is *disturbed* when the RT sender could not run on time: its rate log has a
row every 50 ms, and a gap of more than DISTURBED_GAP_MS means the emulated machine did not
get the CPU (other work on the host) — frame delays then measure the host, not the
scheduler. Disturbed measurements are kept but marked invalid, and the matrix runs them again.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from confucius import rtflow
from confucius.web.results import PageLoad, ReportError, parse_report

from . import flent
from .contract import ContractError, FlentEvent, GuestEvents, Measured, PageEvent, PageSpec, RunSpec

DISTURBED_GAP_MS = 250.0


class ResultsError(ValueError):
    """A results folder that cannot be read, with what is missing or malformed."""


@dataclass
class RtFlowLog:
    session: int
    number: int
    label: str
    port: int
    frames: list[rtflow.Frame]
    rates: list[rtflow.RateSample]

    def max_gap_ms(self, start_ns: int, end_ns: int) -> float:
        """Longest time between consecutive rate-log rows inside [start_ns, end_ns]."""
        times = [r.time_ns for r in self.rates if start_ns <= r.time_ns <= end_ns]
        return max((b - a for a, b in zip(times, times[1:])), default=0) / 1e6


@dataclass
class Session:
    index: int
    started_ns: int
    stopped_ns: int
    flows: list[RtFlowLog]


@dataclass
class PageRecord:
    number: int
    key: str                 # the scenario's name for it (amazon, p0003, a file path)
    unit_key: str            # this page under this run's conditions (resume identity)
    page_id: str
    session: int
    started_ns: int          # when the runner started the client
    load_start_ns: int | None  # the client's own start (its first connection attempt)
    window_end_ns: int
    exit: int
    error: str | None
    load: PageLoad | None
    warmup_s: float | None
    converged: bool | None
    warmups: int | None      # RT flows warmed up before the load (a low one is replaced)
    calm: bool | None
    rt_target_bps: list[float | None]
    sender_max_gap_ms: float

    @property
    def valid(self) -> bool:
        return self.load is not None and self.sender_max_gap_ms <= DISTURBED_GAP_MS

    @property
    def invalid_reason(self) -> str | None:
        if self.load is None:
            return f"no report from web-client (exit {self.exit}): {self.error or ''}".strip()
        if self.sender_max_gap_ms > DISTURBED_GAP_MS:
            return f"disturbed: RT sender paused {self.sender_max_gap_ms:.0f} ms"
        return None

    @property
    def first_request_ns(self) -> int | None:
        requests = [o.request for o in self.load.objects if o.request is not None] if self.load else []
        if self.load_start_ns is None or not requests:
            return None
        return self.load_start_ns + round(min(requests) * 1e9)


@dataclass
class BulkFlow:
    number: int
    cca: str
    started_ns: int | None
    samples: list[tuple[int, float]]   # interval end (ns), bit/s
    bytes: int
    error: str | None


@dataclass
class FlentTest:
    """One Flent test of the run: its data file and summary (lab/flent.py), or why there is none."""
    number: int
    event: FlentEvent
    data_file: Path | None
    summary: flent.FlentSummary | None
    error: str | None
    plot: Path | None = None         # Flent's plot, drawn on the host (runner.measure)
    plot_error: str | None = None


@dataclass
class RunData:
    directory: Path
    spec: RunSpec
    events: GuestEvents
    sessions: list[Session]
    pages: list[PageRecord]
    qdisc_samples: list[tuple[int, list[dict]]]
    qdisc_flows: list[tuple[int, list[dict]]]  # Confucius's flows (rtnl.flow_xstats), in time order
    probes: list[tuple[int, float | None]]     # send time (ns), RTT ms (None: lost)
    bulk: list[BulkFlow]
    measured: Measured | None = None           # runs without pages: the measured span
    flent: list[FlentTest] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def rt_flows(self) -> list[RtFlowLog]:
        return [f for s in self.sessions for f in s.flows]

    @property
    def measured_gap_ms(self) -> float | None:
        if self.measured is None:
            return None
        return max((f.max_gap_ms(self.measured.from_ns, self.measured.to_ns) for f in self.rt_flows()),
                   default=0.0)


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


def read_samples(path: Path, key: str) -> list[tuple[int, list[dict]]]:
    """(time_ns, record[key]) of a sampler's JSONL file (qdisc.jsonl, flows.jsonl; the
    simulator writes the same), in time order (none if absent)."""
    if not path.is_file():
        return []
    samples = []
    for line in path.read_text().splitlines():
        try:
            record = json.loads(line)
        except ValueError:
            continue  # a sample cut short when the run ended
        samples.append((record["time_ns"], record[key]))
    return sorted(samples, key=lambda sample: sample[0])


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
        try:
            data = json.loads(path.read_text())
        except (OSError, ValueError) as err:
            flows.append(BulkFlow(number, bulk.cca, started.get(number), [], 0, f"no iperf3 report: {err}"))
            continue
        begin = started.get(number)
        samples = [(begin + round(i["sum"]["end"] * 1e9) if begin is not None else round(i["sum"]["end"] * 1e9),
                    i["sum"]["bits_per_second"]) for i in data.get("intervals", [])]
        received = data.get("end", {}).get("sum_received", {}).get("bytes", 0)
        error = data.get("error")
        # iperf3 reports a stop by signal as an error; that is how a run-long flow ends.
        if error and "interrupt" in error:
            error = None
        flows.append(BulkFlow(number, bulk.cca, begin, samples, received, error))
    return flows


def _flent_test(directory: Path, number: int, event: FlentEvent) -> FlentTest:
    if event.data_file is None:
        output = directory / event.log
        tail = output.read_text(errors="replace")[-1000:] if output.is_file() else ""
        return FlentTest(number, event, None, None, f"Flent wrote no data file (exit {event.exit}): {tail}")
    path = directory / event.data_file
    try:
        summary = flent.summarise(flent.read(path))
    except flent.FlentDataError as err:
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
    run = RunData(directory=directory, spec=spec, events=events, sessions=sessions, pages=pages,
                  qdisc_samples=read_samples(directory / "qdisc.jsonl", "qdiscs"),
                  qdisc_flows=read_samples(directory / "flows.jsonl", "flows"),
                  probes=_probes(directory / "irtt.json", offset),
                  bulk=_bulk(directory, spec, events), measured=events.measured,
                  flent=[_flent_test(directory, n, e) for n, e in enumerate(events.flent)])
    if spec.pages and len(pages) < len(spec.pages):
        run.notes.append(f"{len(spec.pages) - len(pages)} of {len(spec.pages)} pages were not loaded")
    if spec.flent and len(run.flent) < len(spec.flent.tests):
        run.notes.append(f"{len(spec.flent.tests) - len(run.flent)} of {len(spec.flent.tests)} Flent tests did not run")
    return run


def _spec_page(directory: Path, spec: RunSpec, entry: PageEvent) -> PageSpec:
    if not 0 <= entry.number < len(spec.pages):
        raise ResultsError(f"{directory}/events.json: pages: load {entry.number} is not in the spec's "
                           f"{len(spec.pages)} pages")
    return spec.pages[entry.number]

