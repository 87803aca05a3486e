# SPDX-License-Identifier: MIT
"""Flent's data files (`*.flent.gz`, gzipped JSON) read back on the host: the summary that
the database stores and the report prints, and Flent's own plots.

    summary = summarise_file(path)        # FlentSummary: latency under load, bulk RTT, throughput per direction

The figures, in Flent's terms:
- **latency under load**: the round trips of ICMP ping (`Ping (ms) ICMP`; rrul, rrul_be,
  tcp_nup) or the one-way delay of the VoIP stream from client to server (`VoIP::delay`,
  irtt's send delay of each packet; voip), every sample Flent recorded (its raw values)
  inside the load window: from Flent's delay (5 s, when the TCP loads start) for the
  test's length, as Flent's own CDF plots cut it. Median and 99th percentile by nearest
  rank (`metrics.nearest_rank`), as the lab's other delay figures;
- **UDP latency**: the same for irtt's (or netperf UDP_RR's) round trips (`Ping (ms) UDP *`);
- **throughput per direction**: Flent's `TCP download sum` and `TCP upload sum` (Mbit/s):
  each TCP flow's throughput as netperf reports it when the flow ends (its bytes over its
  elapsed time, Flent's MEAN_VALUE of the flow, which its combination plots use), summed
  over the flows of that direction; None where the test has no such flows. Not the mean of
  netperf's interim samples: for uploads those count what the sender wrote into its socket
  buffer, and came out up to 1 Mbit/s above what arrived (19.71 against 18.65 Mbit/s,
  rrul under confucius, 30 s);
- **bulk RTT**: each bulk TCP flow's own round trip as its sender's kernel estimates it
  (tcp_info's smoothed RTT, `rtt:` in `ss -ti`), sampled every step inside the load window:
  the uploads' from Flent's socket stats in the data file (`<flow>::tcp_rtt`, the client's
  netperf sockets), the downloads' from the server's sockets sampled beside the test
  (`ss-server.txt` beside the data file, guest/flent.py; the senders are the sockets that
  had more bytes acknowledged than received). Per flow its median and 95th percentile; per
  direction the same over all its flows' samples. None where the test has no such flows
  or the samples are missing (runs before the sampling).

rtt_fair's tests load several servers, one RTT each (`servers.txt` beside the data file,
guest/flent.py: an address and its RTT in ms per line). Per server (`ServerShare`): its
download's and upload's throughput (the flow's MEAN_VALUE, as above), their own RTT (the
download's from the server's sockets on that address, the upload's from Flent's socket
stats of the flow to it) and its ping's median; the test's latency is every server's ping
at once (`Ping (ms) ICMP*`), which mixes their RTTs and stands only as the test's row.
"""

from __future__ import annotations

import gzip
import json
import math
import re
import subprocess
from dataclasses import asdict, dataclass
from datetime import datetime, timezone
from pathlib import Path

from confucius import metrics

from .contract import FLENT, GUEST_TIMING, SS_TIME_MARK, Flent

# The VM's timeout per second of a test's own time: generous, as the guest's tools poll
# (under uml the timeout counts the guest's seconds, under qemu the host's).
TIMEOUT_PER_TEST_S = 4.0
PLOT_TIMEOUT_S = 120.0
ICMP = "Ping (ms) ICMP"
# voip's irtt stream: every packet is a raw value of "VoIP"; Flent's VoIP::delay is its
# one-way delay from client to server (irtt's send delay, `owd_up`), sampled on Flent's grid.
VOIP, VOIP_DELAY, VOIP_KEY = "VoIP", "VoIP::delay", "owd_up"
UDP_PREFIX = "Ping (ms) UDP"
DOWNLOAD, UPLOAD = "TCP download sum", "TCP upload sum"
SERVER_SOCKETS = "ss-server.txt"        # guest/flent.py's SERVER_SOCKETS
SERVERS = "servers.txt"                 # guest/flent.py's SERVERS
SS_TIME = re.compile(rf"{SS_TIME_MARK}(\d+(?:\.\d+)?)$")
SS_SOCKET = re.compile(r"\d+\s+\d+\s+(\S+:\d+)\s+(\S+:\d+)\s*$")   # Recv-Q Send-Q local peer
SS_RTT, SS_ACKED, SS_RECEIVED = (re.compile(rf"\b{name}:(\d+(?:\.\d+)?)")
                                  for name in ("rtt", "bytes_acked", "bytes_received"))


