# SPDX-License-Identifier: MIT
"""The package's import direction (docs/ARCHITECTURE.md, "The Python package and its import
direction"): each part imports only the parts below it, and confucius.metrics nothing but
the standard library (the VM guest imports it). Across parts only public names: a name
that starts with `_` belongs to its own part. The code that runs inside the VM
(confucius/lab/guest/) is imported by nothing outside it: the host reaches the guest
through the contract (lab/contract.py) and `python -m`. And every engine the registry
names is implemented where it says, by an object that offers what the experiment layer
asks of an engine."""

import ast
import sys
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "confucius"
GUEST_WING = "confucius.lab.guest"
# Each part and the parts it may import. `cli` and `__main__` sit on top (the command line
# registers every part by name, lazily).
ALLOWED = {
    "metrics": set(), "units": set(), "rtflow": set(), "provenance": set(), "cluster": set(),
    "ns3": {"provenance"},
    "web": {"metrics", "units"},
    "models": {"metrics", "units"},
    "coredemo": set(),
    # scenarios, keys, the planner, results and the database: what every engine shares
    "experiment": {"metrics", "units", "rtflow", "provenance", "web"},
    "lab": {"metrics", "units", "rtflow", "provenance", "cluster", "web", "experiment"},
    "percca": {"metrics", "units", "models", "provenance", "ns3", "experiment", "lab"},
    "report": {"metrics", "units", "rtflow", "provenance", "web", "experiment", "lab", "models", "percca"},
    # the simulator reads the lab's scenarios and contract, and prints the report's table
    "sim": {"metrics", "units", "rtflow", "provenance", "cluster", "ns3", "web", "experiment", "lab", "report"},
    "cli": set(), "__main__": {"cli"},
}


def _module_name(path: Path) -> str:
    return ".".join(path.relative_to(PACKAGE.parent).with_suffix("").parts).removesuffix(".__init__")


def _import_nodes(path: Path) -> list[tuple[str, list[str]]]:
    """Each import of `path` as (the module imported from, the names it takes); relative
    imports resolved to absolute names."""
    package = ".".join(path.relative_to(PACKAGE.parent).with_suffix("").parts[:-1])
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found += [(alias.name, []) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
            module = node.module if not node.level else ".".join(filter(None, [base, node.module]))
            found.append((module, [alias.name for alias in node.names]))
    return found


def _imports(path: Path) -> set[str]:
    """The modules `path` imports (`from confucius import metrics` imports the part)."""
    found = set()
    for module, names in _import_nodes(path):
        found |= {module, *(f"{module}.{name}" for name in names)}
    return found


def _part(module: str) -> str | None:
    words = module.split(".")
    return words[1] if words[0] == "confucius" and len(words) > 1 else None


def _part_of(path: Path) -> str:
    return path.relative_to(PACKAGE).parts[0].removesuffix(".py")


def _parts_imported(path: Path) -> set[str]:
    parts = {_part(m) for m in _imports(path)}
    return {p for p in parts if p in ALLOWED}


SOURCES = sorted(PACKAGE.rglob("*.py"))
IDS = [str(p.relative_to(PACKAGE)) for p in SOURCES]


def test_every_part_is_declared():
    found = {_part_of(path) for path in SOURCES} - {"__init__"}
    assert found == set(ALLOWED)


@pytest.mark.parametrize("path", SOURCES, ids=IDS)
def test_imports_go_down_only(path):
    part = _part_of(path)
    if part == "__init__":
        return
    upward = _parts_imported(path) - ALLOWED[part] - {part}
    assert not upward, f"{path.relative_to(PACKAGE)} ({part}) imports {sorted(upward)}, above it"


@pytest.mark.parametrize("path", SOURCES, ids=IDS)
def test_no_private_name_crosses_a_part(path):
    part = _part_of(path)
    private = [f"{module}.{name}" for module, names in _import_nodes(path)
               if _part(module) not in (None, part) for name in names if name.startswith("_")]
    assert not private, f"{path.relative_to(PACKAGE)} imports private names of other parts: {private}"


@pytest.mark.parametrize("path", SOURCES, ids=IDS)
def test_only_the_guest_imports_the_guest(path):
    if _module_name(path).startswith(GUEST_WING):
        return
    guest = sorted(m for m in _imports(path) if m == GUEST_WING or m.startswith(GUEST_WING + "."))
    assert not guest, (f"{path.relative_to(PACKAGE)} imports the in-VM wing ({guest}): the host reaches "
                       f"the guest through lab/contract.py")


def test_metrics_needs_nothing_beyond_the_standard_library():
    outside = {m.split(".")[0] for m in _imports(PACKAGE / "metrics.py")} - set(sys.stdlib_module_names)
    assert not outside


def test_every_registered_engine_is_implemented_where_the_registry_says():
    from confucius.experiment import engines

    for name, entry in engines.REGISTRY.items():
        engine = engines.engine(name)
        assert isinstance(engine, engines.Engine), f"{entry.implementation} is not an Engine"
        assert (engine.name, engine.time_mode, engine.virtual) == (name, entry.time_mode, entry.virtual)
