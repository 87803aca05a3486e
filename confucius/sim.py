# SPDX-License-Identifier: MIT
"""`confucius sim`: the ns-3 simulator (sim/README.md) from the command line.

`confucius sim episode` runs the motivating example in ns-3 under each scheduler: the
video flow (rtflow's controllers) settles alone, then a page loads (a corpus page with the
browser's rules, or N parallel TCP transfers); it prints the video's stall and frame delay
over the load and the load's time, with the same metrics as the lab (confucius/metrics.py).
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
from confucius.web import generate
from confucius.web.page import Page, PageError, read_page

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


def write_sim_page(page: Page, path: Path) -> Path:
    """The page as the simulator reads it: one object per line, `id domain size parent|-`."""
    lines = []
    for o in page.objects:
        if any(c.isspace() for c in o.id + o.domain):
            raise SimError(f"page {page.id}: object {o.id!r} or its domain has a space")
        lines.append(f"{o.id} {o.domain} {o.size} {o.parent or '-'}")
    path.write_text("\n".join(lines) + "\n")
    return path


def named_page(name: str, seed: int = 0) -> Page:
    """`amazon` (the demo's page) or a confucius-web-page/1 file."""
    if name == "amazon":
        return generate.amazon_page(seed)
    try:
        return read_page(Path(name))
    except (OSError, PageError) as err:
        raise SimError(f"page {name}: {err}") from None


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


@app.command("episode")
def episode_command(
        schedulers: str = typer.Option("pfifo,fq_codel,confucius,confucius-fixed", help="Comma-separated."),
        controller: str = typer.Option("gcc", help="The video's controller: gcc, copa or fixed."),
        rate: str = typer.Option("20mbit", help="Bottleneck rate."),
        trace: Path = typer.Option(None, help="A 'time_s Mbps' trace instead of a constant rate."),
        rtt: str = typer.Option("40ms", help="Round-trip propagation delay."),
        buffer: int = typer.Option(1000, help="The scheduler's limit, packets."),
        page: str = typer.Option("amazon", help="The page: 'amazon' (the demo's), a page file "
                                                "(confucius-web-page/1), or 'none' for --objects."),
        objects: int = typer.Option(9, help="With --page none: parallel TCP transfers."),
        object_size: str = typer.Option("250kb", help="With --page none: each transfer's size."),
        settle: str = typer.Option("10s", help="The video alone before the page."),
        as_json: bool = typer.Option(False, "--json", help="JSON instead of a table."),
        binary: Path = typer.Option(BOTTLENECK, help="The bottleneck program.")) -> None:
    """Run the motivating example in ns-3 under each scheduler and print the video's metrics."""
    console = Console()
    try:
        link = [f"--rtt={units.parse_time(rtt)}s", f"--buffer={buffer}"]
        link.append(f"--trace={trace}" if trace else f"--rate={units.parse_rate(rate):.0f}bps")
        settle_s = units.parse_time(settle)
        with tempfile.TemporaryDirectory() as scratch:
            if page == "none":
                load = ["--web=tcp", f"--web-flows={objects}",
                        f"--web-bytes={int(units.parse_size(object_size))}"]
            else:
                load = [f"--page={write_sim_page(named_page(page), Path(scratch) / 'page.txt')}"]
            episodes = [episode(name.strip(), controller, link, load, settle_s, binary)
                        for name in schedulers.split(",") if name.strip()]
    except (SimError, units.UnitError) as err:
        console.print(f"[red]error:[/red] {err}")
        raise typer.Exit(2)
    print_episodes(episodes, as_json, console)