class FlentDataError(ValueError):
    """A file that is not a Flent data file, or lacks what the summary needs."""


@dataclass(frozen=True)
class FlowRtt:
    """One bulk flow's own RTT over the load window (ms)."""
    direction: str                   # download or upload
    flow: str                        # Flent's series (uploads) or the sender's socket (downloads)
    samples: int
    median_ms: float
    p95_ms: float


@dataclass(frozen=True)
class ServerShare:
    """One of rtt_fair's servers: what its flows carried and their own RTT (ms)."""
    address: str
    rtt_ms: float                    # the RTT the lab gives it
    download_mbps: float | None
    upload_mbps: float | None
    down_rtt_median_ms: float | None
    down_rtt_p95_ms: float | None
    up_rtt_median_ms: float | None
    up_rtt_p95_ms: float | None
    ping_samples: int
    ping_median_ms: float | None


@dataclass(frozen=True)
class FlentSummary:
    test: str
    latency: str                     # the series of latency under load (ICMP or VoIP::delay)
    latency_samples: int
    latency_median_ms: float
    latency_p99_ms: float
    udp_samples: int
    udp_median_ms: float | None
    udp_p99_ms: float | None
    download_mbps: float | None
    upload_mbps: float | None
    window_s: tuple[float, float]    # from Flent's start
    down_rtt_median_ms: float | None = None   # bulk RTT per direction, over its flows' samples
    down_rtt_p95_ms: float | None = None
    up_rtt_median_ms: float | None = None
    up_rtt_p95_ms: float | None = None
    flows: tuple[FlowRtt, ...] = ()
    servers: tuple[ServerShare, ...] = ()    # rtt_fair's, in the order of their RTTs

    def to_dict(self) -> dict:
        return asdict(self)


def read(path: Path) -> dict:
    try:
        with gzip.open(path, "rt") as f:
            data = json.load(f)
    except (OSError, ValueError, EOFError) as err:
        raise FlentDataError(f"{path}: not a Flent data file: {err}") from None
    for key in ("metadata", "x_values", "results", "raw_values"):
        if key not in data:
            raise FlentDataError(f"{path}: not a Flent data file: no {key!r}")
    return data


def _t0(metadata: dict) -> float:
    """Flent's start (its T0, UTC) as a Unix time."""
    text = metadata.get("T0")
    try:
        return datetime.fromisoformat(text.rstrip("Z")).replace(tzinfo=timezone.utc).timestamp()
    except (AttributeError, ValueError):
        raise FlentDataError(f"metadata.T0: expected Flent's start time, got {text!r}") from None


def load_window(metadata: dict) -> tuple[float, float]:
    """Where the test's loads run, in s from its start. Flent does not record its delay, but
    its tests that delay their loads run TOTAL_LENGTH = LENGTH + 2 DELAY (the loads from
    DELAY for LENGTH); the others (voip) run LENGTH, all of it measured."""
    length, total = metadata.get("LENGTH"), metadata.get("TOTAL_LENGTH")
    if not isinstance(length, (int, float)) or not isinstance(total, (int, float)) or total < length:
        raise FlentDataError(f"metadata: expected LENGTH and TOTAL_LENGTH >= LENGTH, got {length!r} and {total!r}")
    delay = (total - length) / 2
    return float(delay), float(delay + length)


def _raw_in(data: dict, series: str, window: tuple[float, float], key: str = "val") -> list[float]:
    """Every sample of `series` (its `key`) inside the window; lost packets have none."""
    t0 = _t0(data["metadata"])
    low, high = window
    return [point[key] for point in data["raw_values"].get(series, [])
            if isinstance(point.get(key), (int, float)) and "t" in point and low <= point["t"] - t0 <= high]


def _flows_total(data: dict, series: str) -> float | None:
    """Flent's total of a direction's TCP flows (the sum series' MEAN_VALUE), if it has any."""
    value = data["metadata"].get("SERIES_META", {}).get(series, {}).get("MEAN_VALUE")
    return float(value) if isinstance(value, (int, float)) and math.isfinite(value) else None


