# SPDX-License-Identifier: MIT
"""`confucius web`: make and check the synthetic page corpus, and the files the lab passes to
web-client / web-server."""

from __future__ import annotations

from pathlib import Path

import typer
from rich.console import Console
from rich.table import Table

from ..units import UnitError, parse_size
from . import generate
from .corpus import build_corpus, corpus_statistics, read_corpus, write_corpus
from .hosts import address_map, corpus_domains, write_hosts
from .page import PageError, read_page, write_page

app = typer.Typer(no_args_is_help=True, add_completion=False)
# Lines that name files are never broken: a path cut at the terminal's width (80 columns
# when the output is not a terminal) can no longer be copied or searched for.
console = Console(soft_wrap=True)

# statistic -> (target key or None, how to print it)
_ROWS = {
    "active_flows_median": ("active_flows_median", "{:g}"),
    "active_flows_p90": ("active_flows_p90", "{:g}"),
    "addresses_median": ("addresses_median", "{:g}"),
    "flows_median": (None, "{:g}"),
    "flows_per_address_median": (None, "{:.2f}"),
    "flow_bytes_median": ("flow_bytes_median", "{:,.0f} B"),
    "flow_bytes_in_range": (None, "{:.1%}"),
    "requests_median": ("requests_median", "{:g}"),
    "page_bytes_median": ("page_bytes_median", "{:,.0f} B"),
    "plt_median_s": (None, "{:.2f} s"),
}


def _fail(message: str) -> None:
    console.print(f"[red]error:[/red] {message}")
    raise typer.Exit(2)


def _show_statistics(stats: dict) -> None:
    table = Table(title="Sampled pages on the reference load (20 Mbit/s, 40 ms)")
    for column in ("statistic", "target", "corpus"):
        table.add_column(column)
    for name, (target_key, fmt) in _ROWS.items():
        target = fmt.format(generate.TARGETS[target_key]) if target_key else "-"
        table.add_row(name, target, fmt.format(stats[name]))
    console.print(table)


@app.command("generate")
def generate_command(out: Path = typer.Argument(..., help="New directory for the corpus."),
                     pages: int = typer.Option(1000, help="Number of sampled pages."),
                     seed: int = typer.Option(0, help="Seed; the same seed gives the same corpus."),
                     jobs: int = typer.Option(2, help="Worker processes.")):
    """Generate the seeded corpus: sampled pages, the amazon-like page, the sweep pages."""
    if pages < 1 or jobs < 1:
        _fail("--pages and --jobs must be at least 1")
    if (out / "manifest.json").exists():
        _fail(f"{out} already holds a corpus; choose another directory")
    with console.status(f"generating {pages} pages"):
        corpus = build_corpus(pages, seed, jobs)
        write_corpus(corpus, out)
        stats = corpus_statistics(corpus.sampled, jobs)
    console.print(f"wrote {len(corpus.pages)} pages to {out} ({corpus.manifest['domains']} domains)")
    _show_statistics(stats)


@app.command("stats")
def stats_command(corpus: Path = typer.Argument(..., help="A corpus directory.")):
    """Statistics of a corpus' sampled pages against the calibration targets."""
    try:
        loaded = read_corpus(corpus)
    except PageError as err:
        _fail(str(err))
    _show_statistics(corpus_statistics(loaded.sampled))


@app.command("validate")
def validate_command(files: list[Path] = typer.Argument(..., help="Page description files.")):
    """Check page descriptions; exit status 2 if any is invalid."""
    bad = 0
    for path in files:
        try:
            page = read_page(path)
            console.print(f"{path}: ok ({len(page.objects)} objects, {len(page.domains)} domains)")
        except PageError as err:
            console.print(f"[red]{err}[/red]")
            bad += 1
    if bad:
        raise typer.Exit(2)


@app.command("sweep")
def sweep_command(out: Path = typer.Argument(..., help="Page file to write."),
                  flows: int = typer.Option(..., help="Number of parallel objects (domains)."),
                  size: str = typer.Option(..., help="Size of each object, e.g. 15kb, 9mb.")):
    """Write a synthetic page: FLOWS objects of SIZE, all at once, each on its own domain."""
    try:
        page = generate.sweep_page(flows, int(parse_size(size)))
    except (UnitError, ValueError) as err:
        _fail(str(err))
    write_page(page, out)
    console.print(f"wrote {page.id} to {out}")


@app.command("hosts")
def hosts_command(out: Path = typer.Argument(..., help="Hosts file to write."),
                  network: str = typer.Option("10.88.0.0/24", help="Network the addresses come from."),
                  domains: int = typer.Option(None, help="Map d0..d(N-1).web.test (corpus domains)."),
                  page: Path = typer.Option(None, help="Map the domains of this page instead.")):
    """Write the domain -> address mapping that web-client and web-server read."""
    if (domains is None) == (page is None):
        _fail("give exactly one of --domains N or --page FILE")
    try:
        names = corpus_domains(domains) if page is None else read_page(page).domains
        write_hosts(address_map(names, network), out)
    except (PageError, ValueError) as err:
        _fail(str(err))
    console.print(f"wrote {len(names)} addresses to {out}")
