# SPDX-License-Identifier: MIT
"""confucius.lab.kernelabi against the UAPI header it declares in Python: a program
compiled against kernel/include/uapi/linux/pkt_sched_confucius.h prints every attribute
number, xstats type, constant, field offset and struct size kernelabi holds, and they
must agree; the enum's end and the structs' sizes catch a member kernelabi lacks."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from confucius.lab import kernelabi

REPO = Path(__file__).resolve().parents[2]
UAPI = REPO / "kernel/include/uapi"

CONSTANTS = {
    "TCA_CONFUCIUS_XSTATS_QDISC": kernelabi.XSTATS_QDISC,
    "TCA_CONFUCIUS_XSTATS_CLASS": kernelabi.XSTATS_CLASS,
    "TCA_CONFUCIUS_XSTATS_FLOW": kernelabi.XSTATS_FLOW,
    "TC_CONFUCIUS_MAX_CLASSES": kernelabi.MAX_CLASSES,
    "TC_CONFUCIUS_FLOW_MINOR": kernelabi.FLOW_MINOR,
    "__TCA_CONFUCIUS_MAX": len(kernelabi.ATTRIBUTES),
    **{f"TC_CONFUCIUS_FLOW_{name.upper()}": value for value, name in kernelabi.FLOW_STATES.items()},
    **{f"TCA_CONFUCIUS_{name.upper()}": value for name, value in kernelabi.ATTRIBUTES.items()},
}


def expected_lines() -> list[str]:
    """What the program must print if the header and kernelabi agree."""
    lines = [f"{name} {value}" for name, value in CONSTANTS.items()]
    for layout in kernelabi.LAYOUTS:
        lines += [f"{layout.name}.{field} {offset}" for field, offset in layout.offsets().items()]
        if layout is not kernelabi.XSTATS_HEADER:  # the header's struct is the whole union's
            lines.append(f"sizeof {layout.name} {layout.struct.size}")
    lines.append(f"union offset {kernelabi.UNION_OFFSET}")
    lines.append(f"sizeof tc_confucius_xstats {kernelabi.UNION_OFFSET + kernelabi.QDISC_STATS.struct.size}")
    return lines


def program() -> str:
    """C that prints, from the header, what expected_lines() says."""
    prints = [f'\tprintf("{name} %lld\\n", (long long){name});' for name in CONSTANTS]
    for layout in kernelabi.LAYOUTS:
        prints += [f'\tprintf("{layout.name}.{field} %zu\\n", offsetof(struct {layout.name}, {field}));'
                   for field in layout.offsets()]
        if layout is not kernelabi.XSTATS_HEADER:
            prints.append(f'\tprintf("sizeof {layout.name} %zu\\n", sizeof(struct {layout.name}));')
    prints.append('\tprintf("union offset %zu\\n", offsetof(struct tc_confucius_xstats, qdisc_stats));')
    prints.append('\tprintf("sizeof tc_confucius_xstats %zu\\n", sizeof(struct tc_confucius_xstats));')
    return ("#include <stddef.h>\n#include <stdio.h>\n#include <linux/pkt_sched_confucius.h>\n\n"
            "int main(void)\n{\n" + "\n".join(prints) + "\n\treturn 0;\n}\n")


@pytest.fixture(scope="module")
def printed(tmp_path_factory) -> list[str]:
    if not shutil.which("cc"):
        pytest.fail("no C compiler (cc): kernelabi cannot be checked against the header")
    work = tmp_path_factory.mktemp("kernelabi")
    (work / "abi.c").write_text(program())
    subprocess.run(["cc", "-std=c11", "-Wall", "-Werror", f"-I{UAPI}", "-o", work / "abi", work / "abi.c"],
                   check=True, capture_output=True, text=True)
    return subprocess.run([work / "abi"], check=True, capture_output=True, text=True).stdout.splitlines()


def test_every_number_offset_and_size_is_the_headers(printed):
    assert printed == expected_lines()


def test_the_check_fails_on_a_layout_that_differs(printed):
    """A field missing from a layout moves the offsets after it: the comparison sees it."""
    fields = dict(kernelabi.FLOW_STATS.fields)
    del fields["deficit"]
    shorter = kernelabi.Layout("tc_confucius_fl_stats", tuple(fields.items()))
    assert shorter.offsets()["sojourn_us"] != kernelabi.FLOW_STATS.offsets()["sojourn_us"]
    assert f"tc_confucius_fl_stats.sojourn_us {shorter.offsets()['sojourn_us']}" not in printed


def test_xstats_read_by_their_type():
    flow = kernelabi.FLOW_STATS.struct.pack(5, 2, 1, 65536, 3, 4542, -120, 12_300, 43110, 5000, 17, b"")
    app = kernelabi.XSTATS_HEADER.struct.pack(kernelabi.XSTATS_FLOW, 0) + flow
    kind, fields = kernelabi.xstats(app)
    assert kind == kernelabi.XSTATS_FLOW and fields["deficit"] == -120 and fields["dport"] == 5000
    assert kernelabi.xstats(app[:20]) is None
    assert kernelabi.xstats(kernelabi.XSTATS_HEADER.struct.pack(7, 0) + flow) is None
    qdisc = kernelabi.QDISC_STATS.unpack(bytes(range(kernelabi.QDISC_STATS.struct.size)))
    assert len(qdisc["class_flows"]) == kernelabi.MAX_CLASSES
