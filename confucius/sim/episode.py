# SPDX-License-Identifier: MIT
"""`confucius sim episode` runs the motivating example in ns-3 under each scheduler: the
video flow (rtflow's controllers) settles alone, then a page loads (a corpus page with the
browser's rules, or N parallel TCP transfers); it prints the video's stall and frame delay
over the load and the load's time, with the same metrics as the lab (confucius/metrics.py).
"""

import json
import tempfile
from dataclasses import asdict, dataclass
from pathlib import Path

from rich.console import Console
from rich.table import Table

from confucius import metrics, rtflow

from .bottleneck import BOTTLENECK, run_bottleneck

# After the page starts, the window the video's metrics cover (as the lab's page window).
WINDOW_S = 4.0


@dataclass(frozen=True)
class Episode:
    scheduler: str
    controller: str
    stall_s: float
    max_delay_ms: float
    p95_delay_ms: float
    page_s: float | None        # the last object's arrival; None if one never arrived
    simulated_s: float
    cpu_s: float


def episode(scheduler: str, controller: str, link: list[str], load: list[str], settle_s: float,
            binary: Path = BOTTLENECK) -> Episode:
    """The video alone for `settle_s`, then the load (`--page=...` or `--web=tcp ...`)."""
    with tempfile.TemporaryDirectory() as scratch:
        log = Path(scratch) / "frames.csv"
        run = run_bottleneck([f"--scheduler={scheduler}", f"--rt={controller}", "--web-flows=0", *load,
                              f"--web-start={settle_s}s", f"--duration={settle_s + 2 * WINDOW_S + 2}s",
                              f"--frame-log={log}", *link], binary)
        frames = rtflow.read_frames(log)
    window = metrics.in_window(frames, int(settle_s * 1e9), int((settle_s + WINDOW_S) * 1e9))
    return Episode(scheduler, controller, metrics.stall_duration(window), metrics.max_delay_ms(window),
                   metrics.delay_percentile(window, 95), load_time(run), run["simulated_s"], run["cpu_s"])


def load_time(run: dict) -> float | None:
    """The page's PLT, or the last transfer's completion; None if it did not finish."""
    if run["page"] is not None:
        return run["page"]["plt_s"]
    done, expected = run["web_done_ms"], run["web_flows"]
    return max(done) / 1000 if done and len(done) == expected else None


def print_episodes(episodes: list[Episode], as_json: bool, console: Console) -> None:
    if as_json:
        console.print_json(json.dumps([asdict(e) for e in episodes]))
        return
    table = Table(title="The motivating example in ns-3 (the video's metrics over the load's first "
                        f"{WINDOW_S:.0f} s)")
    for name in ("scheduler", "controller", "stall (s)", "max delay (ms)", "p95 delay (ms)", "page (s)",
                 "x real time (CPU)"):
        table.add_column(name, justify="right")
    for e in episodes:
        table.add_row(e.scheduler, e.controller, f"{e.stall_s:.2f}", f"{e.max_delay_ms:.0f}",
                      f"{e.p95_delay_ms:.0f}", "not done" if e.page_s is None else f"{e.page_s:.2f}",
                      f"{e.simulated_s / e.cpu_s:.0f}" if e.cpu_s else "-")
    console.print(table)
