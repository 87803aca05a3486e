# SPDX-License-Identifier: MIT
"""Runs `web-client` and reads its report (format `confucius-web-load/1`) into records that the
lab runner stores: one page load, its connections and every object's timing (seconds from the
start of the load)."""

from __future__ import annotations

import json
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

from confucius.metrics import peak_active
from confucius.web.page import WebObject

REPORT_FORMAT = "confucius-web-load/1"


class ReportError(ValueError):
    """A client report that cannot be read."""


@dataclass(frozen=True, kw_only=True)
class ObjectTiming(WebObject):
    """One object of the page (as the page describes it) and how its load went."""
    depth: int
    status: str  # done, failed, skipped
    connection: int | None
    ready: float | None
    request: float | None
    first_byte: float | None
    last_byte: float | None
    received: int
    error: str | None


@dataclass(frozen=True)
class Connection:
    id: int
    domain: str
    server: str
    local_port: int | None
    opened: float
    established: float | None
    objects: int
    bytes: int
    error: str | None
    protocol: str = "h1"   # h1 or h2 (web-client), h3 in the simulator's reports; older reports lack it


@dataclass(frozen=True)
class PageLoad:
    page: str
    ok: bool
    error: str | None
    start_unix: float
    plt: float | None
    cca: str | None
    max_per_domain: int
    connections: tuple[Connection, ...]
    objects: tuple[ObjectTiming, ...]

    def connections_per_domain(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        for c in self.connections:
            counts[c.domain] = counts.get(c.domain, 0) + 1
        return counts

    def peak_active(self) -> int:
        """Paper 000's ACTIVE count: peak number of connections that received bytes in 10 ms."""
        transfers: dict[int, list] = {}
        for o in self.objects:
            if o.first_byte is not None and o.last_byte is not None:
                transfers.setdefault(o.connection, []).append((o.first_byte, o.last_byte))
        return peak_active(transfers)


def _seconds(us):
    return None if us is None else us / 1e6


def parse_report(text: str) -> PageLoad:
    try:
        data = json.loads(text)
    except json.JSONDecodeError as err:
        raise ReportError(f"the client report is not JSON: {err}") from err
    if not isinstance(data, dict) or data.get("format") != REPORT_FORMAT:
        raise ReportError(f"not a {REPORT_FORMAT} report")
    try:
        return PageLoad(
            page=data["page"], ok=data["ok"], error=data["error"],
            start_unix=data["start_unix_us"] / 1e6, plt=_seconds(data["plt_us"]), cca=data["cca"],
            max_per_domain=data["max_per_domain"],
            connections=tuple(Connection(
                id=c["id"], domain=c["domain"], server=c["server"], local_port=c["local_port"],
                opened=c["opened_us"] / 1e6, established=_seconds(c["established_us"]),
                objects=c["objects"], bytes=c["bytes"], error=c["error"],
                protocol=c.get("protocol", "h1")) for c in data["connections"]),
            objects=tuple(ObjectTiming(
                id=o["id"], domain=o["domain"], size=o["size"], parent=o["parent"], depth=o["depth"],
                status=o["status"], connection=o["connection"], ready=_seconds(o["ready_us"]),
                request=_seconds(o["request_us"]), first_byte=_seconds(o["first_byte_us"]),
                last_byte=_seconds(o["last_byte_us"]), received=o["received"], error=o["error"])
                for o in data["objects"]),
        )
    except (KeyError, TypeError) as err:
        raise ReportError(f"the client report lacks or mistypes field {err}") from err


def client_command(client, page, hosts, port: int = 80, cca: str | None = None,
                   timeout: float = 60.0, netns: str | None = None, http2: Sequence[str] = ()) -> list[str]:
    """web-client's command line; the domains of `http2` are loaded over HTTP/2."""
    command = [str(client), "--page", str(page), "--hosts", str(hosts), "--port", str(port),
               "--timeout", f"{timeout}s"]
    if cca:
        command += ["--cca", cca]
    for domain in http2:
        command += ["--h2", domain]
    return (["ip", "netns", "exec", netns] if netns else []) + command


def run_page_load(client, page, hosts, port: int = 80, cca: str | None = None,
                  timeout: float = 60.0, netns: str | None = None, http2: Sequence[str] = ()) -> PageLoad:
    """Loads one page; a failed load is returned (ok False), bad input raises ReportError."""
    if not Path(client).is_file():
        raise FileNotFoundError(f"web-client not found at {client} (build it with `make tools`)")
    done = subprocess.run(client_command(client, page, hosts, port, cca, timeout, netns, http2),
                          capture_output=True, text=True, timeout=timeout + 30)
    if done.returncode not in (0, 1):
        raise ReportError(f"web-client failed (exit {done.returncode}): {done.stderr.strip()}")
    return parse_report(done.stdout)
