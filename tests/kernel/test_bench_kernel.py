# SPDX-License-Identifier: MIT
"""`make bench-kernel` (bench/bench_kernel.py) with tiny sizes: one boot of the lab's UML
kernel in real time, pktgen through every configuration, the memory readings, and the
printed table. Structure only: no timing is asserted (the figures belong to the bench's
report, bench/README.md)."""

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench" / "bench_kernel.py"
FLOWS = ("1", "10")
SIZES = ["--packets", "2000", "--repeats", "1", "--flows", *FLOWS, "--instances", "32",
         "--memory-repeats", "1", "--htb-instances", "1", "3"]


def bench(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(BENCH), *args], capture_output=True, text=True,
                          timeout=300)


@pytest.fixture(scope="module")
def ran(tmp_path_factory):
    out = tmp_path_factory.mktemp("bench-kernel")
    done = bench("--kernels", "lab", *SIZES, "--out", str(out))
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout, json.loads((out / "lab" / "bench.json").read_text())


@pytest.mark.vm
def test_every_configuration_and_flow_count_is_measured(ran):
    _, found = ran
    costs = found["ns_per_packet"]
    assert set(costs) == set(found["configurations"])
    assert {"noqueue", "fq_codel", "cake", "fq", "pfifo shaped", "confucius class fixed shaped"} <= set(costs)
    for name, by_flows in costs.items():
        assert tuple(by_flows) == FLOWS, name
        for values in by_flows.values():
            assert len(values) == 1 and all(ns > 0 for ns in values), (name, values)


@pytest.mark.vm
def test_memory_is_read_for_every_qdisc(ran):
    _, found = ran
    for name in ("fq_codel", "cake", "fq", "confucius"):
        [instance] = found["memory"][name]["instance"]
        assert instance > 0, name
    for name in ("fq_codel", "fq", "confucius"):  # the ones with a table size to set
        [small], [large] = found["memory"][name]["small"], found["memory"][name]["large"]
        assert large > small, name


@pytest.mark.vm
def test_leaves_under_htb_are_read_and_confucius_accounts_for_itself(ran):
    _, found = ran
    for name in ("fq_codel", "cake", "fq", "confucius"):
        assert set(found["htb"][name]) == {"1", "3"}, name
    # the three with tables of 64 KiB or more (fq's few KiB are within a few leaves' noise)
    for name in ("fq_codel", "cake", "confucius"):
        for count in ("1", "3"):
            [per_leaf] = found["htb"][name][count]["per_leaf"]
            assert per_leaf > 32 * 1024, (name, count)
    [reported] = found["htb"]["confucius"]["3"]["reported"]
    # its private data, a table of 1024 flows of at most 128 bytes and their hosts' 8 KiB,
    # no heaps in mode flow
    assert 136 * 1024 < reported < 144 * 1024


@pytest.mark.vm
def test_the_table_has_a_row_per_configuration_and_a_cell_per_flow_count(ran):
    table, found = ran
    print(table)
    cell = r"-?\d+ \[-?\d+, -?\d+\]"
    assert re.search(rf"Linux {re.escape(found['kernel'])} ", table)
    assert re.search(r"host: load \d+\.\d\d -> \d+\.\d\d, CPU busy \d+ %.*steal \d+\.\d %", table)
    for name in found["configurations"]:
        label = "path without a qdisc (noqueue)" if name == "noqueue" else name
        assert re.search(rf"^{re.escape(label)}\s+{cell}\s+{cell}", table, re.M), name
    for leaf in ("fq_codel", "fq"):
        assert re.search(rf"^{leaf} as HTB leaf, less HTB\s+{cell}\s+{cell}", table, re.M), leaf
    for name in ("fq_codel", "cake", "fq", "confucius"):
        assert re.search(rf"^{name}\s+{cell}\s+({cell}|fixed)\s+{cell}$", table, re.M), name
        assert re.search(rf"^{name}\s+{cell}\s+{cell}\s+(\d+\.\d|-)$", table, re.M), name


@pytest.mark.parametrize("args, message", [
    (["--instances", "0"], "--instances must be from 1 to 1024"),
    (["--htb-instances", "0"], "--htb-instances: leaf counts from 1 to 10000"),
    (["--flows", "0"], "--flows: flow counts from 1"),
    (["--repeats", "0"], "must be at least 1"),
    (["--kernels", "nosuch"], "--kernels: unknown nosuch"),
    (["--max-load", "0"], "--max-load must be positive"),
])
def test_bad_options_are_refused_before_anything_boots(args, message, tmp_path):
    done = bench(*args, "--out", str(tmp_path / "out"))
    assert done.returncode == 2
    assert message in done.stderr
    assert not (tmp_path / "out").exists()
