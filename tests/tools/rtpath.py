# SPDX-License-Identifier: MIT
"""rtflow's tests' helpers: its binary built by cargo, a path of three network namespaces,
sender -- router -- receiver, with a `tbf` bottleneck on the router's egress to the
receiver, and one flow across it. Used by test_rtflow.py, test_rtflow_vm.py and, inside the
lab's User-Mode Linux kernel, by guest_rtflow.py."""

from __future__ import annotations

import os
import shutil
import subprocess
import uuid
from pathlib import Path

from confucius import rtflow

REPO = Path(__file__).resolve().parents[2]
CARGO = shutil.which("cargo") or str(Path.home() / ".cargo" / "bin" / "cargo")
GO_FALLBACK = "/usr/local/go/bin/go"   # as tools/rtflow/build.rs
PORT = 5000


def cargo(*args: str, packages: tuple[str, ...] = ()) -> subprocess.CompletedProcess:
    """cargo on the tools' workspace, all of it unless `packages` are named. Builds of the
    programs the lab runs select the whole workspace, as mk/tools.mk does: cargo unifies
    dependencies' features over the packages selected, so `-p web` links another web-client
    (other bytes, other page loads in the lab) than the workspace build."""
    selected = [word for package in packages for word in ("-p", package)]
    return subprocess.run([CARGO, *args, "--release", "--manifest-path", str(REPO / "tools" / "Cargo.toml"),
                           "--target-dir", str(REPO / "build" / "cargo"), *selected],
                          capture_output=True, text=True, timeout=900)


def go_test() -> subprocess.CompletedProcess:
    """`go test` of tools/piongcc with the settings of rtflow's build.rs (modules pinned by
    go.sum, caches under build/go)."""
    go = os.environ.get("GO") or shutil.which("go") or GO_FALLBACK
    env = {**os.environ, "GOFLAGS": "-mod=readonly -modcacherw -buildvcs=false",
           "GOMODCACHE": os.environ.get("GOMODCACHE", str(REPO / "build" / "go" / "mod")),
           "GOCACHE": os.environ.get("GOCACHE", str(REPO / "build" / "go" / "cache"))}
    return subprocess.run([go, "test", "."], cwd=REPO / "tools" / "piongcc", env=env, capture_output=True,
                          text=True, timeout=600)


def run(argv: list[str], **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run(argv, capture_output=True, text=True, timeout=60, **kwargs)


class Path3:
    """sender -- router -- receiver namespaces; the router shapes towards the receiver."""

    def __init__(self, rate: str):
        self.tag = "rf" + uuid.uuid4().hex[:6]
        self.ns = {role: f"{self.tag}{role}" for role in ("s", "r", "c")}
        self.receiver_addr = "10.201.2.1"
        try:
            self._build(rate)
        except Exception:
            self.remove()
            raise

    def _ip(self, *args: str) -> None:
        done = run(["ip", *args])
        assert done.returncode == 0, f"ip {' '.join(args)}: {done.stderr}"

    def exec_argv(self, role: str, argv: list[str]) -> list[str]:
        return ["ip", "netns", "exec", self.ns[role], *argv]

    def _build(self, rate: str) -> None:
        s, r, c = self.ns["s"], self.ns["r"], self.ns["c"]
        for ns in self.ns.values():
            self._ip("netns", "add", ns)
            self._ip("-n", ns, "link", "set", "lo", "up")
        links = [(s, f"{self.tag}a", "10.201.1.1/24", r, f"{self.tag}b", "10.201.1.2/24"),
                 (r, f"{self.tag}c", "10.201.2.2/24", c, f"{self.tag}d", "10.201.2.1/24")]
        for ns1, dev1, addr1, ns2, dev2, addr2 in links:
            self._ip("link", "add", dev1, "netns", ns1, "type", "veth", "peer", "name", dev2, "netns", ns2)
            for ns, dev, addr in ((ns1, dev1, addr1), (ns2, dev2, addr2)):
                self._ip("-n", ns, "addr", "add", addr, "dev", dev)
                self._ip("-n", ns, "link", "set", dev, "up")
        self._ip("-n", s, "route", "add", "default", "via", "10.201.1.2")
        self._ip("-n", c, "route", "add", "default", "via", "10.201.2.2")
        assert run(self.exec_argv("r", ["sysctl", "-qw", "net.ipv4.ip_forward=1"])).returncode == 0
        self.shape("add", rate)

    def shape(self, verb: str, rate: str) -> None:
        tc = ["tc", "qdisc", verb, "dev", f"{self.tag}c", "root", "tbf", "rate", rate, "burst", "32k",
              "latency", "50ms"]
        done = run(self.exec_argv("r", tc))
        assert done.returncode == 0, done.stderr

    def remove(self) -> None:
        for ns in self.ns.values():
            subprocess.run(["ip", "netns", "del", ns], capture_output=True)


class Flow:
    """One receiver and one sender across a `Path3`, with their logs."""

    def __init__(self, path: Path3, workdir: Path, name: str, mode: str, duration: str, **options):
        self.frame_log = workdir / f"{name}_frames.csv"
        self.rate_log = workdir / f"{name}_rate.csv"
        recv = rtflow.recv_command(f"0.0.0.0:{PORT}", frame_log=self.frame_log, duration="120s")
        self.receiver = subprocess.Popen(path.exec_argv("c", recv), stderr=subprocess.PIPE, text=True)
        ready = self.receiver.stderr.readline()
        assert "listening" in ready, ready
        send = rtflow.send_command(f"{path.receiver_addr}:{PORT}", mode=mode, duration=duration,
                                   rate_log=self.rate_log, **options)
        self.sender = subprocess.Popen(path.exec_argv("s", send), stderr=subprocess.PIPE, text=True)

    def wait(self, timeout: float = 120) -> tuple[str, str]:
        try:
            _, send_err = self.sender.communicate(timeout=timeout)
            _, recv_err = self.receiver.communicate(timeout=15)
        finally:
            for process in (self.sender, self.receiver):
                if process.poll() is None:
                    process.kill()
                    process.wait()
        assert self.sender.returncode == 0, send_err
        assert self.receiver.returncode == 0, recv_err
        return send_err, recv_err

    def frames(self) -> list[rtflow.Frame]:
        return rtflow.read_frames(self.frame_log)

    def rates(self) -> list[rtflow.RateSample]:
        return rtflow.read_rates(self.rate_log)
