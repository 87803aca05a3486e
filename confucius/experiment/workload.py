# SPDX-License-Identifier: MIT
"""The pages a scenario loads, made real: generated from the corpus seed, read from a corpus
directory or from page files, and their digests (a changed page is a new measurement).

Generated pages are the same as `confucius web generate --seed S` writes (the generator is
deterministic per seed and page), so a scenario needs no corpus on disk.
"""

from __future__ import annotations

import hashlib
import json
from functools import lru_cache
from pathlib import Path

from confucius.web import generate
from confucius.web.page import Page, PageError, read_page

from .scenario import NAMED_PAGE, PageRef, Scenario, ScenarioError


@lru_cache(maxsize=None)
def _generated(seed: int, name: str) -> Page:
    match = NAMED_PAGE.match(name)
    if name == "amazon":
        return generate.amazon_page(seed)
    if match.group(2):
        return generate.sweep_page(int(match.group(2)), int(match.group(3)))
    return generate.sampled_page(seed, int(name[1:]))


@lru_cache(maxsize=None)
def _from_file(path: Path) -> Page:
    return read_page(path)


def page(scenario: Scenario, ref: PageRef) -> Page:
    """The page `ref` stands for in `scenario`."""
    try:
        if ref.file is not None:
            return _from_file(ref.file)
        if scenario.web.corpus is not None:
            return _from_file(scenario.web.corpus / "pages" / f"{ref.name}.json")
        return _generated(scenario.seed, ref.name)
    except (PageError, OSError) as err:
        raise ScenarioError(f"{scenario.path}: page {ref.key}: {err}") from None


def page_digest(page_: Page) -> str:
    """Identifies a page's content: a changed page is a new measurement."""
    text = json.dumps(page_.to_dict(), sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:16]
