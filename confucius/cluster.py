# SPDX-License-Identifier: MIT
"""Dask distributed for the project's long jobs: the simulator's sweeps (sim/sweep.py) and
the lab's matrices (lab/runner.py), each a list of independent tasks whose results this
process stores as they arrive. A local cluster of single-threaded worker processes by
default (a simulation or a VM is one core's work), or an existing scheduler."""

from __future__ import annotations

import time
from contextlib import contextmanager
from typing import Callable, Iterator, Sequence, TypeVar

Task = TypeVar("Task")

# A local cluster's upkeep for a dashboard it does not have: the servers' 20 ms event-loop
# tick, the workers' 10 ms statistical profiler and the 500 ms system monitor. Measured with
# one worker: 9 % of a core when idle, 2.4 % with these settings.
QUIET_CLUSTER = {
    "distributed.admin.tick.interval": "1s",
    "distributed.worker.profile.enabled": False,
    "distributed.admin.system-monitor.interval": "10s",
}


@contextmanager
def dask_client(address: str | None, workers: int):
    """A client of the scheduler at `address` (left as its owner configured it), or of a
    local cluster of `workers` single-threaded processes."""
    import dask
    from distributed import Client, LocalCluster

    if address:
        with Client(address) as client:
            yield client
        return
    # The scheduler's HTTP server on any free port: on 8787, the default, a second cluster warns.
    with dask.config.set(QUIET_CLUSTER), \
            LocalCluster(n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=":0",
                         silence_logs=40) as cluster, Client(cluster) as client:
        client.wait_for_workers(workers)  # so that the first tasks spread over all of them
        yield client


def as_completed(function: Callable, tasks: Sequence[Task], *args, address: str | None = None,
                 workers: int = 2) -> Iterator[tuple[Task, object, str | None, float]]:
    """`function(task, *args)` for each task on a Dask cluster (dask_client), submitted in
    order, yielded as each finishes: (task, result or None, its error or None, the time it
    was submitted)."""
    from distributed import as_completed as finished

    with dask_client(address, workers) as client:
        submitted = {}
        for task in tasks:
            future = client.submit(function, task, *args, pure=False)
            submitted[future.key] = (future, task, time.time())
        for future in finished([f for f, _, _ in submitted.values()]):
            _, task, at = submitted[future.key]
            try:
                result, error = future.result(), None
            except Exception as err:  # the task's own error, raised again here by Dask
                result, error = None, f"{type(err).__name__}: {err}"
            yield task, result, error, at
