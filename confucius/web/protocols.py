# SPDX-License-Identifier: MIT
"""Which HTTP version each domain of a page speaks: a scenario's `[web] http`.

`h1` is HTTP/1.1 (up to `max_per_domain` connections per domain, one request at a time on
each); `h2` and `h3` carry every request of a domain over one connection (HTTP/2 over TCP,
HTTP/3 over QUIC). `table3` draws each domain's version from paper 000's Table 3 by request
(Chrome loading the Alexa top 1000 in November 2023): HTTP/1.0 and 1.1 87.31 %, HTTP/2
0.04 %, HTTP/3 12.64 %.

The draw is per (page, domain), not per domain: the corpus's domain names are placeholders
shared by every page (`d0` is every page's first party), so a per-domain draw would give
every page the same first party's version. It is a hash of the page's id and the domain,
so the same page speaks the same versions in both engines and in every repetition.
"""

from __future__ import annotations

import hashlib

from .page import Page

PROTOCOLS = ("h1", "h2", "h3")
TABLE3 = {"h1": 0.8731, "h2": 0.0004, "h3": 0.1264}
# What `[web] http` accepts: one version for every domain, or Table 3's draw.
CHOICES = (*PROTOCOLS, "table3")


def domain_protocols(page: Page, http: str) -> dict[str, str]:
    """Each of the page's domains and the HTTP version it speaks."""
    if http in PROTOCOLS:
        return {domain: http for domain in page.domains}
    if http != "table3":
        raise ValueError(f"http must be one of {', '.join(CHOICES)}, not {http!r}")
    return {domain: _drawn(page.id, domain) for domain in page.domains}


def _drawn(page_id: str, domain: str) -> str:
    digest = hashlib.sha256(f"{page_id}\0{domain}".encode()).digest()
    point = int.from_bytes(digest[:8], "big") / 2**64
    for protocol, share in TABLE3.items():
        if point < share:
            return protocol
        point -= share
    return "h1"   # the shares' rounding: they sum to 0.9999
