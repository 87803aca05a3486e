# SPDX-License-Identifier: MIT
"""Each domain's HTTP version (confucius/web/protocols.py), as `[web] http` draws it."""

import math

import pytest

from confucius.web import generate, protocols
from confucius.web.page import Page, WebObject


def test_one_version_is_every_domains():
    page = generate.amazon_page(0)
    assert set(protocols.domain_protocols(page, "h2").values()) == {"h2"}
    assert list(protocols.domain_protocols(page, "h1")) == page.domains


def test_table3_draws_each_pages_domains_at_the_papers_shares():
    # 300 corpus pages, about 4500 domains: HTTP/3's share within four binomial standard
    # errors of Table 3's 12.64 %, and HTTP/1.1 for the rest but a handful of HTTP/2.
    drawn = [v for i in range(300) for v in protocols.domain_protocols(generate.sampled_page(0, i), "table3").values()]
    share = drawn.count("h3") / len(drawn)
    error = math.sqrt(0.1264 * (1 - 0.1264) / len(drawn))
    assert abs(share - protocols.TABLE3["h3"]) < 4 * error
    assert drawn.count("h2") < 10 and drawn.count("h1") + drawn.count("h2") + drawn.count("h3") == len(drawn)


def test_the_draw_is_the_pages_and_the_domains_alone():
    page = generate.sampled_page(0, 7)
    assert protocols.domain_protocols(page, "table3") == protocols.domain_protocols(generate.sampled_page(0, 7), "table3")
    # The same domain name on other pages draws on its own: d0 is every page's first party.
    firsts = {protocols.domain_protocols(generate.sampled_page(0, i), "table3")["d0.web.test"] for i in range(60)}
    assert firsts == {"h1", "h3"}


def test_an_unknown_version_is_refused():
    page = Page("p", (WebObject("o", "a.test", 10),))
    with pytest.raises(ValueError, match="http must be one of h1, h2, h3, table3"):
        protocols.domain_protocols(page, "spdy")
