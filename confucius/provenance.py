# SPDX-License-Identifier: MIT
"""How a result names the programs that produced it: every run's `versions` records their
digests, and a resumed experiment compares them with the programs it would run now (the
lab's matrix, the simulator's sweep, the per-CCA runs)."""

from __future__ import annotations

import hashlib
from pathlib import Path


def program_digest(path: Path) -> str | None:
    """A built program's name in the runs' `versions`: its SHA-256's first 16 hex digits
    (None when it is not built)."""
    path = Path(path)
    return hashlib.sha256(path.read_bytes()).hexdigest()[:16] if path.is_file() else None
