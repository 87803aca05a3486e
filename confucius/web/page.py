# SPDX-License-Identifier: MIT
"""Page descriptions, format `confucius-web-page/1` (the same format `web-client` reads).

A page is a list of objects, each with an id, a domain, a size in bytes and an optional parent.
An object without a parent is requested when the load starts (the root document; or every
object of a synthetic `flows-N-size-B` page); any other object is requested when its parent has
fully arrived, so an object's dependency level is its depth in that tree.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

FORMAT = "confucius-web-page/1"


class PageError(ValueError):
    """A page description that cannot be used, with what is wrong and where."""


@dataclass(frozen=True)
class WebObject:
    id: str
    domain: str
    size: int
    parent: str | None = None


@dataclass(frozen=True)
class Page:
    id: str
    objects: tuple[WebObject, ...]

    def __post_init__(self):
        check_page(self)

    @property
    def domains(self) -> list[str]:
        """Distinct domains in order of first appearance."""
        return list(dict.fromkeys(o.domain for o in self.objects))

    @property
    def total_bytes(self) -> int:
        return sum(o.size for o in self.objects)

    def depths(self) -> dict[str, int]:
        by_id = {o.id: o for o in self.objects}
        depth: dict[str, int] = {}
        for o in self.objects:
            chain = []
            node = o
            while node.id not in depth and node.parent is not None:
                chain.append(node)
                node = by_id[node.parent]
            base = depth.setdefault(node.id, 0)
            for offset, n in enumerate(reversed(chain), start=1):
                depth[n.id] = base + offset
        return depth

    def to_dict(self) -> dict:
        return {"format": FORMAT, "id": self.id,
                "objects": [{"id": o.id, "domain": o.domain, "size": o.size, "parent": o.parent}
                            for o in self.objects]}


def check_page(page: Page) -> None:
    if not page.id:
        raise PageError("the page has an empty id")
    if not page.objects:
        raise PageError(f"page {page.id!r} has no objects")
    ids = set()
    for o in page.objects:
        _check_object(page.id, o)
        if o.id in ids:
            raise PageError(f"page {page.id!r}: object id {o.id!r} appears twice")
        ids.add(o.id)
    for o in page.objects:
        if o.parent is not None and o.parent not in ids:
            raise PageError(f"page {page.id!r}: object {o.id!r} has unknown parent {o.parent!r}")
    _check_acyclic(page)


def _check_object(page_id: str, o: WebObject) -> None:
    where = f"page {page_id!r}, object {o.id!r}"
    if not isinstance(o.id, str) or not o.id:
        raise PageError(f"page {page_id!r}: an object has no id")
    if not isinstance(o.domain, str) or not o.domain or any(c.isspace() or c == "/" for c in o.domain):
        raise PageError(f"{where}: domain {o.domain!r} is not a host name")
    if isinstance(o.size, bool) or not isinstance(o.size, int) or o.size < 0:
        raise PageError(f"{where}: size must be a whole number of bytes >= 0, got {o.size!r}")
    if o.parent is not None and not isinstance(o.parent, str):
        raise PageError(f"{where}: parent must be an object id or null, got {o.parent!r}")


def _check_acyclic(page: Page) -> None:
    """Every object must descend from an object without a parent; the others sit on a cycle."""
    children: dict[str, list[str]] = {}
    for o in page.objects:
        if o.parent is not None:
            children.setdefault(o.parent, []).append(o.id)
    reached = set()
    stack = [o.id for o in page.objects if o.parent is None]
    if not stack:
        raise PageError(f"page {page.id!r}: no object without a parent, the dependencies form a cycle")
    while stack:
        node = stack.pop()
        reached.add(node)
        stack.extend(children.get(node, ()))
    for o in page.objects:
        if o.id not in reached:
            raise PageError(f"page {page.id!r}: object {o.id!r} is on a dependency cycle (or below one)")


def page_from_dict(data) -> Page:
    if not isinstance(data, dict):
        raise PageError("a page description is a JSON object")
    unknown = set(data) - {"format", "id", "objects"}
    if unknown:
        raise PageError(f"unknown page field(s): {', '.join(sorted(unknown))}")
    if data.get("format") != FORMAT:
        raise PageError(f"format is {data.get('format')!r}, expected {FORMAT!r}")
    if not isinstance(data.get("id"), str):
        raise PageError("the page needs a string id")
    objects = data.get("objects")
    if not isinstance(objects, list):
        raise PageError(f"page {data['id']!r}: objects must be a list")
    return Page(data["id"], tuple(_object_from_dict(data["id"], i, o) for i, o in enumerate(objects)))


def _object_from_dict(page_id: str, index: int, data) -> WebObject:
    where = f"page {page_id!r}, object #{index}"
    if not isinstance(data, dict):
        raise PageError(f"{where}: an object is a JSON object")
    missing = {"id", "domain", "size"} - set(data)
    unknown = set(data) - {"id", "domain", "size", "parent"}
    if missing or unknown:
        raise PageError(f"{where}: missing field(s) {sorted(missing)}, unknown field(s) {sorted(unknown)}")
    return WebObject(data["id"], data["domain"], data["size"], data.get("parent"))


def read_page(path) -> Page:
    path = Path(path)
    try:
        data = json.loads(path.read_text())
    except OSError as err:
        raise PageError(f"cannot read {path}: {err.strerror}") from err
    except json.JSONDecodeError as err:
        raise PageError(f"{path}: not JSON: {err}") from err
    try:
        return page_from_dict(data)
    except PageError as err:
        raise PageError(f"{path}: {err}") from err


def write_page(page: Page, path) -> None:
    Path(path).write_text(json.dumps(page.to_dict(), separators=(",", ":")) + "\n")
