# SPDX-License-Identifier: MIT
"""Page loads: the Web server (a Runner) and one web-client load per page."""

from __future__ import annotations

import subprocess

from .. import topology
from ..contract import GuestEvents, PageEvent, PageSpec, RunSpec
from .base import Processes, in_ns, log, now_ns


class WebServer:
    """web-server in the server's namespace, for every domain of the hosts file."""

    def __init__(self, spec: RunSpec, procs: Processes):
        self.spec, self.procs = spec, procs

    def start(self) -> None:
        self.procs.start("web-server", in_ns(topology.SERVER, [self.spec.binaries.web_server, "--hosts",
                                                               self.spec.hosts, "--cca", self.spec.web.cca]),
                         wait_for="listening")

    def stop(self) -> None:
        self.procs.stop("web-server")

    def record(self, events: GuestEvents) -> None:
        """The loads note themselves (load_page); the server has nothing to add."""


def load_page(spec: RunSpec, page: PageSpec, number: int, scratch) -> PageEvent:
    """One load of `page` by web-client in the client's namespace; its report in pages/."""
    web = spec.web
    out = scratch / "pages" / f"{number}.json"
    out.parent.mkdir(exist_ok=True)
    argv = in_ns(topology.CLIENT, [spec.binaries.web_client, "--page", page.file,
                                   "--hosts", spec.hosts, "--cca", web.cca,
                                   "--max-per-domain", web.max_per_domain,
                                   "--timeout", f"{web.timeout_s:g}s", "--out", out,
                                   *(option for domain in page.http2 for option in ("--h2", domain))])
    log(f"page {number} ({page.id})")
    started = now_ns()
    done = subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True, text=True,
                          timeout=web.timeout_s + 30)
    return PageEvent(number=number, id=page.id, started_ns=started, ended_ns=now_ns(), exit=done.returncode,
                     stderr=done.stderr[-2000:], report=f"pages/{number}.json")
