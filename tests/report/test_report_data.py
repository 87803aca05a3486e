# SPDX-License-Identifier: MIT
"""Reading measurements back (confucius/experiment/db_runs.py, for report/data.py): every
query asked once per page load finds its rows through an index, so a report over a 1000-page sweep stays linear."""

import pytest

from confucius.experiment import db_runs
from confucius.experiment.db import Database


@pytest.mark.parametrize("sql", db_runs.PER_LOAD_QUERIES)
def test_a_query_asked_per_load_searches_an_index_and_scans_no_table(tmp_path, sql):
    with Database(tmp_path / "lab.sqlite") as db:
        plan = [row["detail"] for row in db.query("EXPLAIN QUERY PLAN " + sql, [0] * sql.count("?"))]
    print(plan)
    assert plan and not [step for step in plan if step.startswith("SCAN")]
