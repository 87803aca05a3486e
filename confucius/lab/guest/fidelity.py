# SPDX-License-Identifier: MIT
"""Shaping fidelity: does the bottleneck let packets out at its rate, window by window?

Run inside a lab guest (either engine). A UDP sender in `srv` offers 1.5 times the
bottleneck's rate in 1 ms slices, so the qdisc's queue never empties and a shaper that
keeps its rate sends one full-size packet every 1514 B at the rate, never more. A
receiver in `cli` takes the kernel's receive timestamp of each datagram; the report gives
the gaps between packets and the highest rate over tumbling 5 ms windows, both relative to
the configured rate. A shaper whose timer fires late, or a clock that stands still while
packets are dequeued, shows as short gaps and windows above the rate.

    python -m confucius.lab.guest.fidelity --qdisc 'pfifo limit 1000' --rate 20mbit
    python -m confucius.lab.guest.fidelity --qdisc 'confucius bandwidth 20mbit' --rate 20mbit --own
"""

from __future__ import annotations

import argparse
import json
import socket
import struct
import subprocess
import sys
import time
from collections import Counter

from confucius import metrics
from confucius.units import parse_rate, parse_time

from .. import topology

PORT = 9000
PAYLOAD = 1472             # a 1500-byte IP packet
WIRE_BYTES = PAYLOAD + 42  # what the qdisc counts: UDP, IP and Ethernet headers
OFFERED = 1.5              # offered load, as a multiple of the bottleneck rate
SLICE_S = 0.001
WINDOW_S = 0.005
SKIP_S = 0.5               # the start: queue filling, the shaper's bucket full
SHORT_GAP_S = 50e-6
QUIET_S = 1.0              # the receiver stops this long after the last datagram
# Linux's value on x86-64 and most architectures; Python's socket module names it from 3.12 on.
SO_TIMESTAMPNS = getattr(socket, "SO_TIMESTAMPNS", 35)


def send(rate_bps: float, duration_s: float, period_s: float) -> None:
    """Offer OFFERED x rate to the client for duration_s, one slice's packets at a time;
    with a period, only in the first half of each (on-off traffic lets the queue empty
    and a shaper's bucket fill, the case where a shaper may burst)."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.connect((topology.CLIENT_ADDRESS, PORT))
    payload = bytes(PAYLOAD)
    per_slice = rate_bps * OFFERED * SLICE_S / 8 / WIRE_BYTES
    start = time.monotonic()
    owed = 0.0
    while (now := time.monotonic()) - start < duration_s:
        if period_s == 0 or (now - start) % period_s < period_s / 2:
            owed += per_slice
        while owed >= 1:
            try:
                sock.send(payload)
            except OSError:  # ENOBUFS: the qdisc is full, as intended
                pass
            owed -= 1
        # Sleeps, never spins: in virtual time a spinning process stops the clock.
        time.sleep(max(0.0, SLICE_S - (time.monotonic() - now)))


def receive() -> None:
    """Print the kernel receive time (ns) of each datagram until QUIET_S without one."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 8 << 20)
    sock.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
    sock.bind(("0.0.0.0", PORT))
    print("ready", flush=True)
    sock.settimeout(30.0)  # the first datagram: topology and sender start
    stamps = []
    try:
        while True:
            _, ancillary, _, _ = sock.recvmsg(PAYLOAD, 64)
            for level, kind, data in ancillary:
                if level == socket.SOL_SOCKET and kind == SO_TIMESTAMPNS:
                    seconds, nanoseconds = struct.unpack("qq", data[:16])
                    stamps.append(seconds * 1_000_000_000 + nanoseconds)
            sock.settimeout(QUIET_S)
    except socket.timeout:
        pass
    json.dump(stamps, sys.stdout)


def analyse(stamps_ns: list[int], rate_bps: float) -> dict:
    """Gaps and 5 ms window rates of the arrivals after SKIP_S, against rate_bps."""
    if len(stamps_ns) < 2:
        raise ValueError(f"only {len(stamps_ns)} datagrams arrived")
    first = stamps_ns[0]
    times = [(t - first) / 1e9 for t in stamps_ns if (t - first) / 1e9 >= SKIP_S]
    gaps = [b - a for a, b in zip(times, times[1:])]
    expected_gap = WIRE_BYTES * 8 / rate_bps
    windows = Counter(int((t - times[0]) / WINDOW_S) for t in times)
    # Every window up to the last, which is cut short; an empty one counts as 0.
    window_bps = [windows.get(index, 0) * WIRE_BYTES * 8 / WINDOW_S for index in range(max(windows))]
    span = times[-1] - times[0]
    return {
        "packets": len(times), "rate_bps": rate_bps,
        "mean_bps": (len(times) - 1) * WIRE_BYTES * 8 / span if span > 0 else 0.0,
        "max_window_bps": max(window_bps), "min_window_bps": min(window_bps),
        "max_window_ratio": max(window_bps) / rate_bps,
        "expected_gap_us": expected_gap * 1e6,
        "median_gap_us": metrics.nearest_rank(gaps, 50) * 1e6, "p1_gap_us": metrics.nearest_rank(gaps, 1) * 1e6,
        "short_gap_share": sum(g < SHORT_GAP_S for g in gaps) / len(gaps),
    }


def measure(qdisc: str, rate: str, own: bool, duration_s: float, period_s: float = 0.0) -> dict:
    """Build the topology, run the flow through it and analyse what arrived."""
    rate_bps = parse_rate(rate)
    topology.Topology(qdisc=qdisc, rate=None if own else rate).up()
    module = [sys.executable, "-m", "confucius.lab.guest.fidelity"]
    receiver = subprocess.Popen(["ip", "netns", "exec", topology.CLIENT, *module, "receive"],
                                stdout=subprocess.PIPE, text=True)
    try:
        if receiver.stdout.readline().strip() != "ready":
            raise RuntimeError("the receiver did not start (its error is above)")
        subprocess.run(["ip", "netns", "exec", topology.SERVER, *module, "send", str(rate_bps),
                        str(duration_s), str(period_s)], check=True)
        stamps = json.loads(receiver.stdout.read())
    finally:
        receiver.wait()
        topology.down()
    return {"qdisc": qdisc, "own": own, "period_s": period_s, **analyse(stamps, rate_bps)}


def main(argv: list[str] | None = None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["send"]:
        send(float(argv[1]), float(argv[2]), float(argv[3]))
        return
    if argv[:1] == ["receive"]:
        receive()
        return
    parser = argparse.ArgumentParser(prog="python -m confucius.lab.guest.fidelity", description=__doc__.split("\n\n")[0])
    parser.add_argument("--qdisc", required=True, help="qdisc under test (tc spec)")
    parser.add_argument("--rate", required=True, help="bottleneck rate, e.g. 20mbit")
    parser.add_argument("--own", action="store_true", help="the qdisc shapes by itself (no HTB)")
    parser.add_argument("--duration", default="3s", help="how long the sender offers traffic")
    parser.add_argument("--period", default="0s", help="on-off traffic: on for the first half of each period")
    args = parser.parse_args(argv)
    print(json.dumps(measure(args.qdisc, args.rate, args.own, parse_time(args.duration),
                             parse_time(args.period))))


if __name__ == "__main__":
    main()
