# SPDX-License-Identifier: MIT
"""`confucius sim`: the ns-3 simulator (sim/README.md) from the command line.

`confucius sim episode` runs the motivating example in ns-3 under each scheduler: the
video flow (rtflow's controllers) settles alone, then a page's objects arrive as TCP
transfers; it prints the video's stall and frame delay over the load and the load's time,
with the same metrics as the lab (confucius/metrics.py).
"""

import json
import subprocess
import tempfile
from dataclasses import asdict, dataclass
from pathlib import Path

import typer
from rich.console import Console
from rich.table import Table

from confucius import metrics, rtflow, units

REPO = Path(__file__).resolve().parents[1]
BOTTLENECK = REPO / "build" / "sim" / "bottleneck"
# After the page starts, the window the video's metrics cover (as the lab's page window).
WINDOW_S = 4.0

app = typer.Typer(no_args_is_help=True)


class SimError(RuntimeError):
    """The simulator is missing or refused its options."""


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


def run_bottleneck(args: list[str], binary: Path = BOTTLENECK) -> dict:
    """One run of build/sim/bottleneck; its JSON output."""
    if not binary.is_file():
        raise SimError(f"{binary} is not built: run `make sim`")
    result = subprocess.run([str(binary), *args], capture_output=True, text=True)
    if result.returncode != 0:
        raise SimError(result.stderr.strip().splitlines()[-1] if result.stderr.strip() else
                       f"bottleneck exited with {result.returncode}")
    return json.loads(result.stdout)


def episode(scheduler: str, controller: str, link: list[str], objects: int, object_bytes: int,
            settle_s: float, binary: Path = BOTTLENECK) -> Episode:
    """The video alone for `settle_s`, then `objects` TCP transfers of `object_bytes`."""
    with tempfile.TemporaryDirectory() as scratch:
        log = Path(scratch) / "frames.csv"
        run = run_bottleneck([f"--scheduler={scheduler}", f"--rt={controller}", "--web=tcp",
                              f"--web-flows={objects}", f"--web-bytes={object_bytes}",
                              f"--web-start={settle_s}s", f"--duration={settle_s + 2 * WINDOW_S + 2}s",
                              f"--frame-log={log}", *link], binary)
        frames = rtflow.read_frames(log)
    load = metrics.in_window(frames, int(settle_s * 1e9), int((settle_s + WINDOW_S) * 1e9))
    done = run["web_done_ms"]
    return Episode(scheduler, controller, metrics.stall_duration(load), metrics.max_delay_ms(load),
                   metrics.delay_percentile(load, 95),
                   max(done) / 1000 if len(done) == objects else None, run["simulated_s"], run["cpu_s"])


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


@app.command("episode")
def episode_command(
        schedulers: str = typer.Option("pfifo,fq_codel,confucius,confucius-fixed", help="Comma-separated."),
        controller: str = typer.Option("gcc", help="The video's controller: gcc, copa or fixed."),
        rate: str = typer.Option("20mbit", help="Bottleneck rate."),
        trace: Path = typer.Option(None, help="A 'time_s Mbps' trace instead of a constant rate."),
        rtt: str = typer.Option("40ms", help="Round-trip propagation delay."),
        buffer: int = typer.Option(1000, help="The scheduler's limit, packets."),
        objects: int = typer.Option(9, help="The page's objects (one TCP connection each)."),
        object_size: str = typer.Option("250kb", help="Each object's size."),
        settle: str = typer.Option("10s", help="The video alone before the page."),
        as_json: bool = typer.Option(False, "--json", help="JSON instead of a table."),
        binary: Path = typer.Option(BOTTLENECK, help="The bottleneck program.")) -> None:
    """Run the motivating example in ns-3 under each scheduler and print the video's metrics."""
    console = Console()
    try:
        link = [f"--rtt={units.parse_time(rtt)}s", f"--buffer={buffer}"]
        link.append(f"--trace={trace}" if trace else f"--rate={units.parse_rate(rate):.0f}bps")
        size, settle_s = int(units.parse_size(object_size)), units.parse_time(settle)
        episodes = [episode(name.strip(), controller, link, objects, size, settle_s, binary)
                    for name in schedulers.split(",") if name.strip()]
    except (SimError, units.UnitError) as err:
        console.print(f"[red]error:[/red] {err}")
        raise typer.Exit(2)
    print_episodes(episodes, as_json, console)
