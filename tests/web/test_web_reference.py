# SPDX-License-Identifier: MIT
"""The reference load and the ACTIVE-flow measure, on cases worked out by hand."""

import pytest

from confucius.metrics import peak_active
from confucius.web.page import Page, WebObject
from confucius.web.reference import reference_load


def test_parallel_objects_share_the_link():
    # 10 x 15 KiB at 20 Mbit/s: handshake (40 ms) + request (40 ms) + 153.6 KB / 2.5 MB/s.
    page = Page("s", tuple(WebObject(f"o{i}", f"d{i}.test", 15360) for i in range(10)))
    load = reference_load(page)
    assert load.plt == pytest.approx(0.080 + 153600 / 2.5e6)
    assert load.connections == load.peak_active == 10
    assert load.flow_bytes == (15360,) * 10


def test_a_domain_opens_at_most_six_connections_and_reuses_them():
    objects = [WebObject("r", "a.test", 1000)] + [WebObject(f"o{i}", "a.test", 1000, "r") for i in range(20)]
    load = reference_load(Page("p", tuple(objects)))
    assert load.connections == 6
    assert sum(load.flow_bytes) == 21000
    assert load.peak_active == 6


def test_a_chain_is_never_concurrent():
    objects = [WebObject("o0", "a.test", 100_000)]
    objects += [WebObject(f"o{i}", f"d{i}.test", 100_000, f"o{i - 1}") for i in range(1, 5)]
    load = reference_load(Page("c", tuple(objects)))
    assert load.peak_active == 1
    # five handshakes, five requests, 500 KB at 2.5 MB/s
    assert load.plt == pytest.approx(10 * 0.040 + 0.2)


def test_active_window_merges_close_transfers_on_one_connection():
    assert peak_active({1: [(0.0, 1.0), (1.005, 2.0)], 2: [(1.002, 1.003)]}) == 2
    assert peak_active({1: [(0.0, 1.0)], 2: [(1.011, 2.0)]}) == 1
    assert peak_active({1: [(0.0, 1.0)], 2: [(1.009, 2.0)]}) == 2
    assert peak_active({}) == 0