def upload_rtts(data: dict, window: tuple[float, float]) -> dict[str, list[float]]:
    """Flent's socket stats: each upload's tcp_rtt samples inside the window, by its series."""
    t0 = _t0(data["metadata"])
    low, high = window
    found: dict[str, list[float]] = {}
    for series, points in sorted(data["raw_values"].items()):
        rtts = [p["tcp_rtt"] for p in points if isinstance(p.get("tcp_rtt"), (int, float)) and "t" in p
                and low <= p["t"] - t0 <= high]
        if rtts:
            found[series] = rtts
    return found


def download_rtts(text: str, t0: float, window: tuple[float, float]) -> dict[str, list[float]]:
    """The server's sockets as guest/flent.py sampled them (a `Time: <Unix s>` line, then
    `ss -tin -H`'s two lines per socket): each download sender's RTT samples inside the
    window, by its socket (`local peer`)."""
    low, high = window
    found: dict[str, list[float]] = {}
    at = socket = None
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        if time := SS_TIME.match(line):
            at, socket = float(time.group(1)) - t0, None
        elif not line[0].isspace() and (address := SS_SOCKET.match(line)) and at is not None:
            socket = f"{address.group(1)} {address.group(2)}"
        elif line[0].isspace() and socket is not None:
            rtt, acked, received = (_ss_field(pattern, line) for pattern in (SS_RTT, SS_ACKED, SS_RECEIVED))
            if rtt is not None and (acked or 0) > (received or 0) and low <= at <= high:
                found.setdefault(socket, []).append(rtt)
            socket = None
        else:
            raise FlentDataError(f"{SERVER_SOCKETS}:{number}: expected a time, a socket or its details, "
                                 f"got {line[:80]!r}")
    return found


def _ss_field(pattern: re.Pattern, line: str) -> float | None:
    match = pattern.search(line)
    return float(match.group(1)) if match else None


def _flow_rtts(direction: str, by_flow: dict[str, list[float]]) -> list[FlowRtt]:
    return [FlowRtt(direction, flow, len(rtts), metrics.nearest_rank(rtts, 50), metrics.nearest_rank(rtts, 95))
            for flow, rtts in by_flow.items()]


def _pooled(by_flow: dict[str, list[float]], percent: float) -> float | None:
    every = [rtt for rtts in by_flow.values() for rtt in rtts]
    return metrics.nearest_rank(every, percent) if every else None


def read_servers(text: str) -> dict[str, float]:
    """servers.txt: each rtt_fair server's address and RTT (ms), in order."""
    servers = {}
    for number, line in enumerate(text.splitlines(), 1):
        words = line.split()
        try:
            address, rtt = words
            servers[address] = float(rtt)
        except ValueError:
            raise FlentDataError(f"{SERVERS}:{number}: expected an address and its RTT in ms, "
                                 f"got {line[:80]!r}") from None
    return servers


def summarise_file(path: Path) -> FlentSummary:
    """`summarise` of a data file, with the server's sockets and rtt_fair's servers beside
    it if there are."""
    sockets, servers = path.with_name(SERVER_SOCKETS), path.with_name(SERVERS)
    return summarise(read(path), sockets.read_text() if sockets.is_file() else None,
                     read_servers(servers.read_text()) if servers.is_file() else None)


def _of_server(by_flow: dict[str, list[float]], address: str, named) -> dict[str, list[float]]:
    return {flow: rtts for flow, rtts in by_flow.items() if named(flow, address)}


def _download_of(socket: str, address: str) -> bool:
    return socket.split(":")[0] == address           # the sender's local address


def _series_of(series: str, address: str) -> bool:
    return series.endswith(f" {address}")            # rtt_fair.inc names each flow after its host


def server_shares(data: dict, servers: dict[str, float], window: tuple[float, float],
                  down: dict[str, list[float]], up: dict[str, list[float]]) -> tuple[ServerShare, ...]:
    """Each rtt_fair server's share (module docstring), from the test's series and the bulk
    flows' RTTs by flow (`download_rtts`, `upload_rtts`)."""
    shares = []
    for address, rtt in servers.items():
        flows = {direction: [name for name in data["raw_values"] if name.startswith(f"TCP {direction} ")
                             and _series_of(name, address)] for direction in ("download", "upload")}
        pings = [v for name in sorted(data["raw_values"]) if name.startswith(ICMP) and _series_of(name, address)
                 for v in _raw_in(data, name, window)]
        its_down, its_up = _of_server(down, address, _download_of), _of_server(up, address, _series_of)
        shares.append(ServerShare(
            address=address, rtt_ms=rtt, download_mbps=_flows_sum(data, flows["download"]),
            upload_mbps=_flows_sum(data, flows["upload"]),
            down_rtt_median_ms=_pooled(its_down, 50), down_rtt_p95_ms=_pooled(its_down, 95),
            up_rtt_median_ms=_pooled(its_up, 50), up_rtt_p95_ms=_pooled(its_up, 95),
            ping_samples=len(pings), ping_median_ms=metrics.nearest_rank(pings, 50) if pings else None))
    return tuple(shares)


