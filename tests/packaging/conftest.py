# SPDX-License-Identifier: MIT
"""The packages `make deb` built (build/deb/), found by the version in VERSION."""

import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

from confucius.lab.engine import REPO

DEB_DIR = REPO / "build" / "deb"


@dataclass(frozen=True)
class Debs:
    version: str
    dkms: Path
    tc: Path


@pytest.fixture(scope="session")
def debs() -> Debs:
    version = (REPO / "VERSION").read_text().strip()
    arch = subprocess.run(["dpkg", "--print-architecture"], capture_output=True, text=True,
                          check=True).stdout.strip()
    found = Debs(version, DEB_DIR / f"confucius-dkms_{version}_all.deb",
                 DEB_DIR / f"confucius-tc_{version}_{arch}.deb")
    missing = [str(p) for p in (found.dkms, found.tc) if not p.is_file()]
    assert not missing, f"not built (make deb): {', '.join(missing)}"
    return found
