# SPDX-License-Identifier: MIT
"""Dask distributed for the project's long jobs: the simulator's sweeps (sim/sweep.py) and
the lab's matrices (lab/runner.py), each a list of independent tasks whose results this
process stores as they arrive. A local cluster of single-threaded worker processes by
default (a simulation or a VM is one core's work), or an existing scheduler."""

from __future__ import annotations

import tempfile
import time
from contextlib import contextmanager
from itertools import islice
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


class ClusterError(RuntimeError):
    """No Dask to run the tasks on: the package is missing or the scheduler cannot be reached."""


@contextmanager
def dask_client(address: str | None, workers: int):
    """A client of the scheduler at `address` (left as its owner configured it), or of a
    local cluster of `workers` single-threaded processes."""
    try:
        import dask
        from distributed import Client, LocalCluster
    except ImportError as err:
        raise ClusterError(f"Dask distributed is not installed ({err}): pip install -e '.[lab,sim]'") from None
    if address:
        try:
            client = Client(address, timeout="10s")
        except (OSError, TimeoutError) as err:
            raise ClusterError(f"no Dask scheduler answers at {address}: {err}") from None
        with client:
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
    """`function(task, *args)` for each task on a Dask cluster (dask_client), yielded as each
    finishes: (task, result or None, its error or None, the time it was submitted). Tasks
    are submitted in order, only as many at once as the workers have threads, so each
    result is let go once read and a stop stops before the next task. If the caller stops
    early, this waits for the tasks under way before the cluster closes: a task that owns
    an outside process (a VM) ends it itself. Ctrl-C does not wait: it reaches a local
    cluster's workers and their processes as well, and their tasks would never end."""
    from distributed import as_completed as finished

    with dask_client(address, workers) as client:
        waiting = iter(tasks)
        under_way: dict[str, tuple[object, Task, float]] = {}
        done = finished()

        def submit(count: int) -> None:
            for task in islice(waiting, count):
                future = client.submit(function, task, *args, pure=False)
                under_way[future.key] = (future, task, time.time())
                done.add(future)

        submit(max(1, sum(client.nthreads().values())))
        try:
            for future in done:
                _, task, at = under_way.pop(future.key)
                try:
                    result, error = future.result(), None
                except Exception as err:  # the task's own error, raised again here by Dask
                    result, error = None, f"{type(err).__name__}: {err}"
                future.release()
                yield task, result, error, at
                submit(1)
        except KeyboardInterrupt:
            client.cancel([future for future, _, _ in under_way.values()], force=True)
            under_way.clear()
            raise
        finally:
            _wait_while_workers(client, [future for future, _, _ in under_way.values()])


def scratch_directory(prefix: str) -> tempfile.TemporaryDirectory:
    """A temporary directory for a task's files: inside the Dask worker's own directory when
    a worker runs the task, the system's temporary directory otherwise. A worker ended by a
    signal (a cluster closed under way, Ctrl-C) cannot remove it, and Dask removes a dead
    worker's directory when the next worker starts on that machine."""
    try:
        from distributed import get_worker
        root = get_worker().local_directory
    except (ImportError, ValueError):  # ValueError: not in a worker
        root = None
    return tempfile.TemporaryDirectory(prefix=prefix, dir=root)


# How often a wait for the tasks under way looks whether any worker is left.
WORKERS_POLL_S = 1.0


def _wait_while_workers(client, futures: list) -> None:
    """Wait for `futures` to end, while the cluster has a worker to end them: Ctrl-C can
    stop a local cluster's workers before this process sees it (their tasks then end
    cancelled, not interrupted), and a task without a worker is never done."""
    from distributed import wait

    while futures and client.nthreads():
        try:
            wait(futures, timeout=WORKERS_POLL_S)
            return
        except TimeoutError:
            continue
