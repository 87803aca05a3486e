# SPDX-License-Identifier: MIT
"""The simulator's programs (build/sim: `bottleneck`, `percca`) from Python: one run, its
JSON out, or the program's own reason for refusing. Below the parts that drive them
(sim for the page-load episodes, percca for the CCA mixes), so both run them one way."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

from confucius.provenance import program_digest

BUILD = Path(__file__).resolve().parents[1] / "build" / "sim"


class SimError(RuntimeError):
    """A simulator program is missing, refused its options or failed."""


def run_program(binary: Path, args: list[str]) -> dict:
    """One run of `binary` with `args`; its JSON output (its own message if it fails)."""
    if not Path(binary).is_file():
        raise SimError(f"{binary} is not built: run `make sim`")
    try:
        result = subprocess.run([str(binary), *args], capture_output=True, text=True)
    except OSError as err:
        raise SimError(f"cannot run {binary}: {err.strerror or err}") from None
    if result.returncode != 0:
        raise SimError(_why(result.stderr) or f"{Path(binary).name} exited with {result.returncode}")
    return json.loads(result.stdout)


def _why(stderr: str) -> str | None:
    """The program's own message: ns-3's abort text (`msg="..."`), else its last line."""
    found = re.search(r'msg="(.*?)"(?:,|$)', stderr, re.M)
    lines = stderr.strip().splitlines()
    return found.group(1) if found else lines[-1] if lines else None


def provenance(program: str, binary: Path, ns3_version: str) -> dict:
    """What produced a run: ns-3's version, the program's digest, the tree's commit."""
    def git(*args: str) -> str:
        return subprocess.run(["git", "-C", str(BUILD.parents[1]), *args], capture_output=True,
                              text=True).stdout.strip()
    return {"ns3": ns3_version, f"{program}_sha256": program_digest(binary),
            "git_commit": git("rev-parse", "HEAD") or None,
            "git_dirty": bool(git("status", "--porcelain", "--untracked-files=no"))}
