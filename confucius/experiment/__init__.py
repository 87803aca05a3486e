# SPDX-License-Identifier: MIT
"""What every engine's experiments share (README.md): a scenario, its plan and keys, the
engine registry, what a run measured and the results database.

    scenario.py   scenario files, read and checked      keys.py      the stored identity
    schedulers.py the scheduler table, its tc setup     plan.py      the one planner
    shaping.py    the bottleneck's tc lines, traces     engines.py   the registry, Engine
    workload.py   the pages and their digests           results.py   RunData, Measurement
    records.py    checked JSON records                  progress.py  the progress bar
    db.py         the database file, merge, export; db_runs.py, db_flent.py, db_percca.py:
                  each experiment's tables, writer and queries
"""
