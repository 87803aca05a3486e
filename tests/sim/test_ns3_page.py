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


def tree_page(folder: Path, a_version: str = "") -> Path:
    """A root, then 12 objects on its domain, a.com (over `a_version`, if given), and 3 on
    b.com (HTTP/1.1)."""
    version = f" {a_version}" if a_version else ""
    lines = [f"root a.com 10000 -{version}"] + [f"x{i} a.com 10000 root{version}" for i in range(12)] + \
            [f"y{i} b.com 10000 root" for i in range(3)]
    page = folder / "tree.page"
    page.write_text("\n".join(lines) + "\n")
    return page


def test_objects_wait_for_their_parent_and_share_six_connections_per_domain(tmp_path):
    # The tree page: 6 + 3 connections, and two dependency levels, so the load takes
    # longer than the root alone.
    result = load(tree_page(tmp_path))
    assert result["objects_done"] == 16 and result["connections"] == 1 + 5 + 3
    assert result["plt_s"] > 2 * analytic_plt(10_000)


def test_bad_pages_are_refused(tmp_path):
    page = tmp_path / "bad.page"
    page.write_text("root a.com 100 -\nchild a.com 100 nowhere\n")
    result = subprocess.run([str(BOTTLENECK), f"--page={page}"], capture_output=True, text=True, timeout=60)
    assert result.returncode != 0 and "child's parent nowhere is not on the page" in result.stderr


def report_of(result: dict) -> tuple[dict, dict]:
    """The load's objects and connections by id."""
    report = result["report"]
    return ({o["id"]: o for o in report["objects"]}, {c["id"]: c for c in report["connections"]})


def test_a_multiplexed_domain_takes_one_connection_for_every_request(tmp_path):
    # The tree page, a.com over HTTP/2: its 13 objects share one connection, b.com keeps
    # its three HTTP/1.1 connections, and every object arrives whole.
    result = load(tree_page(tmp_path, "h2"))
    objects, connections = report_of(result)
    assert result["objects_done"] == 16 and result["connections"] == 1 + 3
    assert {objects[f"x{i}"]["connection"] for i in range(12)} == {objects["root"]["connection"]}
    assert all(o["received"] == o["size"] for o in objects.values())
    by_protocol = sorted((c["protocol"], c["objects"]) for c in connections.values())
    assert by_protocol == [("h1", 1), ("h1", 1), ("h1", 1), ("h2", 13)]


@pytest.mark.parametrize("protocol", ["h2", "h3"])
def test_a_multiplexed_connection_answers_in_order_or_interleaved(protocol, tmp_path):
    # Two 1 MB objects asked for at once on one connection. In order (the default): the
    # second ends about 0.4 s (1 MB at 20 Mbit/s) after the first. Interleaved: a frame
    # of each in turn, so they end within a few frames of each other.
    page = tmp_path / "two.page"
    page.write_text(f"x a.com 1000000 - {protocol}\ny a.com 1000000 - {protocol}\n")
    objects, _ = report_of(load(page))
    assert 0.3 < (objects["y"]["last_byte_us"] - objects["x"]["last_byte_us"]) / 1e6 < 0.6
    objects, _ = report_of(load(page, "--ns3::WebObjectServer::Interleave=true"))
    frame_s = 16384 * 8 / RATE_BPS
    assert abs(objects["x"]["last_byte_us"] - objects["y"]["last_byte_us"]) / 1e6 < 3 * frame_s


def test_http3_is_simulated_as_http2(tmp_path):
    # ns-3 has no QUIC: both versions are one multiplexed TCP connection, load for load.
    results = []
    for protocol in ("h2", "h3"):
        page = tmp_path / f"{protocol}.page"
        page.write_text(f"root a.com 30000 - {protocol}\n" +
                        "".join(f"x{i} a.com 50000 root {protocol}\n" for i in range(8)))
        result = load(page)
        _, connections = report_of(result)
        assert result["connections"] == 1 and connections[0]["protocol"] == protocol
        results.append(result["plt_s"])
    assert results[0] == results[1]


def test_an_empty_response_ends_its_stream(tmp_path):
    # A zero-byte object is a head and an empty last DATA frame; its child follows.
    page = tmp_path / "empty.page"
    page.write_text("root a.com 0 - h2\nchild a.com 5000 root h2\n")
    result = load(page)
    objects, _ = report_of(result)
    assert result["objects_done"] == 2 and objects["root"]["received"] == 0
    assert objects["child"]["request_us"] >= objects["root"]["last_byte_us"]


@pytest.mark.parametrize("lines, message", [
    (["root a.com 100 - h4"], "protocol 'h4' is not h1, h2 or h3"),
    (["root a.com 100 - h2", "x a.com 100 root h1"], "domain a.com speaks two protocols"),
])
def test_bad_protocols_are_refused(lines, message, tmp_path):
    page = tmp_path / "bad.page"
    page.write_text("\n".join(lines) + "\n")
    result = subprocess.run([str(BOTTLENECK), f"--page={page}"], capture_output=True, text=True, timeout=60)
    assert result.returncode != 0 and message in result.stderr
