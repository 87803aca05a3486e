# SPDX-License-Identifier: MIT
"""The stored identity of a measurement (experiment/keys.py): the digests of cells and
units that the kept databases in data/ were stored under must not move, or a resumed
matrix would measure them again and the reports would no longer pair a unit across
schedulers. Pinned here, and checked against every unit the kept GCC matrix holds."""

import lzma
import shutil
import sqlite3
from pathlib import Path

import pytest

from confucius.experiment import keys, plan, scenario as sc

REPO = Path(__file__).resolve().parents[2]
MATRIX = REPO / "scenarios" / "matrix.toml"
KEPT_GCC = sorted((REPO / "data" / "lab-matrix" / "gcc").glob("*.sqlite.xz"))
# The matrix's GCC cells (UML, repetition 0) and the unit of their first page, p0000, as
# data/lab-matrix/gcc/ stores them.
PINNED = {
    "confucius": ("6fbe2608a0c453991105", "78e8a50213e3722155a8"),
    "confucius-fixed": ("f1565fa1b8ea44ff4796", "0708402fdde64a4359e5"),
    "fq_codel": ("28358b005b0304006448", "783e35ba530a70706d6c"),
    "cake": ("ce4765ca4de9e352d22f", "5298fd3a6b5dd13d3ec9"),
    "fq": ("82a14663bb181c8ddf61", "26765629046c0bc6bf70"),
    "prio": ("fa6af980dfde38985aac", "75ff54df7eb117aa58bb"),
}


@pytest.fixture(scope="module")
def matrix():
    return sc.load(MATRIX)


def test_the_key_format_is_the_one_the_kept_data_was_stored_under():
    assert keys.KEY_FORMAT == 1


def test_the_matrix_cells_keep_their_digests(matrix):
    found = {}
    for cell in plan.cells(matrix, controllers=["gcc"]):
        key = keys.cell_key(matrix, cell)
        found[cell.scheduler.name] = (key, plan.units(matrix, key)[0].key)
    assert found == PINNED


def test_the_optional_conditions_change_the_key_only_when_set(matrix):
    cell = plan.cells(matrix, controllers=["gcc"])[0]
    conditions = keys.conditions(matrix, cell)
    value = conditions.key_input()
    assert matrix.uml.seed is None and matrix.kernel == "6.1" and matrix.flent is None
    assert not {"seed", "kernel", "flent"} & set(value) and "upload_rate_bps" not in value["link"]
    assert (value["engine"], value["time_mode"]) == ("uml", "inf-cpu")
    on_612 = sc.load(MATRIX, kernel="6.12")
    assert keys.conditions(on_612, cell).key_input()["kernel"] == "6.12"
    assert keys.cell_key(on_612, cell) != PINNED[cell.scheduler.name][0]


@pytest.mark.skipif(not KEPT_GCC, reason="no kept GCC matrix in data/")
def test_every_unit_of_the_kept_gcc_matrix_resolves(matrix, tmp_path):
    plain = tmp_path / "gcc.sqlite"
    with lzma.open(KEPT_GCC[0]) as packed, plain.open("wb") as out:
        shutil.copyfileobj(packed, out)
    with sqlite3.connect(plain) as db:
        stored_cells = {row[0] for row in db.execute("SELECT DISTINCT cell_key FROM runs")}
        stored_units = {row[0] for row in db.execute("SELECT DISTINCT unit_key FROM pages")}
    cell_keys = [keys.cell_key(matrix, cell) for cell in plan.cells(matrix, controllers=["gcc"])]
    units = {unit.key for key in cell_keys for unit in plan.units(matrix, key)}
    assert stored_cells == set(cell_keys)
    assert stored_units and stored_units <= units
