# SPDX-License-Identifier: MIT
"""The long jobs' tasks on Dask distributed (confucius/cluster.py): a local cluster without
the upkeep meant for a dashboard, results as they finish, a task's error beside the others'
results."""

import math
import os
import socket
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from confucius import cluster


def _config_of(keys):
    import dask
    return {key: dask.config.get(key) for key in keys}


def _halve(number):
    if number % 2:
        raise ValueError(f"{number} is odd")
    return number // 2


def test_a_local_clusters_workers_run_without_a_dashboards_upkeep():
    with cluster.dask_client(None, 1) as client:
        seen = client.run(_config_of, list(cluster.QUIET_CLUSTER))
    assert list(seen.values()) == [cluster.QUIET_CLUSTER]


def test_every_task_comes_back_once_with_its_result_or_its_error():
    came = {task: (result, error) for task, result, error, _ in cluster.as_completed(_halve, [2, 3, 8], workers=2)}
    assert came == {2: (1, None), 3: (None, "ValueError: 3 is odd"), 8: (4, None)}


def _mark_after(path):
    import time
    from pathlib import Path
    time.sleep(0.5)
    Path(path).touch()
    return path


def test_a_caller_that_stops_early_leaves_no_task_running_and_starts_no_more(tmp_path):
    marks = [str(tmp_path / f"task-{n}") for n in range(6)]
    finished = cluster.as_completed(_mark_after, marks, workers=2)
    first, _, error, _ = next(finished)
    finished.close()
    done = sorted(p.name for p in tmp_path.iterdir())
    # Two at a time: the other task under way finished before the cluster closed, and no
    # third one started.
    assert error is None and first in marks[:2]
    assert done == ["task-0", "task-1"]


def _quick_or_slow(task):
    import time
    time.sleep(0 if task == "quick" else 120)
    return task


def test_ctrl_c_stops_without_waiting_for_the_tasks_under_way():
    import time

    finished = cluster.as_completed(_quick_or_slow, ["quick", "slow", "slow"], workers=2)
    assert next(finished)[0] == "quick"   # one slow task is under way from here on
    started = time.monotonic()
    with pytest.raises(KeyboardInterrupt):
        finished.throw(KeyboardInterrupt)  # where Ctrl-C finds the caller: waiting for the next result
    # The cluster closes at once rather than after the slow task's 120 s.
    assert time.monotonic() - started < 60


def test_tasks_without_a_worker_left_are_not_waited_for():
    # Ctrl-C may stop a local cluster's workers before this process sees it.
    class NoWorkerLeft:
        def nthreads(self):
            return {}

    cluster._wait_while_workers(NoWorkerLeft(), [object()])   # returns: nothing is left to end it


def _scratch_then_die_once(marker):
    import os
    import signal
    from pathlib import Path
    from confucius.cluster import scratch_directory
    if Path(marker).exists():
        return Path(marker).read_text()
    scratch = scratch_directory("confucius-test-")  # never closed: the worker dies holding it
    Path(scratch.name, "episode.csv").touch()
    Path(marker).write_text(scratch.name)
    os.kill(os.getpid(), signal.SIGKILL)


def test_a_killed_workers_scratch_is_removed_when_the_next_worker_starts(tmp_path):
    import dask
    marker = tmp_path / "scratch-path"
    with dask.config.set({"temporary-directory": str(tmp_path / "dask")}):
        [(_, left, error, _)] = cluster.as_completed(_scratch_then_die_once, [str(marker)], workers=1)
    # The nanny started a new worker, which ran the task again and removed the dead one's files.
    assert error is None and left.startswith(str(tmp_path / "dask"))
    assert not Path(left).exists()


def test_scratch_outside_a_worker_is_the_systems_temporary_directory():
    with cluster.scratch_directory("confucius-test-") as scratch:
        assert Path(scratch).parent == Path(tempfile.gettempdir())
    assert not Path(scratch).exists()


def test_a_scheduler_that_does_not_answer_is_named():
    with pytest.raises(cluster.ClusterError, match="no Dask scheduler answers at tcp://127.0.0.1:9"):
        list(cluster.as_completed(_halve, [2], address="tcp://127.0.0.1:9"))


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_tasks_run_on_a_scheduler_and_worker_started_apart(tmp_path):
    # As a user starts them (`dask scheduler`, `dask worker`) for `--scheduler ADDRESS`.
    dask = Path(sys.executable).with_name("dask")
    address = f"tcp://127.0.0.1:{_free_port()}"
    with open(tmp_path / "dask.log", "wb") as log:
        started = [subprocess.Popen([dask, "scheduler", "--host", "127.0.0.1", "--port", address.rsplit(":", 1)[1],
                                     "--no-dashboard"], stdout=log, stderr=log)]
        started.append(subprocess.Popen([dask, "worker", address, "--nworkers", "1", "--nthreads", "1",
                                         "--no-dashboard"], stdout=log, stderr=log,
                                        env={**os.environ, "CONFUCIUS_WORKER_STARTED_APART": "yes"}))
        try:
            came = {task: (result, error) for task, result, error, _ in
                    cluster.as_completed(math.sqrt, [4, -1, 9], address=address)}
            [(_, where, _, _)] = cluster.as_completed(os.getenv, ["CONFUCIUS_WORKER_STARTED_APART"], address=address)
        finally:
            for process in reversed(started):
                process.terminate()
                process.wait(timeout=30)
    assert came == {4: (2.0, None), -1: (None, "ValueError: math domain error"), 9: (3.0, None)}
    assert where == "yes"   # the task ran in that worker, not in a cluster of this process
