# SPDX-License-Identifier: MIT
"""Page loads in ns-3 (sim/ns3/apps/page-load.cc) with web-client's browser rules."""

import json
import math
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
BOTTLENECK = REPO / "build" / "sim" / "bottleneck"
RATE_BPS, RTT_S = 20e6, 0.040
SEGMENT, WIRE, INITIAL_WINDOW = 1448, 1500, 10     # ns-3's TCP: 1448-byte segments, IW 10
RESPONSE_HEAD = 100


def load(page: Path, *args: str) -> dict:
    out = subprocess.run([str(BOTTLENECK), "--scheduler=pfifo", "--rt-rate=0", "--web-flows=0",
                          f"--page={page}", "--web-start=1s", "--duration=10s", *args],
                         check=True, capture_output=True, text=True, timeout=120).stdout
    return json.loads(out)["page"]


def analytic_plt(size: int) -> float:
    """Request to last byte over an idle link: half an RTT for the request, slow start (the
    window doubling from IW each RTT) while a window is less than the path's BDP, the rest
    at the link rate, half an RTT for the last byte."""
    segments = math.ceil((size + RESPONSE_HEAD) / SEGMENT)
    bdp = RATE_BPS * RTT_S / 8 / WIRE
    window, rounds = INITIAL_WINDOW, 0
    while window < bdp and segments > window:
        segments -= window
        window *= 2
        rounds += 1
    return RTT_S / 2 + rounds * RTT_S + segments * WIRE * 8 / RATE_BPS + RTT_S / 2


@pytest.mark.parametrize("size", [20_000, 1_000_000])
def test_a_one_object_pages_plt_is_its_analytic_value(size, tmp_path):
    page = tmp_path / "one.page"
    page.write_text(f"root example.com {size} -\n")
    result = load(page)
    assert result["objects_done"] == 1 and result["connections"] == 1
    assert result["plt_s"] == pytest.approx(analytic_plt(size), rel=0.05)


def test_objects_wait_for_their_parent_and_share_six_connections_per_domain(tmp_path):
    # A root, then 12 objects on its domain and 3 on another: 6 + 3 connections, and two
    # dependency levels, so the load takes longer than the root alone.
    lines = ["root a.com 10000 -"] + [f"x{i} a.com 10000 root" for i in range(12)] + \
            [f"y{i} b.com 10000 root" for i in range(3)]
    page = tmp_path / "tree.page"
    page.write_text("\n".join(lines) + "\n")
    result = load(page)
    assert result["objects_done"] == 16 and result["connections"] == 1 + 5 + 3
    assert result["plt_s"] > 2 * analytic_plt(10_000)


def test_bad_pages_are_refused(tmp_path):
    page = tmp_path / "bad.page"
    page.write_text("root a.com 100 -\nchild a.com 100 nowhere\n")
    result = subprocess.run([str(BOTTLENECK), f"--page={page}"], capture_output=True, text=True, timeout=60)
    assert result.returncode != 0 and "child's parent nowhere is not on the page" in result.stderr
