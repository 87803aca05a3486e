# SPDX-License-Identifier: MIT
"""`make upstream`'s series, checked as a netdev maintainer would (the cheap checks):
made afresh from the repository, applied with git am to a fresh tree of the base,
checkpatch --strict on every patch, the qdisc built with W=1 and C=1 (sparse); and the
iproute2 patches applied and built. tdc in a VM is `make upstream-check`
(upstream/README.md).

Needs the base (upstream/fetch-base.sh) and the kernel's sparse (make kmod-compat), which
make test builds first (mk/upstream.mk).
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "upstream"))

import series  # noqa: E402

BUILD = REPO / "build"
BASE = BUILD / "ktrees" / "upstream-7.3" / "git"
SPARSE = BUILD / "ktrees" / "sparse" / "bin" / "sparse"
WORK = BUILD / "upstream" / "test"     # kept between runs: the builds there are incremental
CHECK = REPO / "upstream" / "check.sh"


def check(*args: str | Path) -> subprocess.CompletedProcess:
    return subprocess.run([str(CHECK), *map(str, args)], capture_output=True, text=True)


def git(*args: str) -> str:
    return subprocess.run(["git", "-C", str(BASE), *args], capture_output=True, text=True, check=True).stdout


@pytest.fixture(scope="module")
def manifest() -> dict:
    return series.load_manifest()


@pytest.fixture(scope="module")
def made(tmp_path_factory, manifest) -> Path:
    """The series as the repository makes it now."""
    if not (BASE / ".git").exists():
        pytest.fail(f"no base at {BASE}: run `make upstream`")
    out = tmp_path_factory.mktemp("series")
    series.make_kernel_series(manifest, BASE, out)
    return out


@pytest.fixture(scope="module")
def applied(made) -> subprocess.CompletedProcess:
    return check("apply", made, BASE, WORK / "linux")


def test_a_base_that_is_no_tree_is_refused_and_nothing_is_written(manifest, tmp_path):
    out = tmp_path / "series"
    with pytest.raises(series.SeriesError, match="no git tree with a tag `base`"):
        series.make_kernel_series(manifest, tmp_path, out)
    assert not out.exists()


def test_the_target_defines_what_the_manifest_says_it_does(manifest):
    for name in manifest["target"]["defined"]:
        assert git("grep", "-l", "-E", rf"#\s*define\s+{name}\b", "base", "--", "include"), \
            f"the base defines no {name}, which upstream/manifest.toml says it does"
    for name in manifest["target"]["undefined"]:
        found = subprocess.run(["git", "-C", str(BASE), "grep", "-q", "-E", rf"#\s*define\s+{name}\b", "base",
                                "--", "include", "net", "Makefile", "scripts"])
        assert found.returncode == 1, f"the base defines {name}, which upstream/manifest.toml says it does not"


def test_the_series_applies_to_a_fresh_tree_of_the_base(applied):
    assert applied.returncode == 0, applied.stdout + applied.stderr
    assert re.search(r"applied \d+ patches to Linux", applied.stdout)


def test_checkpatch_strict_finds_nothing_in_any_patch(made, applied):
    assert applied.returncode == 0, "the series did not apply"
    result = check("checkpatch", made, WORK / "linux")
    assert result.returncode == 0, result.stdout + result.stderr


def test_the_qdisc_builds_with_w1_and_sparse_without_a_warning(applied):
    assert applied.returncode == 0, "the series did not apply"
    result = check("object", WORK / "linux", WORK / "obj-x86", SPARSE)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "without a warning" in result.stdout


def test_the_tree_has_what_the_repository_has(manifest, applied):
    """The series' files as the tree holds them after git am, each from its repository file."""
    assert applied.returncode == 0, "the series did not apply"
    tree = WORK / "linux"
    target = series.kernel_target(manifest)
    for repo_path, tree_path in manifest["files"].items():
        expected = series.tree_source(manifest, repo_path, target).rstrip("\n") + "\n"
        assert (tree / tree_path).read_text() == expected, tree_path
        assert "LINUX_VERSION_CODE" not in expected and "KERNEL_VERSION" not in expected
    pkt_sched = (tree / manifest["uapi"]["into"]).read_text()
    body = series.uapi_body((REPO / manifest["uapi"]["from"]).read_text())
    assert pkt_sched.count(body) == 1 and pkt_sched.rstrip().endswith(body + "\n\n#endif")
    assert "obj-$(CONFIG_NET_SCH_CONFUCIUS)" in (tree / "net/sched/Makefile").read_text()


# What belongs to the repository or to the out-of-tree module only: paths into the
# repository, version guards, the build switches and the linkage macro the series resolves.
OUT_OF_TREE = re.compile(r"(?<![\w/.-])(docs|tests|core|kernel|bench|sim)/|\.\./|LINUX_VERSION_CODE|"
                         r"KERNEL_VERSION|CFC_NOTIFY_IN_DEQUEUE|CFC_FN|STABLE_FROM|untold_")


def out_of_tree_lines(patches: list[Path]) -> list[str]:
    return [f"{patch.name}: {line}" for patch in patches for line in patch.read_text().split("\n")
            if line.startswith("+") and OUT_OF_TREE.search(line)]


