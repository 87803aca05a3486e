# SPDX-License-Identifier: MIT
"""Shared by the web tool tests: the built binaries and a two-namespace test network."""

from __future__ import annotations

import os
import shutil
import subprocess
import uuid
from contextlib import contextmanager
from pathlib import Path

import pytest
from rtpath import cargo

REPO = Path(__file__).resolve().parents[2]
RELEASE = REPO / "build" / "cargo" / "release"


def web_binaries() -> tuple[Path, Path]:
    """(web-client, web-server), built if needed (cargo is incremental, so this is quick)."""
    if shutil.which("cargo") is None:
        pytest.fail("cargo is needed to build tools/web (install Rust, see README)")
    built = cargo("build")
    assert built.returncode == 0, built.stderr
    return RELEASE / "web-client", RELEASE / "web-server"


def _ip(*args: str) -> None:
    subprocess.run(["ip", *args], check=True, capture_output=True)


@contextmanager
def namespace_pair(addresses: int, rate: str | None):
    """A server and a client namespace joined by a veth pair; the server side holds
    `addresses` addresses (10.X.Y.1...) and, with `rate`, a tbf shaper on its egress (the
    download direction). Yields (server ns, client ns, server addresses). Always cleaned up."""
    if os.geteuid() != 0:
        pytest.skip("network namespaces need root")
    tag = uuid.uuid4().hex[:8]
    server, client = f"cwebs-{tag}", f"cwebc-{tag}"
    second, third = (int(tag[:2], 16) % 100) + 100, int(tag[2:4], 16)
    ips = [f"10.{second}.{third}.{i}" for i in range(1, addresses + 1)]
    try:
        _ip("netns", "add", server)
        _ip("netns", "add", client)
        _ip("link", "add", f"ws{tag}", "netns", server, "type", "veth", "peer", "name", f"wc{tag}",
            "netns", client)
        for ns, dev in ((server, f"ws{tag}"), (client, f"wc{tag}")):
            _ip("-n", ns, "link", "set", "lo", "up")
            _ip("-n", ns, "link", "set", dev, "up")
        for ip in ips:
            _ip("-n", server, "addr", "add", f"{ip}/24", "dev", f"ws{tag}")
        _ip("-n", client, "addr", "add", f"10.{second}.{third}.254/24", "dev", f"wc{tag}")
        if rate:
            subprocess.run(["ip", "netns", "exec", server, "tc", "qdisc", "add", "dev", f"ws{tag}",
                            "root", "tbf", "rate", rate, "burst", "16kb", "latency", "200ms"],
                           check=True, capture_output=True)
        yield server, client, ips
    finally:
        for ns in (server, client):
            subprocess.run(["ip", "netns", "del", ns], capture_output=True)


@contextmanager
def running_server(server_bin: Path, netns: str | None, args: list[str]):
    """web-server started and listening (it says so on stderr), stopped on exit."""
    prefix = ["ip", "netns", "exec", netns] if netns else []
    proc = subprocess.Popen(prefix + [str(server_bin), *args], stderr=subprocess.PIPE, text=True)
    try:
        line = proc.stderr.readline()
        if "listening" not in line:
            proc.wait(timeout=5)
            pytest.fail(f"web-server did not start: {line}{proc.stderr.read()}")
        yield proc
    finally:
        proc.terminate()
        proc.wait(timeout=5)
        proc.stderr.close()

