# SPDX-License-Identifier: MIT
"""`make upstream`: this repository as a net-next series and an iproute2 patch.

    python3 upstream/series.py kernel --base LINUX_GIT --out DIR
    python3 upstream/series.py iproute2 --tree IPROUTE2_TREE --out DIR

Everything the patches hold comes from the repository's files, transformed only as
upstream/manifest.toml says (file paths, includes, the version conditionals resolved for
the base by upstream/resolve.py, the UAPI moved into pkt_sched.h, the tc cases converted
by upstream/tdc_cases.py). The files the patches change are taken from the base itself,
and the patches are made by git in a scratch repository holding only those files, so they
apply to the whole tree unchanged (`git am`, upstream/check.sh).
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import tomllib
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import resolve  # noqa: E402
import tdc_cases  # noqa: E402

REPO = HERE.parent
MANIFEST = HERE / "manifest.toml"
COVER_TEMPLATE = HERE / "cover-letter.txt"
RESULTS = REPO / "docs" / "RESULTS.md"
INCLUDE = re.compile(r'^(\s*#\s*include\s*)(["<])([^">]+)([">])(.*)$')


class SeriesError(RuntimeError):
    """The series cannot be made from these inputs; the message says why."""


@dataclass(frozen=True)
class Author:
    name: str
    email: str
    date: str

    @property
    def ident(self) -> str:
        return f"{self.name} <{self.email}>"


def load_manifest(path: Path = MANIFEST) -> dict:
    with open(path, "rb") as file:
        return tomllib.load(file)


def kernel_target(manifest: dict) -> resolve.Target:
    target = manifest["target"]
    return resolve.Target(tuple(target["version"]), frozenset(target.get("defined", ())),
                          frozenset(target.get("undefined", ())),
                          substituted=tuple(target.get("substituted", {}).items()))


# ------------------------------------------------------------ the files' text

def rewrite_includes(text: str, includes: dict[str, str]) -> str:
    """Each include the manifest names spelled as the tree spells it, or gone."""
    out = []
    for line in text.split("\n"):
        match = INCLUDE.match(line)
        if match and match.group(3) in includes:
            target = includes[match.group(3)]
            if not target:
                continue
            line = f"{match.group(1)}{target}{match.group(5)}"
        out.append(line)
    return resolve.single_blank_lines(out)


def drop_lines(text: str, patterns: list[str]) -> str:
    compiled = [re.compile(p) for p in patterns]
    return "\n".join(line for line in text.split("\n") if not any(p.search(line) for p in compiled))


def tree_source(manifest: dict, repo_path: str, target: resolve.Target) -> str:
    """A repository file as the tree carries it."""
    text = (REPO / repo_path).read_text()
    text = drop_lines(text, manifest.get("drop", {}).get(repo_path, []))
    text = resolve.resolve(text, target, repo_path).text
    return rewrite_includes(text, manifest.get("includes", {}))


def uapi_body(header: str) -> str:
    """What is inside the header's include guard, less its includes and the blank
    lines around it."""
    lines = header.split("\n")
    guard = next((i for i, line in enumerate(lines) if re.match(r"^#ifndef\s+_UAPI_\w+_H\b", line)), None)
    end = max((i for i, line in enumerate(lines) if line.startswith("#endif")), default=None)
    if guard is None or end is None or not lines[guard + 1].startswith("#define"):
        raise SeriesError("the UAPI header has no include guard (#ifndef _UAPI_..._H, #define, #endif)")
    body = [line for line in lines[guard + 2:end] if not INCLUDE.match(line)]
    return "\n".join(body).strip("\n")


def insert_uapi(pkt_sched: str, body: str, heading: str) -> str:
    """The body at the end of pkt_sched.h, before its closing #endif."""
    lines = pkt_sched.rstrip("\n").split("\n")
    if not lines[-1].startswith("#endif"):
        raise SeriesError("pkt_sched.h does not end with #endif")
    head = "\n".join(lines[:-1]).rstrip("\n")
    return f"{head}\n\n{heading}\n\n{body}\n\n{lines[-1]}\n"


def insert_kconfig(kconfig: str, after: str, entry: str) -> str:
    """The entry after the block of `config AFTER` (which ends at the next blank line
    followed by a new keyword)."""
    lines = kconfig.split("\n")
    start = next((i for i, line in enumerate(lines) if line == f"config {after}"), None)
    if start is None:
        raise SeriesError(f"no 'config {after}' in the Kconfig to put the entry after")
    end = start + 1
    while end < len(lines) and not (lines[end] == "" and end + 1 < len(lines)
                                     and re.match(r"^(menu)?config |^(end)?menu|^comment |^if |^endif",
                                                  lines[end + 1])):
        end += 1
    new = entry.strip("\n").split("\n")
    return "\n".join(lines[:end] + [""] + new + lines[end:])


