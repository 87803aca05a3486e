# SPDX-License-Identifier: MIT
"""build/sim/bottleneck (sim/ns3/bottleneck.cc) from Python: a run's options in, its JSON out."""

from __future__ import annotations

import functools
from pathlib import Path

from confucius.ns3 import BUILD, SimError, run_program
from confucius.web import generate, protocols
from confucius.web.page import Page, PageError, read_page

BOTTLENECK = BUILD / "bottleneck"
# The TCP congestion controls the simulator's connections can run (bottleneck's --web-cca).
NS3_CCAS = ("bbr", "cubic", "vegas")


def run_bottleneck(args: list[str], binary: Path = BOTTLENECK) -> dict:
    """One run of build/sim/bottleneck; its JSON output."""
    return run_program(binary, args)


@functools.cache
def describe(binary: Path = BOTTLENECK) -> dict:
    """{"ns3": version, "simulated": {name: summary}, "missing": {name: why}}: the ns-3
    version and the lab's schedulers as the simulator has them (its own table, so that no
    second list can disagree)."""
    return run_bottleneck(["--list-schedulers"], binary)


def write_sim_page(page: Page, path: Path, http: str = "h1") -> Path:
    """The page as the simulator reads it (sim_page_text)."""
    path.write_text(sim_page_text(page, http))
    return path


def sim_page_text(page: Page, http: str = "h1") -> str:
    """One object per line, `id domain size parent|-`, then its domain's HTTP version
    (protocols.domain_protocols) where it is not HTTP/1.1."""
    versions = protocols.domain_protocols(page, http)
    lines = []
    for o in page.objects:
        if any(c.isspace() for c in o.id + o.domain):
            raise SimError(f"page {page.id}: object {o.id!r} or its domain has a space")
        version = "" if versions[o.domain] == "h1" else f" {versions[o.domain]}"
        lines.append(f"{o.id} {o.domain} {o.size} {o.parent or '-'}{version}")
    return "\n".join(lines) + "\n"


def named_page(name: str, seed: int = 0) -> Page:
    """`amazon` (the demo's page) or a confucius-web-page/1 file."""
    if name == "amazon":
        return generate.amazon_page(seed)
    try:
        return read_page(Path(name))
    except (OSError, PageError) as err:
        raise SimError(f"page {name}: {err}") from None