def test_out_of_tree_lines_are_found(tmp_path):
    patch_text = "+ * confucius_impl.h (../core). See docs/ALGORITHM.md.\n+#if !CFC_NOTIFY_IN_DEQUEUE\n" \
                 "+F:\ttools/testing/selftests/tc-testing/tc-tests/qdiscs/confucius.json\n-docs/x\n"
    path = tmp_path / "out-of-tree.patch"
    path.write_text(patch_text)
    assert len(out_of_tree_lines([path])) == 2


def test_no_patch_carries_repository_paths_or_version_guards(made, iproute2_patches):
    """A reviewer reads the patches without the repository: nothing may point into it, and
    nothing of what only the out-of-tree build needs may be left."""
    patches = sorted(made.glob("000[1-9]-*.patch")) + iproute2_patches
    assert len(patches) == 4
    assert out_of_tree_lines(patches) == []


def test_our_maintainers_section_goes_where_it_sorts_despite_entries_out_of_place(manifest):
    author = series.Author(**manifest["author"])
    maintainers = "\n".join(["Intro", "", "ARM SOC", "M:\tx", "", "LPC32XX DMA", "M:\tx", "", "ARM SOD",
                             "M:\tx", "", "CONFIGFS", "M:\tx", "", "CONGATEC", "M:\tx", "", "ZZZ", "M:\tx", ""])
    out = series.maintainers_section(maintainers, "CONFUCIUS QDISC", author, ["S:\tMaintained"], ["net/b", "net/a"])
    assert "CONFIGFS\nM:\tx\n\nCONFUCIUS QDISC\nM:\t" in out
    assert "F:\tnet/a\nF:\tnet/b\n\nCONGATEC" in out
    again = series.maintainers_section(out, "CONFUCIUS QDISC", author, ["S:\tMaintained"], ["net/a", "net/b", "t/c"])
    assert again.count("CONFUCIUS QDISC") == 1 and "F:\tt/c\n\nCONGATEC" in again


def test_a_series_that_does_not_apply_is_refused(made, tmp_path):
    broken = tmp_path / "broken"
    shutil.copytree(made, broken)
    first = sorted(broken.glob("0001-*.patch"))[0]
    text = first.read_text()
    # A context line of the Kconfig hunk that the base does not have.
    changed = text.replace("\n 	  If unsure, say N.\n", "\n 	  If unsure, say M.\n", 1)
    assert changed != text
    first.write_text(changed)
    result = check("apply", broken, BASE, WORK / "linux")
    assert result.returncode != 0
    assert "does not apply" in result.stderr


def test_checkpatch_findings_fail_the_check(made, applied, tmp_path):
    assert applied.returncode == 0, "the series did not apply"
    dirty = tmp_path / "dirty"
    shutil.copytree(made, dirty)
    second = sorted(dirty.glob("0002-*.patch"))[0]
    text = second.read_text()
    second.write_text(text.replace('+        "name": ', '+        "name":  ', 1).replace(
        '+        "category": [\n', '+        "category": [ \n', 1))
    result = check("checkpatch", dirty, WORK / "linux")
    assert result.returncode != 0
    assert "TRAILING_WHITESPACE" in result.stdout


def test_the_cover_letter_names_its_base_and_carries_the_results(made, manifest):
    cover = sorted(made.glob("0000-*.patch"))[0].read_text()
    assert f"base-commit: {git('rev-parse', 'base').strip()}" in cover
    assert git("log", "-1", "--format=%s", "base").strip() in cover
    assert "*** SUBJECT HERE ***" not in cover and "@RESULTS@" not in cover
    for wanted in manifest["results"]:
        assert wanted["title"] in cover
    assert re.search(r"^confucius\s+0\.000 / \d+", cover, flags=re.M), "the demo's table is missing"


@pytest.fixture(scope="module")
def iproute2_tree() -> Path:
    cache = BUILD / "tc" / "src"
    tree = subprocess.run(["bash", "-c", f"source tc/iproute2-tree.sh && cached_tree {cache}"], cwd=REPO,
                          capture_output=True, text=True).stdout.strip()
    if not tree or not Path(tree).is_dir():
        pytest.fail("no iproute2 tree: run `make tc`")
    return Path(tree)


@pytest.fixture(scope="module")
def iproute2_patches(manifest, iproute2_tree, tmp_path_factory) -> list[Path]:
    return series.make_iproute2_patches(manifest, iproute2_tree, tmp_path_factory.mktemp("iproute2"))


def test_the_iproute2_patches_apply_and_build(iproute2_tree, iproute2_patches, tmp_path):
    patches = iproute2_patches
    assert [p.name[:5] for p in patches] == ["0001-", "0002-"]
    result = check("iproute2", patches[0].parent, iproute2_tree, WORK / "tc")
    assert result.returncode == 0, result.stdout + result.stderr
    usage = subprocess.run([str(WORK / "tc" / "tc"), "qdisc", "add", "dev", "lo", "root", "confucius", "help"],
                           capture_output=True, text=True, env={"TC_LIB_DIR": str(tmp_path)})
    assert usage.stderr.startswith("Usage: ... confucius")


def test_checkpatch_strict_finds_nothing_in_the_iproute2_patches(iproute2_patches, applied):
    assert applied.returncode == 0, "no tree to take checkpatch from"
    result = check("checkpatch-iproute2", iproute2_patches[0].parent, WORK / "linux")
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.count(" clean") == len(iproute2_patches)
