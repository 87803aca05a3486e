# SPDX-License-Identifier: MIT
"""The `confucius` command imports a group's module only when that group runs, and its
help texts read as written."""

import importlib
import re
import subprocess
import sys

import pytest
import typer
from typer.testing import CliRunner

from confucius import cli

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


def commands(group, path=()):
    """(path, click command) of every command under a click group, the group's own too."""
    yield path, group
    for name, command in getattr(group, "commands", {}).items():
        yield from commands(command, (*path, name))


def brackets(text: str | None) -> list[str]:
    """The bracketed words of a help text as they must read (`\\[` is rich's escape)."""
    return [found.replace("\\[", "[") for found in re.findall(r"\\?\[[^\]\n]*\]", text or "")]


@pytest.mark.parametrize("group", sorted(cli._GROUPS))
def test_help_texts_keep_their_brackets(group):
    # The help is rich markup: an unescaped "[default: all]" or "[sim]" vanishes from it.
    module, attr, _ = cli._GROUPS[group]
    app = getattr(importlib.import_module(module), attr)
    for path, command in commands(typer.main.get_command(app)):
        shown = CliRunner().invoke(app, [*path, "--help"], env={"COLUMNS": "500"}).output
        shown = " ".join(shown.replace("│", " ").split())
        texts = [command.help, *(getattr(p, "help", None) for p in command.params)]
        for word in (w for text in texts for w in brackets(text)):
            assert " ".join(word.split()) in shown, f"{group} {' '.join(path)}: {word!r} not shown"
