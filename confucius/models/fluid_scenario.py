# SPDX-License-Identifier: MIT
"""The fluid model's scenario (paper 000 §4.3, Table 4): one delay-sensitive flow alone on a
link of capacity C, in steady state with queueing delay q0, when N new flows of B bits each
(initial burst B0) arrive at t = 0."""

from dataclasses import dataclass

from .validate import ModelInputError, flow_count, non_negative, positive

# Confucius' default doubling interval 1/λ = 250 ms (paper 000 §4.2, paper 002 §IV-D).
DEFAULT_LAMBDA = 4.0


@dataclass(frozen=True)
class FluidScenario:
    """Parameters in SI units (Table 4 of paper 000).

    flows: N, new flows arriving at t = 0 (>= 1).
    capacity: C, link capacity in bit/s.
    flow_size: B, size of each new flow in bits.
    initial_burst: B0, initial burst of each new flow in bits (FIFO only, Eq. 9b).
    q0: the delay target of the real-time flow's CCA, seconds.
    tau: the CCA's feedback loop, seconds (usually one RTT).
    k: the CCA's responsiveness, s^-2 (see `cca`).
    lam: Confucius' λ in s^-1 (new flows' weights double every 1/λ).
    """

    flows: int
    capacity: float
    flow_size: float
    initial_burst: float
    q0: float
    tau: float
    k: float
    lam: float = DEFAULT_LAMBDA

    def __post_init__(self):
        set_ = object.__setattr__  # frozen dataclass: normalise the checked values once
        set_(self, "flows", flow_count("number of new flows N", self.flows))
        if self.flows < 1:
            raise ModelInputError("number of new flows N must be at least 1")
        set_(self, "capacity", positive("capacity C", self.capacity))
        set_(self, "flow_size", positive("flow size B", self.flow_size))
        set_(self, "initial_burst", non_negative("initial burst B0", self.initial_burst))
        set_(self, "q0", non_negative("delay target q0", self.q0))
        set_(self, "tau", non_negative("feedback loop tau", self.tau))
        set_(self, "k", positive("responsiveness k", self.k))
        set_(self, "lam", positive("lambda", self.lam))