def insert_line_after(text: str, anchor: str, line: str, what: str) -> str:
    lines = text.split("\n")
    index = next((i for i, current in enumerate(lines) if current.startswith(anchor)), None)
    if index is None:
        raise SeriesError(f"no line starting with {anchor!r} in {what}")
    return "\n".join(lines[:index + 1] + [line] + lines[index + 1:])


def maintainers_section(maintainers: str, title: str, author: Author, lines: list[str],
                        files: list[str]) -> str:
    """MAINTAINERS with our section (added where its title sorts, or brought up to date)
    listing `files`."""
    section = [title, f"M:	{author.ident}", *lines, *(f"F:	{f}" for f in sorted(files))]
    text = maintainers.split("\n")
    if title in text:
        start = text.index(title)
        end = text.index("", start)
        return "\n".join(text[:start] + section + text[end:])
    titles = [i for i in range(1, len(text)) if text[i - 1] == "" and text[i] and
              i + 1 < len(text) and re.match(r"^[A-Z]:\t", text[i + 1])]
    if not titles:
        raise SeriesError("MAINTAINERS has no sections")
    place = titles[_least_disorder([text[i].upper() for i in titles], title.upper())]
    return "\n".join(text[:place] + section + [""] + text[place:])


def _least_disorder(titles: list[str], title: str) -> int:
    """Where `title` goes in a list sorted but for a few entries (MAINTAINERS has some out
    of place): the index with the fewest titles before it that sort after, plus after it
    that sort before."""
    after_before = 0
    before_after = sum(1 for t in titles if t < title)
    best, best_cost = 0, before_after
    for i, current in enumerate(titles):
        after_before += current > title
        before_after -= current < title
        if after_before + before_after < best_cost:
            best, best_cost = i + 1, after_before + before_after
    if best == len(titles):
        raise SeriesError("our MAINTAINERS section would go after the last one")
    return best


# ---------------------------------------------------------------------- git

def git(directory: Path, *args: str, author: Author | None = None, text: str | None = None) -> str:
    env = dict(os.environ)
    config = []
    if author:
        config = ["-c", f"user.name={author.name}", "-c", f"user.email={author.email}"]
        env.update(GIT_AUTHOR_DATE=author.date, GIT_COMMITTER_DATE=author.date)
    result = subprocess.run(["git", "-C", str(directory), *config, *args], input=text, env=env,
                            capture_output=True, text=True)
    if result.returncode:
        raise SeriesError(f"git {' '.join(args)} failed in {directory}: {result.stderr.strip()}")
    return result.stdout


def base_file(base: Path, path: str) -> str | None:
    """The base's version of `path`, or None where it has none."""
    result = subprocess.run(["git", "-C", str(base), "show", f"base:{path}"],
                            capture_output=True, text=True)
    return result.stdout if result.returncode == 0 else None


def base_tdc_ids(base: Path, skip: str) -> set[str]:
    """The ids of tdc's own cases in the base."""
    listing = git(base, "ls-tree", "-r", "--name-only", "base", "tools/testing/selftests/tc-testing/tc-tests")
    ids: set[str] = set()
    for path in listing.split():
        if path.endswith(".json") and path != skip:
            ids |= set(re.findall(r'"id":\s*"([0-9a-fA-F]{4})"', base_file(base, path) or ""))
    return ids


def commit_message(subject: str, body: str, author: Author) -> str:
    return f"{subject}\n\n{body.strip()}\n\nSigned-off-by: {author.ident}\n"


# ------------------------------------------------------------- the kernel side

def kernel_files(manifest: dict, base: Path) -> dict[str, str]:
    """Every file the series leaves in the tree, by its tree path (MAINTAINERS apart)."""
    target = kernel_target(manifest)
    files = {tree: tree_source(manifest, repo, target) + "\n" for repo, tree in manifest["files"].items()}
    files = {path: text.rstrip("\n") + "\n" for path, text in files.items()}

    uapi = manifest["uapi"]
    files[uapi["into"]] = insert_uapi(_base(base, uapi["into"]), uapi_body((REPO / uapi["from"]).read_text()),
                                      uapi["heading"])
    kconfig = manifest["kconfig"]
    files[kconfig["file"]] = insert_kconfig(_base(base, kconfig["file"]), kconfig["after"], kconfig["entry"])
    makefile = manifest["makefile"]
    files[makefile["file"]] = insert_line_after(_base(base, makefile["file"]), makefile["after"],
                                                makefile["line"], makefile["file"])
    tdc = manifest["tdc"]
    cases = tdc_cases.tdc_cases(REPO / tdc["from"], base_tdc_ids(base, tdc["into"]))
    files[tdc["into"]] = tdc_cases.dumps(cases)
    files[tdc["config"]] = insert_line_after(_base(base, tdc["config"]), tdc["config_after"],
                                             tdc["config_line"], tdc["config"])
    return files


