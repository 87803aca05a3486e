# SPDX-License-Identifier: MIT
"""The domain -> address mapping both programs read, in /etc/hosts form (`ADDRESS NAME`).

The lab's server namespace holds one address per domain; corpus domains are `d<i>.web.test`
for i below the manifest's `domains`, so one mapping serves every page of a corpus.
"""

from __future__ import annotations

import ipaddress
from itertools import islice
from pathlib import Path

from .generate import domain_name


def address_map(domains: list[str], network: str) -> dict[str, str]:
    """Gives the domains consecutive host addresses of `network`, in order."""
    try:
        net = ipaddress.ip_network(network, strict=False)
    except ValueError as err:
        raise ValueError(f"{network!r} is not a network (e.g. 10.88.0.0/24): {err}") from err
    addresses = list(islice(net.hosts(), len(domains)))
    if len(addresses) < len(domains):
        raise ValueError(f"{network} has {len(addresses)} host addresses, {len(domains)} domains need one each")
    return {d: str(a) for d, a in zip(domains, addresses)}


def corpus_domains(count: int) -> list[str]:
    return [domain_name(i) for i in range(count)]


def hosts_text(mapping: dict[str, str]) -> str:
    return "".join(f"{address} {domain}\n" for domain, address in mapping.items())


def write_hosts(mapping: dict[str, str], path) -> None:
    Path(path).write_text(hosts_text(mapping))
