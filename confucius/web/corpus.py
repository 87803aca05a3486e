# SPDX-License-Identifier: MIT
"""A corpus on disk: `manifest.json` and one page description per file in `pages/`.

The manifest records how the corpus was made (generator version, seed), the calibration
targets and the reference network, which pages are the sampled population (the ones the
statistics are about) and which are named workloads (the amazon-like page, the sweeps).
"""

from __future__ import annotations

import json
import os
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from functools import partial
from pathlib import Path

import numpy as np

from . import generate
from .page import Page, PageError, read_page, write_page
from .reference import REFERENCE_RATE_BPS, REFERENCE_RTT_S, reference_load

CORPUS_FORMAT = "confucius-web-corpus/1"


@dataclass(frozen=True)
class Corpus:
    manifest: dict
    pages: dict[str, Page]

    @property
    def sampled(self) -> list[Page]:
        return [self.pages[i] for i in self.manifest["sampled"]]


def build_corpus(pages: int = 1000, seed: int = 0, jobs: int | None = None) -> Corpus:
    """Every page depends only on (seed, index), so the result is the same for any `jobs`."""
    if pages < 1:
        raise ValueError(f"pages must be at least 1, got {pages}")
    jobs = jobs or min(2, os.cpu_count() or 1)
    with ProcessPoolExecutor(max_workers=jobs) as pool:
        sampled = list(pool.map(partial(generate.sampled_page, seed), range(pages), chunksize=25))
        amazon = pool.submit(generate.amazon_page, seed).result()
    named = [amazon] + generate.sweep_pages()
    every = sampled + named
    manifest = {
        "format": CORPUS_FORMAT,
        "generator_version": generate.GENERATOR_VERSION,
        "seed": seed,
        "targets": generate.TARGETS,
        "reference_network": {"rate_bps": REFERENCE_RATE_BPS, "rtt_s": REFERENCE_RTT_S},
        "domains": max(len(p.domains) for p in every),
        "sampled": [p.id for p in sampled],
        "named": [p.id for p in named],
    }
    return Corpus(manifest, {p.id: p for p in every})


def write_corpus(corpus: Corpus, directory) -> None:
    directory = Path(directory)
    if (directory / "manifest.json").exists():
        raise FileExistsError(f"{directory} already holds a corpus; choose another directory")
    (directory / "pages").mkdir(parents=True, exist_ok=True)
    for page in corpus.pages.values():
        write_page(page, directory / "pages" / f"{page.id}.json")
    (directory / "manifest.json").write_text(json.dumps(corpus.manifest, indent=1) + "\n")


def read_corpus(directory) -> Corpus:
    directory = Path(directory)
    try:
        manifest = json.loads((directory / "manifest.json").read_text())
    except OSError as err:
        raise PageError(f"{directory} is not a corpus: cannot read manifest.json ({err.strerror})") from err
    except json.JSONDecodeError as err:
        raise PageError(f"{directory}/manifest.json is not JSON: {err}") from err
    if manifest.get("format") != CORPUS_FORMAT:
        raise PageError(f"{directory}/manifest.json: format is {manifest.get('format')!r}, "
                        f"expected {CORPUS_FORMAT!r}")
    ids = manifest["sampled"] + manifest["named"]
    return Corpus(manifest, {i: read_page(directory / "pages" / f"{i}.json") for i in ids})


def corpus_statistics(pages: list[Page], jobs: int | None = None) -> dict[str, float]:
    """The figures the corpus is calibrated to, measured on `pages` (the sampled population).

    Flows are the connections of the reference load; flow sizes count the connections that
    carried at least one response (a connection opened but not used carries no response).
    """
    jobs = jobs or min(2, os.cpu_count() or 1)
    with ProcessPoolExecutor(max_workers=jobs) as pool:
        loads = list(pool.map(reference_load, pages, chunksize=25))
    flow_bytes = np.array([b for load in loads for b in load.flow_bytes if b > 0])
    active = np.array([load.peak_active for load in loads])
    flows = np.array([load.connections for load in loads])
    addresses = np.array([len(p.domains) for p in pages])
    low, high = generate.TARGETS["flow_bytes_low"], generate.TARGETS["flow_bytes_high"]
    return {
        "active_flows_median": float(np.median(active)),
        "active_flows_p90": float(np.percentile(active, 90)),
        "addresses_median": float(np.median(addresses)),
        "flows_median": float(np.median(flows)),
        "flows_per_address_median": float(np.median(flows / addresses)),
        "flow_bytes_median": float(np.median(flow_bytes)),
        "flow_bytes_in_range": float(np.mean((flow_bytes >= low) & (flow_bytes <= high))),
        "requests_median": float(np.median([len(p.objects) for p in pages])),
        "page_bytes_median": float(np.median([p.total_bytes for p in pages])),
        "plt_median_s": float(np.median([load.plt for load in loads])),
    }
