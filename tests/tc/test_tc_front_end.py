# SPDX-License-Identifier: MIT
"""The tc front end on the host, nothing sent to a kernel: the man page tc-confucius(8)
against the options the plugin accepts, the plugin built against iproute2's const
callbacks (6.9 on), the in-tree tc (tc/intree.sh) knowing confucius by itself, and the
parser taking and refusing the AQM's options. `help` and every parse here stop in tc's
parser, before any netlink request."""

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from confucius.lab.engine import REPO

TC = "/usr/sbin/tc"
TC_BUILD = REPO / "build" / "tc"
MAN_PAGE = REPO / "tc" / "tc-confucius.8"
INTREE = TC_BUILD / "intree"


def run(argv, **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run([str(a) for a in argv], capture_output=True, text=True, **kwargs)


def usage(tc, plugins: Path) -> str:
    """What `tc ... confucius help` prints, with `plugins` as tc's plugin directory."""
    done = run([tc, "qdisc", "add", "dev", "lo", "root", "confucius", "help"],
               env={"TC_LIB_DIR": str(plugins), "LD_BIND_NOW": "1", "PATH": "/usr/bin:/bin"})
    assert done.stderr.startswith("Usage: ... confucius "), done.stderr
    return done.stderr


def help_options(text: str) -> list[str]:
    """The options help's "Values:" section lists, one a line, in its order."""
    values = text.split("\nValues:\n", 1)[1]
    return re.findall(r"^  ([a-z_]+) ", values, flags=re.MULTILINE)


def man_section(name: str) -> str:
    """One .SH section of the man page's source."""
    text = MAN_PAGE.read_text()
    match = re.search(rf"^\.SH {name}\n(.*?)(?=^\.SH |\Z)", text, flags=re.MULTILINE | re.DOTALL)
    assert match, f"no section {name}"
    return match.group(1)


@pytest.fixture(scope="module")
def plugin_usage() -> str:
    return usage(TC, TC_BUILD)


def test_help_lists_every_option(plugin_usage):
    options = help_options(plugin_usage)
    assert len(options) == 21 and options[0] == "bandwidth"
    assert options[-6:] == ["aqm_target", "aqm_interval", "aqm_settle", "ecn", "isolate", "nat"]
    for option in options:
        assert re.search(rf"\[ {option}\b", plugin_usage), f"{option} missing from the usage line"


def test_man_page_documents_every_option_help_prints(plugin_usage):
    synopsis, parameters = man_section("SYNOPSIS"), man_section("PARAMETERS")
    for option in help_options(plugin_usage):
        assert re.search(rf"^\.RB \"\[ \" {option}( |$)", synopsis, flags=re.MULTILINE), f"{option} not in SYNOPSIS"
        # Each option is a tagged paragraph (.TP) whose tag starts with its name.
        assert re.search(rf"^\.TP\n\.B[IR]? {option}\b", parameters, flags=re.MULTILINE), \
            f"{option} not described under PARAMETERS"


def help_flags(text: str) -> dict[str, str]:
    """The words of help's flags (options without a value), each to its option's name."""
    flags = re.findall(r"^  ([a-z_]+) +([a-z]+) or ([a-z]+), without a value", text, flags=re.MULTILINE)
    return {word: option for option, *words in flags for word in words}


def help_defaults(text: str) -> list[tuple[str, str]]:
    """(option, default) in help's "Defaults:" lines; a flag's default is the word given."""
    words = text.split("Defaults:", 1)[1].split("\n          no weights", 1)[0].split()
    flags, pairs = help_flags(text), []
    while words:
        word = words.pop(0)
        pairs.append((flags[word], word) if word in flags else (word, words.pop(0)))
    return pairs


def test_man_page_gives_every_default_help_prints(plugin_usage):
    """The defaults in help's "Defaults:" lines, each said in the option's paragraph."""
    pairs = help_defaults(plugin_usage)
    # every option has its default there, in help's order; weights' is said in words after
    assert [option for option, _ in pairs] == [o for o in help_options(plugin_usage) if o != "weights"]
    assert help_flags(plugin_usage) == {"ecn": "ecn", "noecn": "ecn", "nat": "nat", "nonat": "nat"}
    assert ("ecn", "ecn") in pairs and ("nat", "nonat") in pairs and ("isolate", "triple-isolate") in pairs
    parameters = man_section("PARAMETERS")
    for option, value in pairs:
        paragraph = re.search(rf"^\.TP\n\.B[IR]? {option}\b(.*?)(?=^\.TP|^\.SS|\Z)", parameters,
                              flags=re.MULTILINE | re.DOTALL).group(1)
        value = {"unlimited": "the default", "10240p": "10240", "32Mb": "32MiB"}.get(value, value)
        if option in help_flags(plugin_usage).values():
            value = f"Default {value}."  # a flag's word is in its paragraph anyway
        assert value in paragraph.replace("\n", " "), f"{option}: default {value} not in its paragraph"


def parse(*options: str) -> subprocess.CompletedProcess:
    """`tc qdisc add` with these options, on a device that does not exist: tc parses the
    options before it looks the device up, so a request the plugin accepts ends there,
    and nothing reaches the kernel either way."""
    return run([TC, "qdisc", "add", "dev", "confucius-none0", "root", "confucius", *options],
               env={"TC_LIB_DIR": str(TC_BUILD), "PATH": "/usr/bin:/bin"})


ACCEPTED = 'Cannot find device "confucius-none0"'


@pytest.mark.parametrize("options", [
    ["aqm_target", "5ms", "aqm_interval", "100ms", "ecn"],
    ["noecn", "aqm_target", "0", "limit", "5"],
    ["aqm_target", "100us", "aqm_interval", "1ms"],
    ["aqm_target", "60s", "aqm_interval", "60s", "noecn"],
    ["aqm_settle", "0"],
    ["aqm_settle", "60s", "aqm_target", "5ms"],
])
def test_aqm_options_are_accepted(options):
    done = parse(*options)
    assert done.stderr.strip() == ACCEPTED


@pytest.mark.parametrize("options, message", [
    (["aqm_target", "50us"], 'invalid aqm_target "50us": expected 0 (no AQM) or a time from 100us to 60s'),
    (["aqm_target", "61s"], 'invalid aqm_target "61s": expected 0 (no AQM) or a time from 100us to 60s'),
    (["aqm_target", "-1ms"], 'invalid aqm_target "-1ms": expected 0 (no AQM)'),
    (["aqm_interval", "0"], 'invalid aqm_interval "0": expected a time from 1ms to 60s'),
    (["aqm_interval", "999us"], 'invalid aqm_interval "999us": expected a time from 1ms to 60s'),
    (["aqm_interval"], "aqm_interval needs a value"),
    (["aqm_settle", "61s"], 'invalid aqm_settle "61s": expected a time from 0us to 60s'),
    (["aqm_settle", "-1s"], 'invalid aqm_settle "-1s": expected a time from 0us to 60s'),
    (["aqm_settle"], "aqm_settle needs a value"),
    (["ecn", "1"], 'unknown option "1" (ecn takes no value)'),
    (["noecn", "on", "limit", "5"], 'unknown option "on" (noecn takes no value)'),
    (["ecn", "noecn"], "ecn or noecn given twice"),
    (["noecn", "limit", "5", "noecn"], "ecn or noecn given twice"),
    (["ecnx"], 'unknown option "ecnx"\n'),
])
def test_aqm_options_are_refused_by_the_parser(options, message):
    done = parse(*options)
    assert done.returncode == 1 and done.stderr.startswith(f"confucius: {message}"), done.stderr
    assert ACCEPTED not in done.stderr


@pytest.mark.parametrize("options", [
    ["isolate", "flows"],
    ["isolate", "dual-srchost", "nat"],
    ["isolate", "dual-dsthost", "nonat"],
    ["nat", "isolate", "triple-isolate"],
])
def test_host_options_are_accepted(options):
    assert parse(*options).stderr.strip() == ACCEPTED


@pytest.mark.parametrize("options, message", [
    (["isolate", "hosts"], 'invalid isolate "hosts": expected flows, dual-srchost, dual-dsthost or '
                           'triple-isolate (e.g. dual-dsthost)'),
    (["isolate"], "isolate needs a value"),
    (["dual-dsthost"], 'unknown option "dual-dsthost"'),
    (["nat", "yes"], 'unknown option "yes" (nat takes no value)'),
    (["nat", "nonat"], "nat or nonat given twice"),
])
def test_host_options_are_refused_by_the_parser(options, message):
    done = parse(*options)
    assert done.returncode == 1 and done.stderr.startswith(f"confucius: {message}"), done.stderr
    assert ACCEPTED not in done.stderr


def test_mandoc_lint_fails_on_a_warning(tmp_path):
    """The lint of mk/tc.mk: this page passes it, and a warning would fail it."""
    lint = ["mandoc", "-Tlint", "-W", "warning"]
    assert run([*lint, MAN_PAGE]).returncode == 0
    broken = tmp_path / "broken.8"
    broken.write_text(MAN_PAGE.read_text().replace('"2026-12-01"', '"someday"', 1))
    done = run([*lint, broken])
    assert done.returncode != 0 and "WARNING" in done.stdout + done.stderr


def source_tree() -> Path:
    trees = [p.parent for p in (TC_BUILD / "src").glob("iproute2-*/.configured-*")]
    assert len(trees) == 1, f"expected one configured iproute2 tree (make tc), found {trees}"
    return trees[0]


def test_plugin_builds_against_the_const_callbacks(tmp_path):
    """iproute2 6.9 made struct qdisc_util's callbacks take a const pointer; tc/build.sh
    reads which the tree has. Debian's archive here serves no source newer than 6.1's, so
    the installed release's tree with just that change stands for 6.9 on: without the
    detection the build fails (-Werror, incompatible pointer types). The const-ness of a
    pointer parameter is no ABI change, so the system tc still loads the plugin."""
    tree = source_tree()
    cache = tmp_path / "src"
    shutil.copytree(tree, cache / tree.name, symlinks=True)
    shutil.copy(tree.parent / "version", cache / "version")
    header = cache / tree.name / "tc" / "tc_util.h"
    text = header.read_text()
    const = text.replace("(struct qdisc_util *qu", "(const struct qdisc_util *qu")
    assert const.count("const struct qdisc_util *qu") >= 6
    header.write_text(const)
    built = run([REPO / "tc" / "build.sh", tmp_path / "out"], env={"IPROUTE2_SRC": str(cache),
                                                                  "PATH": "/usr/sbin:/usr/bin:/sbin:/bin"})
    assert built.returncode == 0, built.stderr
    assert "(q_confucius.so, " in usage(TC, tmp_path / "out")


def test_intree_patch_adds_our_files_and_one_makefile_line():
    patch = (INTREE / "0001-tc-add-the-confucius-qdisc.patch").read_text()
    assert patch.startswith("From ") and "Subject: [PATCH] tc: add the confucius qdisc" in patch
    touched = re.findall(r"^diff --git a/(\S+) ", patch, flags=re.MULTILINE)
    assert touched == ["include/uapi/linux/pkt_sched_confucius.h", "man/man8/tc-confucius.8",
                       "tc/Makefile", "tc/q_confucius.c"]
    assert "+TCMODULES += q_confucius.o\n" in patch
    # What only the plugin build uses is left out of iproute2's copy.
    assert "QDISC_UTIL_CONST" not in patch and "__has_include" not in patch


def test_intree_tc_knows_confucius_without_a_plugin(tmp_path):
    text = usage(INTREE / "tc", tmp_path)  # an empty plugin directory
    assert "(q_confucius.so, " not in text
    assert help_options(text) == help_options(usage(TC, TC_BUILD))
