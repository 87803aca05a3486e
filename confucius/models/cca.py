# SPDX-License-Identifier: MIT
"""Responsiveness k of a delay-sensitive CCA from its probing period (paper 000 Appx. B.5).

With the link fully available (r ≡ C) the fluid model's sending rate oscillates as
s(t) = C + A·cos(√k·t + φ) (Eq. 33), so a CCA that probes every T seconds has
k = (2π / T)². The papers give the probing periods in RTTs: Copa 5, BBR 8 (B.5; §4.2 says
6–8 for BBR, B.5 uses 8).
"""

import math

from .validate import positive, unknown

# Probing period of each CCA in round-trip times (paper 000 Appx. B.5).
PROBING_PERIOD_RTTS = {"copa": 5.0, "bbr": 8.0}


def responsiveness_from_period(period: float) -> float:
    """k in s^-2 for a probing period in seconds: k = (2π / period)², from Eq. 33."""
    return (2 * math.pi / positive("probing period", period)) ** 2


def probing_period(k: float) -> float:
    """The probing period 2π/√k (seconds) of a CCA with responsiveness k (s^-2), Eq. 33."""
    return 2 * math.pi / math.sqrt(positive("k", k))


def responsiveness(cca: str, rtt: float) -> float:
    """k in s^-2 of a named CCA at a given RTT (seconds): `responsiveness("copa", 0.04)`."""
    rtts = PROBING_PERIOD_RTTS.get(cca.lower())
    if rtts is None:
        raise unknown("CCA", cca, PROBING_PERIOD_RTTS, "the papers give probing periods for",
                      "; give --k or --period instead")
    return responsiveness_from_period(rtts * positive("RTT", rtt))
