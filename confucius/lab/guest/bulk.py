# SPDX-License-Identifier: MIT
"""Long-lived TCP bulk flows, one socket per flow, each with its own congestion control:
the guest's traffic for per-CCA experiments.

    python -m confucius.lab.guest.bulk receive --port 6000 --flows 30 --duration 30 --out rx.json
    python -m confucius.lab.guest.bulk send --address 198.19.0.2 --port 6000 --cca reno,bbr --duration 30

Why not iperf3 per flow: iperf3 polls (pselect6 on an always-writable socket plus
clock_gettime), and in UML's virtual time a poller only advances as fast as the host runs
it (vm/README.md, "Hazards of virtual time"); thirty of them would make a 30 s run take
many minutes. Here one sender and one receiver wait in epoll: the sender writes until each
socket's buffer is full and sleeps until the kernel frees room, the receiver sleeps until
data arrives or the next sample is due. The TCP is the kernel's, as iperf3's would be.
Flow f uses destination port `port + f`, which is what the bottleneck's tc filters match.
"""

from __future__ import annotations

import argparse
import json
import select
import socket
import time

CHUNK = 1 << 16
NS = 1_000_000_000


def _deadline(duration: float) -> int:
    return time.monotonic_ns() + round(duration * NS)


def _listeners(port: int, flows: int) -> list[socket.socket]:
    listeners = []
    for number in range(flows):
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(("0.0.0.0", port + number))
        sock.listen(1)
        sock.setblocking(False)
        listeners.append(sock)
    return listeners


def receive(port: int, flows: int, duration: float, interval: float, out: str) -> None:
    """Accept one connection per port, read everything, and write each flow's byte count
    at every sample time (guest CLOCK_MONOTONIC ns) to `out` as JSON."""
    poller = select.epoll()
    by_fd: dict[int, tuple[str, socket.socket, int]] = {}
    for number, sock in enumerate(_listeners(port, flows)):
        poller.register(sock.fileno(), select.EPOLLIN)
        by_fd[sock.fileno()] = ("listen", sock, number)
    received = [0] * flows
    samples = []
    end = _deadline(duration)
    next_sample = time.monotonic_ns()
    while True:
        now = time.monotonic_ns()
        if now >= next_sample:
            samples.append([now, list(received)])
            next_sample += round(interval * NS)
        if now >= end:
            break
        wait = max(0.0, (min(next_sample, end) - now) / NS)
        for fd, _ in poller.poll(wait):
            role, sock, number = by_fd[fd]
            if role == "listen":
                conn, _ = sock.accept()
                conn.setblocking(False)
                poller.register(conn.fileno(), select.EPOLLIN)
                by_fd[conn.fileno()] = ("data", conn, number)
                continue
            data = sock.recv(1 << 20)
            if not data:
                poller.unregister(fd)
                continue
            received[number] += len(data)
    with open(out, "w") as f:
        json.dump({"port": port, "flows": flows, "samples": samples}, f)


def _connect_when_listening(sock: socket.socket, peer: tuple, patience: float = 10.0) -> None:
    """Connect, retrying while the receiver (started just before) is not listening yet."""
    give_up = _deadline(patience)
    while True:
        try:
            sock.connect(peer)
            return
        except ConnectionRefusedError:
            if time.monotonic_ns() >= give_up:
                raise
            time.sleep(0.05)


def _connect(address: str, port: int, cca: str) -> socket.socket:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    # Set before connecting so that the handshake already runs under this CCA.
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, cca.encode())
    _connect_when_listening(sock, (address, port))
    sock.setblocking(False)
    return sock


def send(address: str, port: int, ccas: list[str], duration: float) -> None:
    """One connection per CCA in `ccas` (flow f to port + f), each kept full for `duration`
    from the sender's start (a SYN lost at a full bottleneck delays its flow, not the end)."""
    end = _deadline(duration)
    socks = [_connect(address, port + number, cca) for number, cca in enumerate(ccas)]
    poller = select.epoll()
    for sock in socks:
        poller.register(sock.fileno(), select.EPOLLOUT)
    by_fd = {sock.fileno(): sock for sock in socks}
    payload = bytes(CHUNK)
    while by_fd and (now := time.monotonic_ns()) < end:
        for fd, _ in poller.poll((end - now) / NS):
            try:
                while by_fd[fd].send(payload) == CHUNK:
                    pass
            except BlockingIOError:
                pass
            except (BrokenPipeError, ConnectionResetError):
                poller.unregister(fd)   # the receiver has gone: nothing more to measure
                del by_fd[fd]
    for sock in socks:
        sock.close()


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    rx = sub.add_parser("receive")
    rx.add_argument("--port", type=int, required=True)
    rx.add_argument("--flows", type=int, required=True)
    rx.add_argument("--duration", type=float, required=True)
    rx.add_argument("--interval", type=float, default=0.5)
    rx.add_argument("--out", required=True)
    tx = sub.add_parser("send")
    tx.add_argument("--address", required=True)
    tx.add_argument("--port", type=int, required=True)
    tx.add_argument("--cca", required=True, help="comma-separated, one per flow")
    tx.add_argument("--duration", type=float, required=True)
    args = parser.parse_args(argv)
    if args.command == "receive":
        receive(args.port, args.flows, args.duration, args.interval, args.out)
    else:
        send(args.address, args.port, args.cca.split(","), args.duration)


if __name__ == "__main__":
    main()
