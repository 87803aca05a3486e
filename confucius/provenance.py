# SPDX-License-Identifier: MIT
"""How a result names the programs that produced it: every run's `versions` records their
digests, and a resumed experiment compares them with the programs it would run now (the
lab's matrix, the simulator's sweep, the per-CCA runs)."""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping
from pathlib import Path


def program_digest(path: Path) -> str | None:
    """A built program's name in the runs' `versions`: its SHA-256's first 16 hex digits
    (None when it is not built)."""
    path = Path(path)
    return hashlib.sha256(path.read_bytes()).hexdigest()[:16] if path.is_file() else None


def programs_not_as_recorded(recorded: Mapping[str, str | None], paths: Mapping[str, Path]) -> list[str]:
    """Each of the programs at `paths` whose digest here is not the one `recorded`, said in
    a line: what a Dask worker checks before it runs a task, since the client that planned
    the task records its own programs' digests with the result."""
    found = {name: program_digest(path) for name, path in sorted(paths.items())}
    return [f"{name}: {digest or 'not built'} here, {recorded.get(name) or 'not built'} recorded"
            for name, digest in found.items() if digest != recorded.get(name)]


def recorded_programs(versions: dict) -> dict[str, str | None]:
    """The programs' digests that a run's `versions` records, by name: the lab's parts
    (`binaries_sha256`) and the simulator's program (`bottleneck_sha256`, `percca_sha256`)."""
    named = {key.removesuffix("_sha256"): digest for key, digest in versions.items()
             if key.endswith("_sha256") and isinstance(digest, str)}
    return {**named, **(versions.get("binaries_sha256") or {})}


def mixed_programs(runs_versions: Iterable[dict]) -> dict[str, list[str]]:
    """The programs that these runs record with more than one digest (what a report that
    pools them mixes), each with its digests; runs that record no digest are no evidence."""
    seen: dict[str, set[str]] = {}
    for versions in runs_versions:
        for name, digest in recorded_programs(versions).items():
            if digest is not None:
                seen.setdefault(name, set()).add(digest)
    return {name: sorted(digests) for name, digests in sorted(seen.items()) if len(digests) > 1}
