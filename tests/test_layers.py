# SPDX-License-Identifier: MIT
"""The package's import direction (docs/ARCHITECTURE.md, "The Python package and its import
direction"): each part imports only the parts below it, and confucius.metrics nothing but
the standard library (the VM guest imports it)."""

import ast
import sys
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "confucius"
# Each part and the parts it may import. `cli` and `__main__` sit on top (the command line
# registers every part by name, lazily).
ALLOWED = {
    "metrics": set(), "units": set(), "rtflow": set(), "provenance": set(), "cluster": set(),
    "ns3": {"provenance"},
    "web": {"metrics", "units"},
    "models": {"metrics", "units"},
    "coredemo": set(),
    # the simulator reads the lab's scenarios, writes its database and prints the report's table
    "sim": {"metrics", "units", "rtflow", "provenance", "cluster", "ns3", "web", "lab", "report"},
    "lab": {"metrics", "units", "rtflow", "provenance", "cluster", "web"},
    "percca": {"metrics", "units", "models", "provenance", "ns3", "lab"},
    "report": {"metrics", "units", "rtflow", "provenance", "web", "lab", "models", "percca"},
    "cli": set(), "__main__": {"cli"},
}


def _imports(path: Path) -> set[str]:
    """The modules `path` imports, relative imports resolved to absolute names."""
    package = ".".join(path.relative_to(PACKAGE.parent).with_suffix("").parts[:-1])
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
            module = node.module if not node.level else ".".join(filter(None, [base, node.module]))
            found.add(module)
            # `from confucius import metrics` imports the part, not the package.
            found |= {f"{module}.{alias.name}" for alias in node.names}
    return found


def _part(module: str) -> str | None:
    words = module.split(".")
    return words[1] if words[0] == "confucius" and len(words) > 1 else None


def _parts_imported(path: Path) -> set[str]:
    parts = {_part(m) for m in _imports(path)}
    return {p for p in parts if p in ALLOWED}


SOURCES = sorted(PACKAGE.rglob("*.py"))


def test_every_part_is_declared():
    found = {path.relative_to(PACKAGE).parts[0].removesuffix(".py") for path in SOURCES} - {"__init__"}
    assert found == set(ALLOWED)


@pytest.mark.parametrize("path", SOURCES, ids=[str(p.relative_to(PACKAGE)) for p in SOURCES])
def test_imports_go_down_only(path):
    part = path.relative_to(PACKAGE).parts[0].removesuffix(".py")
    if part == "__init__":
        return
    upward = _parts_imported(path) - ALLOWED[part] - {part}
    assert not upward, f"{path.relative_to(PACKAGE)} ({part}) imports {sorted(upward)}, above it"


def test_metrics_needs_nothing_beyond_the_standard_library():
    outside = {m.split(".")[0] for m in _imports(PACKAGE / "metrics.py")} - set(sys.stdlib_module_names)
    assert not outside
