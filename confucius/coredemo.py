# SPDX-License-Identifier: MIT
"""`confucius core demo`: the motivating example through the scheduling core itself.

One real-time flow with data always waiting, then a page load of 9 new flows, on a
20 Mbit/s link (sim/share_trace.c drives the C core). Each flow group's share of the
link every 50 ms under Confucius, next to fair queueing: paper 000 Fig. 4(d) vs 4(b).
"""

import csv
import io
import subprocess
from pathlib import Path

import typer
from rich.console import Console
from rich.table import Table

REPO = Path(__file__).resolve().parents[1]
SHARE_TRACE = REPO / "build" / "core" / "share_trace"

app = typer.Typer(no_args_is_help=True)


def share_trace(binary: Path = SHARE_TRACE) -> list[dict[str, float]]:
    """Rows of time_ms and the RT and web shares under Confucius and fair queueing."""
    if not binary.is_file():
        raise FileNotFoundError(f"{binary} is not built: run `make {binary.relative_to(REPO)}`")
    out = subprocess.run([str(binary)], check=True, capture_output=True, text=True).stdout
    return [{k: float(v) for k, v in row.items()} for row in csv.DictReader(io.StringIO(out))]


def print_table(rows: list[dict[str, float]], console: Console) -> None:
    table = Table(title="Share of a 20 Mbit/s link: 1 real-time flow, 9 Web flows arrive at t = 0")
    for name in ("t (ms)", "RT Confucius", "Web Confucius", "RT fair queueing", "Web fair queueing"):
        table.add_column(name, justify="right")
    for r in rows:
        table.add_row(f"{r['time_ms']:.0f}", f"{r['confucius_rt']:.3f}", f"{r['confucius_web']:.3f}",
                      f"{r['fq_rt']:.3f}", f"{r['fq_web']:.3f}")
    console.print(table)


def plot(rows: list[dict[str, float]], path: Path) -> Path:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    t = [r["time_ms"] / 1000 for r in rows]
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.6), sharey=True)
    for ax, prefix, title in ((axes[0], "fq", "Fair queueing (Fig. 4(b))"),
                              (axes[1], "confucius", "Confucius (Fig. 4(d))")):
        rt = [r[f"{prefix}_rt"] for r in rows]
        web = [r[f"{prefix}_web"] for r in rows]
        ax.stackplot(t, rt, web, labels=["real-time flow", "9 Web flows"], step="pre",
                     colors=["#1f77b4", "#ffbf00"], alpha=0.85)
        ax.axhline(0.1, color="red", linestyle="--", linewidth=1, label="fair share 1/10")
        ax.set_title(title)
        ax.set_xlabel("time since the page load began (s)")
        ax.set_xlim(t[0], t[-1])
        ax.set_ylim(0, 1)
    axes[0].set_ylabel("share of the link")
    axes[1].legend(loc="lower right", fontsize=8)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


@app.command()
def demo(out: Path = typer.Option(Path("results/core-demo/shares.png"), help="Where to write the plot."),
         binary: Path = typer.Option(SHARE_TRACE, help="The share_trace program.")) -> None:
    """Print each flow group's share every 50 ms under Confucius and fair queueing, and plot it."""
    console = Console()
    try:
        rows = share_trace(binary)
    except FileNotFoundError as err:
        console.print(f"[red]error:[/red] {err}")
        raise typer.Exit(2)
    print_table(rows, console)
    console.print(f"plot: {plot(rows, out)}")
