# SPDX-License-Identifier: MIT
"""The long jobs' tasks on Dask distributed (confucius/cluster.py): a local cluster without
the upkeep meant for a dashboard, results as they finish, a task's error beside the others'
results."""

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