def _base(base: Path, path: str) -> str:
    text = base_file(base, path)
    if text is None:
        raise SeriesError(f"the base has no {path}")
    return text


def make_kernel_series(manifest: dict, base: Path, out: Path) -> list[Path]:
    if subprocess.run(["git", "-C", str(base), "rev-parse", "-q", "--verify", "base^{commit}"],
                      capture_output=True).returncode:
        raise SeriesError(f"{base} is no git tree with a tag `base` (upstream/fetch-base.sh makes one)")
    author = Author(**manifest["author"])
    files = kernel_files(manifest, base)
    patches = manifest["patch"]
    listed = [path for patch in patches for path in patch["files"] if path != "MAINTAINERS"]
    missing = sorted(set(files) - set(listed))
    if missing:
        raise SeriesError(f"the manifest's patches leave out {', '.join(missing)}")

    with tempfile.TemporaryDirectory(prefix="upstream-") as scratch_name:
        scratch = Path(scratch_name)
        git(scratch, "init", "-q")
        touched = sorted({p for patch in patches for p in patch["files"]})
        for path in touched:
            text = base_file(base, path)
            if text is not None:
                _write(scratch / path, text)
        git(scratch, "add", "-A")
        git(scratch, "commit", "-q", "-m", "base", author=author)
        added: list[str] = []
        for patch in patches:
            for path in patch["files"]:
                if path == "MAINTAINERS":
                    continue
                if base_file(base, path) is None:
                    added.append(path)
                _write(scratch / path, files[path])
            if "MAINTAINERS" in patch["files"]:
                section = manifest["maintainers"]
                maintainers = (scratch / "MAINTAINERS").read_text()
                _write(scratch / "MAINTAINERS", maintainers_section(maintainers, section["title"], author,
                                                                    section["lines"], added))
            commit_all(scratch, author, commit_message(patch["subject"], patch["body"], author))
        format_patches(scratch, out, len(patches), author, "--cover-letter", "--subject-prefix=PATCH net-next")
    names = sorted(out.glob("*.patch"))
    fill_cover_letter(names[0], manifest, base)
    return names


def commit_all(scratch: Path, author: Author, message: str) -> None:
    git(scratch, "add", "-A")
    git(scratch, "commit", "-q", "-F", "-", author=author, text=message)


def format_patches(scratch: Path, out: Path, count: int, author: Author, *options: str) -> None:
    """The last `count` commits of `scratch` as patches in `out`, emptied first."""
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    git(scratch, "format-patch", "-q", *options, "--no-signature", "-o", str(out), f"HEAD~{count}",
        author=author)


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


# ----------------------------------------------------------------- the cover letter

def results_tables(manifest: dict, results: Path = RESULTS) -> str:
    """The tables the manifest names, from docs/RESULTS.md, each under its title."""
    text = results.read_text()
    out = []
    for wanted in manifest["results"]:
        section = _section(text, wanted["section"])
        tables = _tables(section)
        if len(tables) < wanted["table"]:
            raise SeriesError(f"docs/RESULTS.md's section {wanted['section']!r} has {len(tables)} "
                              f"tables, the manifest wants table {wanted['table']}")
        out.append(f"{wanted['title']}:\n\n{_plain_table(tables[wanted['table'] - 1])}")
    return "\n\n".join(out)


def _section(text: str, title: str) -> str:
    match = re.search(rf"^##+ {re.escape(title)}\n(.*?)(?=^## |\Z)", text, flags=re.M | re.S)
    if not match:
        raise SeriesError(f"docs/RESULTS.md has no section {title!r} (upstream/manifest.toml [[results]])")
    return match.group(1)


def _tables(section: str) -> list[list[str]]:
    tables, current = [], []
    for line in section.split("\n"):
        if line.startswith("|"):
            current.append(line)
        elif current:
            tables.append(current)
            current = []
    if current:
        tables.append(current)
    return tables


