# SPDX-License-Identifier: MIT
"""Measures of a page load shared by the reference model and real loads.

"Concurrent active flows" follows seed 000 §2.3: a flow (TCP connection) is ACTIVE at time t
when it received bytes in the last 10 ms; the page's figure is the peak over the load.
"""

from collections.abc import Iterable, Mapping

ACTIVE_WINDOW_S = 0.010


def peak_active(transfers: Mapping[object, Iterable[tuple[float, float]]],
                window: float = ACTIVE_WINDOW_S) -> int:
    """Peak number of connections that received bytes within the last `window` seconds.

    `transfers` maps a connection to the (start, end) times during which it received bytes. A
    connection counts once however many of its intervals fall in the window.
    """
    edges = []
    for intervals in transfers.values():
        for start, end in _merged((s, e + window) for s, e in intervals):
            edges.append((start, 1))
            edges.append((end, -1))
    # At equal times the end comes first: touching intervals never count twice.
    edges.sort(key=lambda edge: (edge[0], edge[1]))
    active = peak = 0
    for _, step in edges:
        active += step
        peak = max(peak, active)
    return peak


def _merged(intervals):
    merged = []
    for start, end in sorted(intervals):
        if merged and start <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], end)
        else:
            merged.append([start, end])
    return merged
