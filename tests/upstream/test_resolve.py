# SPDX-License-Identifier: MIT
"""upstream/resolve.py: the module's kernel conditionals resolved for the series' target."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "upstream"))

import resolve  # noqa: E402

TARGET = resolve.Target((7, 3, 0), defined=frozenset({"MODULE_ALIAS_NET_SCH"}),
                        undefined=frozenset({"CFC_SWITCH"}))


def resolved(text: str, target: resolve.Target = TARGET) -> str:
    return resolve.resolve(text, target, "t.c").text


def test_kernel_version_saturates_its_sublevel_as_the_kernel_does():
    assert resolve.kernel_version(6, 1, 300) == resolve.kernel_version(6, 1, 255) == (6 << 16) + (1 << 8) + 255


def test_a_version_check_keeps_the_branch_the_target_takes():
    text = "a\n#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 5, 0)\nnew\n#else\nold\n#endif\nb"
    assert resolved(text) == "a\nnew\nb"
    older = resolve.Target((6, 1, 0))
    assert resolved(text, older) == "a\nold\nb"


def test_elif_chains_take_the_first_true_branch():
    text = ("#if LINUX_VERSION_CODE < KERNEL_VERSION(6, 0, 0)\none\n"
            "#elif LINUX_VERSION_CODE < KERNEL_VERSION(8, 0, 0)\ntwo\n#else\nthree\n#endif")
    assert resolved(text) == "two"


def test_a_macro_the_target_defines_drops_the_fallback_and_its_comment():
    text = ("x;\n\n/* before 6.9 */\n#ifndef MODULE_ALIAS_NET_SCH\n"
            "#define MODULE_ALIAS_NET_SCH(id) MODULE_ALIAS(id)\n#endif\n\ny;")
    assert resolved(text) == "x;\n\ny;"


def test_the_guards_own_comment_goes_with_the_guard():
    text = "#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 5, 0)\n/* 6.5 moved it */\n#include <net/gso.h>\n#endif"
    assert resolved(text) == "#include <net/gso.h>"


def test_a_switch_computed_from_the_version_resolves_and_its_definitions_go():
    text = ("#define FROM(a, b) (LINUX_VERSION_CODE >= KERNEL_VERSION(a, (b) + 1, 0))\n"
            "#ifndef CFC_SWITCH\n#if FROM(7, 2)\n#define CFC_SWITCH 1\n#else\n#define CFC_SWITCH 0\n#endif\n#endif\n"
            "#if CFC_SWITCH\nyes\n#endif")
    assert resolved(text) == "yes"


def test_a_path_only_older_kernels_take_goes_whole_with_its_switch_and_comments():
    text = ("#ifndef CFC_SWITCH\n/* why the switch */\n/* a helper */\n"
            "#define FROM(a) (LINUX_VERSION_CODE >= (a))\n"
            "#if FROM(KERNEL_VERSION(6, 15, 0))\n#define CFC_SWITCH 1\n#else\n#define CFC_SWITCH 0\n#endif\n#endif\n"
            "struct s {\n\tint a;\n#if !CFC_SWITCH\n\t/* held back */\n\tint held;\n#endif\n};\n\n"
            "/* tell */\n#if CFC_SWITCH\nvoid tell(void) { now(); }\n#else\n/* later */\n"
            "void tell(void) { later(); }\n#endif")
    assert resolved(text) == "struct s {\n\tint a;\n};\n\n/* tell */\nvoid tell(void) { now(); }"


def test_a_switch_still_used_in_code_keeps_its_definition():
    text = "#ifndef CFC_SWITCH\n#define CFC_SWITCH 1\n#endif\nif (CFC_SWITCH) go();"
    assert resolved(text) == "#define CFC_SWITCH 1\nif (CFC_SWITCH) go();"


def test_configuration_and_include_guards_stay():
    text = ("#ifndef T_H\n#define T_H\n#ifdef CONFIG_NET_CLS_ACT\nact\n#endif\n"
            "#if IS_ENABLED(CONFIG_IPV6)\nsix\n#endif\n#endif /* T_H */")
    assert resolved(text) == text


def test_a_condition_on_anything_unknown_is_refused_not_guessed():
    with pytest.raises(resolve.ResolveError, match="QDISC_NEW_THING"):
        resolved("#ifdef QDISC_NEW_THING\nx\n#endif")
    with pytest.raises(resolve.ResolveError, match="SOME_VALUE"):
        resolved("#if SOME_VALUE > 2\nx\n#endif")


def test_unbalanced_conditionals_are_refused():
    with pytest.raises(resolve.ResolveError, match="without #endif"):
        resolved("#if LINUX_VERSION_CODE\nx")
    with pytest.raises(resolve.ResolveError, match="without #if"):
        resolved("x\n#endif")


def test_the_version_header_goes_with_the_last_version_check():
    text = "#include <linux/version.h>\n#include <linux/kernel.h>\n#if LINUX_VERSION_CODE > 0\nx\n#endif"
    assert resolved(text) == "#include <linux/kernel.h>\nx"


def test_substituted_macros_are_written_in_and_their_definitions_go():
    target = resolve.Target((0, 0, 0), substituted=(("QU_CONST", "const"), ("EXPORTED", ""), ("ORIGIN", "")),
                            headers=(("core.h", False),))
    text = ("/* which const */\n#ifndef QU_CONST\n#define QU_CONST const\n#endif\n\n"
            "#define EXPORTED __attribute__((visibility(\"default\")))\n"
            "#if __has_include(\"core.h\")\n#include \"core.h\"\n#endif\n"
            "#define ORIGIN \"x\"\n"
            "int f(QU_CONST struct q *qu);\nEXPORTED struct q u;\nputs(\"a\"\n\tORIGIN);")
    assert resolved(text, target) == "int f(const struct q *qu);\nstruct q u;\nputs(\"a\");"


def test_removals_leave_no_double_blank_line_and_none_inside_braces():
    text = "{\n\n#if LINUX_VERSION_CODE < KERNEL_VERSION(6, 1, 0)\nold();\n#endif\n\nnew();\n}"
    assert resolved(text) == "{\nnew();\n}"
