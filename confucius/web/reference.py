# SPDX-License-Identifier: MIT
"""The reference load: an idealised, deterministic load of a page, used to compute the flow
statistics the corpus is calibrated to (connections, flow sizes, concurrent active flows).

The browser rules are those of `web-client` (at most 6 connections per domain opened on demand,
requests late-bound to the first idle connection of their domain, a child requested when its
parent has arrived). The network is idealised: one bottleneck of `rate` bit/s shared equally by
the responses being received (processor sharing, no slow start, no header bytes), a round trip
`rtt` for a new connection's handshake and one for each request before its first byte.
The defaults, 20 Mbit/s and 40 ms, are the lab's reference link (paper 002 §V-A testbed).
"""

from __future__ import annotations

import heapq
from collections import deque
from dataclasses import dataclass

from confucius.metrics import peak_active

from .page import Page

REFERENCE_RATE_BPS = 20e6
REFERENCE_RTT_S = 0.040
MAX_PER_DOMAIN = 6


@dataclass(frozen=True)
class ReferenceLoad:
    plt: float
    connections: int
    flow_bytes: tuple[int, ...]  # bytes received on each connection
    peak_active: int


@dataclass
class _Conn:
    domain: str
    state: str = "connecting"  # connecting, idle, busy
    bytes: int = 0


def reference_load(page: Page, rate: float = REFERENCE_RATE_BPS, rtt: float = REFERENCE_RTT_S,
                   max_per_domain: int = MAX_PER_DOMAIN) -> ReferenceLoad:
    return _Simulation(page, rate / 8, rtt, max_per_domain).run()


class _Simulation:
    """Event-driven: timed events (handshake done, first byte) in a heap; the responses in
    transfer share the link, so each finishes when the per-flow service (virtual time) reaches
    its start value plus its size."""

    def __init__(self, page: Page, bytes_per_s: float, rtt: float, max_per_domain: int):
        self.page, self.capacity, self.rtt, self.limit = page, bytes_per_s, rtt, max_per_domain
        self.size = {o.id: o.size for o in page.objects}
        self.domain = {o.id: o.domain for o in page.objects}
        self.children: dict[str, list[str]] = {}
        for o in page.objects:
            if o.parent is not None:
                self.children.setdefault(o.parent, []).append(o.id)
        self.now = 0.0
        self.virtual = 0.0  # service each transferring response has received since t = 0
        self.timed: list = []
        self.finishing: list = []  # (virtual finish, seq, connection index, object)
        self.seq = 0
        self.conns: list[_Conn] = []
        self.queues: dict[str, deque] = {d: deque() for d in page.domains}
        self.transfers: dict[int, list] = {}
        self.started: dict[int, float] = {}
        self.last_byte = 0.0

    def run(self) -> ReferenceLoad:
        for o in self.page.objects:
            if o.parent is None:
                self._ready(o.id)
        while self.timed or self.finishing:
            self._step()
        return ReferenceLoad(plt=self.last_byte, connections=len(self.conns),
                             flow_bytes=tuple(c.bytes for c in self.conns),
                             peak_active=peak_active(self.transfers))

    def _schedule(self, when: float, kind: str, conn: int, obj: str | None) -> None:
        self.seq += 1
        heapq.heappush(self.timed, (when, self.seq, kind, conn, obj))

    def _step(self) -> None:
        n = len(self.finishing)
        next_finish = (self.now + (self.finishing[0][0] - self.virtual) * n / self.capacity
                       if n else float("inf"))
        next_timed = self.timed[0][0] if self.timed else float("inf")
        when = min(next_finish, next_timed)
        if n:
            self.virtual += (when - self.now) * self.capacity / n
        self.now = when
        if next_finish <= next_timed:
            _, _, conn, obj = heapq.heappop(self.finishing)
            self._finished(conn, obj)
        else:
            _, _, kind, conn, obj = heapq.heappop(self.timed)
            if kind == "established":
                self.conns[conn].state = "idle"
                self._dispatch(self.conns[conn].domain)
            else:  # first byte: the response starts to arrive
                self.seq += 1
                heapq.heappush(self.finishing, (self.virtual + self.size[obj], self.seq, conn, obj))
                self.started[conn] = self.now

    def _ready(self, obj: str) -> None:
        self.queues[self.domain[obj]].append(obj)
        self._dispatch(self.domain[obj])

    def _dispatch(self, domain: str) -> None:
        queue = self.queues[domain]
        mine = [i for i, c in enumerate(self.conns) if c.domain == domain]
        for i in mine:
            if not queue:
                break
            if self.conns[i].state == "idle":
                self.conns[i].state = "busy"
                self._schedule(self.now + self.rtt, "first_byte", i, queue.popleft())
        connecting = sum(self.conns[i].state == "connecting" for i in mine)
        wanted = min(len(queue) - connecting, self.limit - len(mine))
        for _ in range(max(0, wanted)):
            self.conns.append(_Conn(domain))
            self._schedule(self.now + self.rtt, "established", len(self.conns) - 1, None)

    def _finished(self, conn: int, obj: str) -> None:
        c = self.conns[conn]
        c.bytes += self.size[obj]
        c.state = "idle"
        self.transfers.setdefault(conn, []).append((self.started.pop(conn), self.now))
        self.last_byte = max(self.last_byte, self.now)
        for child in self.children.get(obj, ()):
            self.queues[self.domain[child]].append(child)
            self._dispatch(self.domain[child])
        self._dispatch(c.domain)
