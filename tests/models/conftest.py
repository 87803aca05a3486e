# SPDX-License-Identifier: MIT
import pytest

from confucius.models.fluid_scenario import FluidScenario


@pytest.fixture
def scenario():
    """Ten 15 KiB flows at 20 Mbit/s against Copa-like k = 1000 s^-2, τ = 40 ms, q0 = 5 ms."""
    def make(**changes):
        base = dict(flows=10, capacity=20e6, flow_size=122880.0, initial_burst=116800.0,
                    q0=0.005, tau=0.040, k=1000.0, lam=4.0)
        return FluidScenario(**{**base, **changes})
    return make
