# SPDX-License-Identifier: MIT
"""The `confucius` command imports a group's module only when that group runs."""

import subprocess
import sys

PROBE = """
import sys
from confucius import cli
sys.argv = ["confucius", *sys.argv[1:]]
try:
    cli.main()
except SystemExit:
    pass
print(" ".join(sorted(m for m in sys.modules if m.startswith("confucius."))), file=sys.stderr)
"""


def loaded(*argv: str) -> set[str]:
    """The modules of the groups' packages that `confucius ARGV` imported (finding a group
    imports its package's empty __init__, which is not counted)."""
    done = subprocess.run([sys.executable, "-c", PROBE, *argv], capture_output=True, text=True, timeout=60)
    return {m for m in done.stderr.strip().splitlines()[-1].split() if m.count(".") >= 2}


def test_help_lists_every_group_without_importing_one():
    done = subprocess.run([sys.executable, "-m", "confucius", "--help"], capture_output=True, text=True, timeout=60)
    for group in ("model", "lab", "web", "report", "core"):
        assert f" {group} " in done.stdout
    assert loaded("--help") == set()


def test_a_group_imports_its_own_module_only():
    assert loaded("lab", "--help") == {"confucius.lab.cli"}
    assert "confucius.report.cli" in loaded("report", "--help")
