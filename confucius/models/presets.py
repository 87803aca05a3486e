# SPDX-License-Identifier: MIT
"""The parameters paper 003 measured (Mininet, 1.5 Gbit/s bottleneck, 40 ms RTT, 460-packet
buffer), and its scenarios, as named presets."""

from .aggressiveness import AggressivenessParams
from .validate import ModelInputError, unknown

# §III-G: training aggressiveness (50 flows per CCA, shared buffer, 30 runs) and the three
# relative-aggressiveness fits (100 hosts per CCA, 5 runs).
PAPER003 = AggressivenessParams(
    ccas=("reno", "cubic", "bbr"),
    g={"reno": 0.1158, "cubic": 0.1365, "bbr": 2.7477},
    relative={("bbr", "reno"): (28.7, -1.17),
              ("bbr", "cubic"): (33.2, -1.15),
              ("cubic", "reno"): (0.99, 0.38)},
)
PARAMETERS = {"paper003": PAPER003}

# Table I of paper 003: per-CCA F1 of the two classifiers for a classification interval of
# 1, 5 and 10 seconds.
CLASSIFIERS = {
    "deepcci": {1.0: {"reno": 0.666, "cubic": 0.5833, "bbr": 0.95},
                5.0: {"reno": 0.84, "cubic": 0.8125, "bbr": 0.975},
                10.0: {"reno": 0.875, "cubic": 0.875, "bbr": 0.9875}},
    "dragonfly": {1.0: {"reno": 0.798, "cubic": 0.8733, "bbr": 0.91},
                  5.0: {"reno": 0.88, "cubic": 0.94, "bbr": 0.945},
                  10.0: {"reno": 0.93, "cubic": 0.935, "bbr": 0.95}},
}

# Flow counts of §III-B (Fig. 2, 4, 5, 6) and §III-C (Fig. 3a, 3b).
SCENARIOS = {
    "equal": {"reno": 50, "cubic": 50, "bbr": 50},
    "few-sharks": {"reno": 130, "cubic": 10, "bbr": 10},
    "many-sharks": {"reno": 10, "cubic": 10, "bbr": 130},
}


def classifier_accuracy(name: str, interval: float) -> dict:
    """Per-CCA F1 of a named classifier at one of its published intervals (seconds)."""
    table = CLASSIFIERS.get(name.lower())
    if table is None:
        raise unknown("classifier", name, CLASSIFIERS)
    if interval not in table:
        raise ModelInputError(f"{name} is published for intervals of "
                              f"{', '.join(f'{d:g}s' for d in table)}, not {interval:g}s")
    return dict(table[interval])


def scenario(name: str) -> dict:
    if name not in SCENARIOS:
        raise unknown("scenario", name, SCENARIOS)
    return dict(SCENARIOS[name])