def _flows_sum(data: dict, series: list[str]) -> float | None:
    totals = [_flows_total(data, name) for name in series]
    return sum(totals) if totals and None not in totals else None


def summarise(data: dict, server_sockets: str | None = None, servers: dict[str, float] | None = None) -> FlentSummary:
    """Latency under load, bulk RTT and throughput per direction of one Flent test (module
    docstring); `server_sockets` is the text of its ss-server.txt, if there is one, and
    `servers` rtt_fair's servers (`read_servers`), if it has them."""
    metadata = data["metadata"]
    test = metadata.get("NAME", "?")
    window = load_window(metadata)
    voip = VOIP in data["raw_values"]
    if voip:
        latency, delays = VOIP_DELAY, _raw_in(data, VOIP, window, VOIP_KEY)
    elif ICMP not in data["raw_values"]:    # rtt_fair's: one ping per server
        latency = f"{ICMP} *"
        delays = [v for name in sorted(data["raw_values"]) if name.startswith(ICMP) for v in _raw_in(data, name, window)]
    else:
        latency, delays = ICMP, _raw_in(data, ICMP, window)
    if not delays:
        raise FlentDataError(f"{test}: no {latency} samples between {window[0]:g} and {window[1]:g} s")
    udp = [v for name in sorted(data["raw_values"]) if name.startswith(UDP_PREFIX)
           for v in _raw_in(data, name, window)]
    up = upload_rtts(data, window)
    down = download_rtts(server_sockets, _t0(metadata), window) if server_sockets is not None else {}
    return FlentSummary(
        test=test, latency=latency, latency_samples=len(delays),
        latency_median_ms=metrics.nearest_rank(delays, 50), latency_p99_ms=metrics.nearest_rank(delays, 99),
        udp_samples=len(udp), udp_median_ms=metrics.nearest_rank(udp, 50) if udp else None,
        udp_p99_ms=metrics.nearest_rank(udp, 99) if udp else None,
        download_mbps=_flows_total(data, DOWNLOAD), upload_mbps=_flows_total(data, UPLOAD), window_s=window,
        down_rtt_median_ms=_pooled(down, 50), down_rtt_p95_ms=_pooled(down, 95),
        up_rtt_median_ms=_pooled(up, 50), up_rtt_p95_ms=_pooled(up, 95),
        flows=(*_flow_rtts("download", down), *_flow_rtts("upload", up)),
        servers=server_shares(data, servers, window, down, up) if servers else ())


def plot(data_file: Path) -> tuple[Path | None, str | None]:
    """Flent's own plot of a data file, beside it (PNG, through matplotlib): the test's
    default plot (rrul's and rrul_be's overview of download, upload and latency; tcp_nup's
    totals; voip's delay and jitter). Returns the plot, or None and Flent's complaint."""
    out = data_file.with_name(data_file.name.removesuffix(".flent.gz") + ".png")
    try:
        done = subprocess.run([str(FLENT), "-i", str(data_file), "-f", "plot", "-o", str(out)],
                              capture_output=True, text=True, timeout=PLOT_TIMEOUT_S)
    except (OSError, subprocess.TimeoutExpired) as err:
        return None, f"flent plot: {err}"
    if done.returncode != 0 or not out.is_file():
        return None, f"flent plot: exit {done.returncode}: {(done.stderr or done.stdout).strip()[-500:]}"
    return out, None


def allowance_per_test_s(flent: Flent) -> float:
    """The time one test of a run may take (with the guest's pause between tests)."""
    return TIMEOUT_PER_TEST_S * (GUEST_TIMING.flent_test_budget_s(flent) + 1)
