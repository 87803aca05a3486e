# SPDX-License-Identifier: MIT
"""The small scenario the simulator's tests share: the matrix's 20 Mbit/s, 40 ms link, a
short warm-up and a short tail, so that each episode lasts a few simulated seconds."""

import pytest

SMALL = """
name = "{name}"
seed = 0
[link]
rate = "20mbit"
rtt = "40ms"
buffer = 200
[schedulers]
names = {schedulers}
{variants}
[rt]
controllers = {controllers}
start_rate = "5mbit"
{rt}
[web]
pages = {pages}
settle = "2s"
{web}
[sim]
warmup = "3s"
{sim}
"""


def small_scenario(name: str, schedulers: str, controllers: str = '["gcc"]',
                   pages: str = '["flows-3-size-30000"]', variants: str = "", rt: str = "",
                   web: str = "", sim: str = "") -> str:
    """The scenario's TOML text: lists as TOML, each table's extra lines as given."""
    return SMALL.format(name=name, schedulers=schedulers, controllers=controllers, pages=pages,
                        variants=variants, rt=rt, web=web, sim=sim)


@pytest.fixture(scope="session")
def small_sim_scenario():
    return small_scenario
