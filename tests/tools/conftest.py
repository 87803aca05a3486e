# SPDX-License-Identifier: MIT
from pathlib import Path

import pytest

from confucius import rtflow
from rtpath import cargo


@pytest.fixture(scope="session")
def rtflow_binary() -> Path:
    """The binary, rebuilt first if its sources changed (a no-op when up to date)."""
    built = cargo("build")
    assert built.returncode == 0, built.stderr
    return rtflow.binary()
