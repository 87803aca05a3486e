# SPDX-License-Identifier: MIT
"""The scripts outside the package that use it (sim/ns3/*.py, bench/*.py and any other that
imports confucius) still import: no test runs them (benchmarks, make sim's episodes), so a
module that moved or a name that went would otherwise surface only when someone runs one.

Each script is loaded from its path as a module (its `__main__` block does not run) and
every `from confucius... import name` in it, those inside functions included (imported
only where they run: on the host, not in a guest), is checked to resolve."""

import ast
import importlib
import importlib.util
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
# Not scripts: the package, its tests, and what builds, runs and measurements leave behind.
NOT_SCRIPTS = {"confucius", "tests", "build", "data", "results", "node_modules"}


def python_files(folder: Path):
    for path in sorted(folder.iterdir()):
        if path.is_dir() and not path.name.startswith(".") and path.name not in NOT_SCRIPTS:
            yield from python_files(path)
        elif path.suffix == ".py":
            yield path


def confucius_imports(path: Path) -> list[tuple[str, tuple[str, ...]]]:
    """(module, names) of each `import confucius...` or `from confucius... import names`."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module.split(".")[0] == "confucius":
            found.append((node.module, tuple(alias.name for alias in node.names)))
        elif isinstance(node, ast.Import):
            found += [(alias.name, ()) for alias in node.names if alias.name.split(".")[0] == "confucius"]
    return found


def scripts() -> list[Path]:
    named = [*(REPO / "sim" / "ns3").glob("*.py"), *(REPO / "bench").glob("*.py")]
    using = [path for path in python_files(REPO) if confucius_imports(path)]
    return sorted(set(named) | set(using))


SCRIPTS = scripts()


def test_the_scripts_that_use_the_package_are_found():
    assert {"sim/ns3/speed.py", "sim/ns3/episodes.py"} <= {str(p.relative_to(REPO)) for p in SCRIPTS}


@pytest.mark.parametrize("path", SCRIPTS, ids=lambda p: str(p.relative_to(REPO)))
def test_script_imports(path):
    spec = importlib.util.spec_from_file_location(f"script_{path.stem}", path)
    spec.loader.exec_module(importlib.util.module_from_spec(spec))
    for module_name, names in confucius_imports(path):
        module = importlib.import_module(module_name)
        for name in names:
            submodule = hasattr(module, "__path__") and importlib.util.find_spec(f"{module_name}.{name}")
            if not hasattr(module, name) and not submodule:
                pytest.fail(f"{path.relative_to(REPO)}: {module_name} has no {name}")
