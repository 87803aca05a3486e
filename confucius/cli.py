# SPDX-License-Identifier: MIT
"""The `confucius` command: one entry point, one sub-command group per part of the project.

Each part registers its group here, lazily, so that `confucius --help` stays fast and a
part's heavy imports (matplotlib, numpy) happen only when that part runs.
"""

import importlib
import importlib.util
import signal
import sys

import typer

app = typer.Typer(no_args_is_help=True, add_completion=False,
                  help="Confucius: queue discipline laboratory, simulation and models.")

# name -> (module, attribute holding a typer.Typer, help text)
_GROUPS = {
    "model": ("confucius.models.cli", "app", "Fluid model and per-CCA queueing models."),
    "lab": ("confucius.lab.cli", "app", "Real-kernel laboratory (qemu VM, scenarios, runs)."),
    "percca": ("confucius.percca.cli", "app", "Per-CCA queue isolation experiments (paper 003)."),
    "web": ("confucius.web.cli", "app", "Synthetic Web page corpus."),
    "report": ("confucius.report.cli", "app", "Metrics, tables and plots from results."),
    "core": ("confucius.coredemo", "app", "The scheduling core in userspace (demo)."),
    "sim": ("confucius.sim.cli", "app", "The ns-3 simulator: the core as an ns-3 queue disc."),
}


def _register_groups(argv: list[str]) -> None:
    """Import only the group that runs (the first word of the command line); the others
    are listed by name and help text, without importing them."""
    wanted = next((word for word in argv if not word.startswith("-")), None)
    for name, (module, attr, help_text) in _GROUPS.items():
        if importlib.util.find_spec(module) is None:
            continue  # that part is not built yet
        group = getattr(importlib.import_module(module), attr) if name == wanted else typer.Typer(help=help_text)
        app.add_typer(group, name=name, help=help_text)


def _exit_on_sigterm(signum: int, _frame) -> None:
    """Python's default SIGTERM ends the process at once, skipping every `finally`:
    a lab run's VM would outlive it. Exiting through SystemExit runs the clean-ups."""
    raise SystemExit(128 + signum)


def main() -> None:
    signal.signal(signal.SIGTERM, _exit_on_sigterm)
    _register_groups(sys.argv[1:])
    app()
