# SPDX-License-Identifier: MIT
"""Fixtures for the tests of every folder."""

from pathlib import Path

import pytest


@pytest.fixture(scope="session")
def boot_guest(tmp_path_factory):
    """boot_guest(script, name, timeout, seed=None): one boot of the lab's User-Mode Linux
    kernel (in virtual time) running `script`, with a fresh folder `name`* as its $RESULTS;
    fails the test unless the boot and the script succeeded, and returns the folder. With a
    seed the boot repeats exactly; without one, the guest's random numbers come from the host."""
    from confucius.lab import uml  # only the tests that boot import the lab

    def boot(script: Path, name: str, timeout: float, seed: int | None = None) -> Path:
        results = tmp_path_factory.mktemp(name)
        uml.run(script, results_dir=results, timeout=timeout, seed=seed).check()
        return results
    return boot
