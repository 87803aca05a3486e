# SPDX-License-Identifier: MIT
"""The progress of a matrix or a sweep: a bar over the units measured, or a line per run."""

from __future__ import annotations

import sys
import time


class Progress:
    """A rich progress bar over page measurements (or runs); without one (output to a file,
    or --echo), a line per run."""

    def __init__(self, enabled: bool, total: int):
        self.enabled, self.total = enabled, total
        self.done, self.text, self.started = 0, "", time.monotonic()

    def __enter__(self):
        if self.enabled:
            from rich.progress import (BarColumn, MofNCompleteColumn, Progress, TextColumn,
                                       TimeElapsedColumn, TimeRemainingColumn)
            self.bar = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                                TimeElapsedColumn(), TimeRemainingColumn())
            self.bar.start()
            self.task = self.bar.add_task("starting", total=self.total)
        return self

    def describe(self, text: str) -> None:
        self.text = text
        if self.enabled:
            self.bar.update(self.task, description=text)

    def note(self, text: str) -> None:
        if self.enabled:
            self.bar.console.print(text)
        else:
            print(text, file=sys.stderr)

    def finished(self, name: str, units: int) -> None:
        """Count `units` more as measured, by the task `name` (tasks end in any order, and
        others are under way: the bar names the last one that ended)."""
        self.describe(f"last done: {name}")
        self.done += units
        if self.enabled:
            self.bar.advance(self.task, units)
        else:
            minutes = (time.monotonic() - self.started) / 60
            print(f"[{self.done}/{self.total} after {minutes:.0f} min] {self.text}", file=sys.stderr, flush=True)

    def __exit__(self, *exc) -> None:
        if self.enabled:
            self.bar.stop()
