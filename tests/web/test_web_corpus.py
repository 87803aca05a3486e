# SPDX-License-Identifier: MIT
"""The generated corpus against the published figures it is calibrated to.

Tolerances: a median of 1000 pages has a sampling error of about 4 % of the spread (1.25
sigma / sqrt(1000)); the published figures are themselves read from plots or rounded
("about 70 requests", "2.6 MB"), so ratios get +-10-15 % and small counts +-1 or 2.
"""

import pytest

from confucius.web import generate
from confucius.web.corpus import build_corpus, corpus_statistics, read_corpus, write_corpus
from confucius.web.page import PageError
from confucius.web.reference import reference_load

T = generate.TARGETS


@pytest.fixture(scope="module")
def corpus():
    return build_corpus(pages=1000, seed=0)


@pytest.fixture(scope="module")
def stats(corpus):
    return corpus_statistics(corpus.sampled)


def test_concurrent_active_flows(stats):
    assert abs(stats["active_flows_median"] - T["active_flows_median"]) <= 1
    assert abs(stats["active_flows_p90"] - T["active_flows_p90"]) <= 2


def test_unique_server_addresses(stats):
    assert abs(stats["addresses_median"] - T["addresses_median"]) <= 1
    # paper 000 Appx. A: about twice as many connections as addresses
    assert 1.5 <= stats["flows_per_address_median"] <= 2.5


def test_flow_sizes(stats):
    assert stats["flow_bytes_median"] == pytest.approx(T["flow_bytes_median"], rel=0.15)
    # The seed's "100 B to 100 KB" holds for the bulk of flows; the rest carry the page weight.
    assert stats["flow_bytes_in_range"] >= 0.80


def test_requests_and_page_weight(stats):
    assert stats["requests_median"] == pytest.approx(T["requests_median"], rel=0.10)
    assert stats["page_bytes_median"] == pytest.approx(T["page_bytes_median"], rel=0.15)


def test_amazon_like_page(corpus):
    load = reference_load(corpus.pages["amazon"])
    assert load.connections == T["amazon_flows"]
    assert 10 <= load.peak_active <= T["amazon_active_max"]
    assert len(corpus.pages["amazon"].domains) > T["amazon_flows"] / 2


@pytest.mark.parametrize("flows, size", [(5, 15360), (100, 15360), (5, 9 * 1024 * 1024)])
def test_sweep_pages(corpus, flows, size):
    page = corpus.pages[generate.sweep_page_id(flows, size)]
    assert len(page.domains) == len(page.objects) == flows
    assert {o.size for o in page.objects} == {size} and all(o.parent is None for o in page.objects)
    load = reference_load(page)
    assert load.connections == load.peak_active == flows


def test_manifest_records_how_the_corpus_was_made(corpus):
    m = corpus.manifest
    assert m["seed"] == 0 and m["generator_version"] == generate.GENERATOR_VERSION
    assert m["targets"] == T and m["reference_network"] == {"rate_bps": 20e6, "rtt_s": 0.04}
    assert len(m["sampled"]) == 1000 and "amazon" in m["named"]
    assert m["domains"] == max(len(p.domains) for p in corpus.pages.values()) <= generate.MAX_DOMAINS


def test_generation_is_deterministic_and_seeded():
    assert generate.sampled_page(0, 17) == generate.sampled_page(0, 17)
    assert generate.sampled_page(0, 17) != generate.sampled_page(1, 17)
    small = build_corpus(pages=6, seed=5, jobs=1)
    assert build_corpus(pages=6, seed=5, jobs=2) == small


def test_corpus_round_trip(tmp_path):
    small = build_corpus(pages=4, seed=2, jobs=1)
    write_corpus(small, tmp_path / "c")
    assert read_corpus(tmp_path / "c") == small
    with pytest.raises(FileExistsError):
        write_corpus(small, tmp_path / "c")
    with pytest.raises(PageError, match="not a corpus"):
        read_corpus(tmp_path)
