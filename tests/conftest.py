# SPDX-License-Identifier: MIT
"""Fixtures for the tests of every folder."""

from pathlib import Path

import pytest


BOOT_SEED = 1


@pytest.fixture(scope="session")
def boot_guest(tmp_path_factory):
    """boot_guest(script, name, timeout): one boot of the lab's User-Mode Linux kernel (in
    virtual time) running `script`, with a fresh folder `name`* as its $RESULTS; fails the
    test unless the boot and the script succeeded, and returns the folder. The boot is
    seeded, so it repeats exactly: unseeded, the guest's random numbers come from the host,
    and a test's figures move with them (tests/README.md, pion-gcc)."""
    from confucius.lab import uml  # only the tests that boot import the lab

    def boot(script: Path, name: str, timeout: float) -> Path:
        results = tmp_path_factory.mktemp(name)
        uml.run(script, results_dir=results, timeout=timeout, seed=BOOT_SEED).check()
        return results
    return boot