def _plain_table(rows: list[str]) -> str:
    """A markdown table as aligned plain text, as a mail shows it."""
    cells = [[cell.strip().replace("**", "") for cell in row.strip().strip("|").split("|")]
             for row in rows if not re.fullmatch(r"\|[-:| ]+\|", row.strip())]
    widths = [max(len(row[i]) for row in cells if i < len(row)) for i in range(len(cells[0]))]
    lines = ["  ".join(cell.ljust(widths[i]) for i, cell in enumerate(row)).rstrip() for row in cells]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def fill_cover_letter(path: Path, manifest: dict, base: Path) -> None:
    cover = path.read_text()
    template = COVER_TEMPLATE.read_text()
    subject, _, blurb = template.partition("\n\n")
    base_name = git(base, "log", "-1", "--format=%s", "base").strip()
    base_commit = git(base, "rev-parse", "base").strip()
    blurb = blurb.replace("@BASE@", base_name).replace("@RESULTS@", results_tables(manifest))
    if "*** SUBJECT HERE ***" not in cover or "*** BLURB HERE ***" not in cover:
        raise SeriesError("git format-patch wrote a cover letter without its placeholders")
    cover = cover.replace("*** SUBJECT HERE ***", subject.strip()).replace("*** BLURB HERE ***", blurb.strip())
    path.write_text(cover.rstrip("\n") + f"\n\nbase-commit: {base_commit}\n")


# ------------------------------------------------------------- the iproute2 side

def iproute2_target(manifest: dict, tree: Path) -> resolve.Target:
    ipr = manifest["iproute2"]
    # The callbacks take a const struct qdisc_util * since iproute2 6.9; the tree says which.
    const = "const" if "parse_qopt)(const struct qdisc_util" in (tree / "tc/tc_util.h").read_text() else ""
    return resolve.Target((0, 0, 0), frozenset(), frozenset(ipr.get("undefined", ())),
                          substituted=tuple({**ipr.get("substituted", {}), "QDISC_UTIL_CONST": const}.items()),
                          headers=tuple(ipr.get("headers", {}).items()))


def make_iproute2_patches(manifest: dict, tree: Path, out: Path) -> list[Path]:
    ipr = manifest["iproute2"]
    author = Author(**manifest["author"])
    for needed in ("tc/Makefile", "tc/tc_util.h", "include/uapi/linux/pkt_sched.h"):
        if not (tree / needed).is_file():
            raise SeriesError(f"{tree} is no iproute2 tree: it has no {needed}")
    target = iproute2_target(manifest, tree)
    source = resolve.resolve((REPO / ipr["source"]).read_text(), target, ipr["source"]).text
    source = rewrite_includes(source, ipr.get("includes", {})).rstrip("\n") + "\n"
    uapi = manifest["uapi"]
    pkt_sched = insert_uapi((tree / uapi["into"]).read_text(), uapi_body((REPO / uapi["from"]).read_text()),
                            uapi["heading"])
    makefile = insert_line_after((tree / "tc/Makefile").read_text(), ipr["makefile_after"],
                                 ipr["makefile_line"], "tc/Makefile")

    with tempfile.TemporaryDirectory(prefix="upstream-iproute2-") as scratch_name:
        scratch = Path(scratch_name)
        git(scratch, "init", "-q")
        for path in ("tc/Makefile", uapi["into"]):
            _write(scratch / path, (tree / path).read_text())
        git(scratch, "add", "-A")
        git(scratch, "commit", "-q", "-m", "base", author=author)
        _write(scratch / uapi["into"], pkt_sched)
        commit_all(scratch, author, commit_message(ipr["uapi_subject"], ipr["uapi_body"], author))
        _write(scratch / ipr["into"], source)
        _write(scratch / "tc/Makefile", makefile)
        _write(scratch / ipr["man_into"], (REPO / ipr["man"]).read_text())
        commit_all(scratch, author, commit_message(ipr["subject"], ipr["body"], author))
        format_patches(scratch, out, 2, author, "--subject-prefix=PATCH iproute2-next")
    return sorted(out.glob("*.patch"))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="what", required=True)
    kernel = sub.add_parser("kernel", help="the net-next series")
    kernel.add_argument("--base", type=Path, required=True, help="the base's git tree (tag `base`)")
    kernel.add_argument("--out", type=Path, required=True)
    ipr = sub.add_parser("iproute2", help="the iproute2 patches")
    ipr.add_argument("--tree", type=Path, required=True, help="an iproute2 source tree")
    ipr.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)
    args.out = args.out.resolve()
    try:
        manifest = load_manifest()
        if args.what == "kernel":
            written = make_kernel_series(manifest, args.base, args.out)
        else:
            written = make_iproute2_patches(manifest, args.tree, args.out)
    except (SeriesError, resolve.ResolveError, tdc_cases.CaseError) as err:
        print(f"upstream/series.py: {err}", file=sys.stderr)
        return 1
    for path in written:
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
