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
    assert not {"seed", "kernel", "flent"} & set(value) and not {"upload_rate_bps", "traces"} & set(value["link"])
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


# A scenario on a set of two traces, and its pages: what keys.load_trace draws from.
ON_A_SET = """
name = "on-a-set"
seed = {seed}
[link]
traces = "set"
[schedulers]
names = ["fq", "confucius"]
[rt]
controllers = ["gcc", "copa"]
[web]
pages = [{pages}]
"""
PAGES = [f"flows-{n}-size-30000" for n in range(1, 41)]


def on_a_set(folder: Path, seed: int = 0, pages=PAGES) -> sc.Scenario:
    (folder / "set").mkdir(exist_ok=True)
    for name, rates in (("a.log", range(1, 50)), ("b.log", range(60, 90))):
        if not (folder / "set" / name).exists():
            (folder / "set" / name).write_text("".join(f"{100 + t / 5:.1f} {rate}\n" for t, rate in enumerate(rates)))
    path = folder / f"s{seed}.toml"
    path.write_text(ON_A_SET.format(seed=seed, pages=", ".join(f'"{p}"' for p in pages)))
    return sc.load(path, ccas=("cubic",))


def draws(scenario, cell):
    return [keys.load_trace(scenario, cell, ref) for ref in scenario.web.pages]


def test_each_load_draws_a_trace_of_the_set_and_one_of_its_points(tmp_path):
    scenario = on_a_set(tmp_path)
    drawn = draws(scenario, plan.cells(scenario)[0])
    assert {d.name for d in drawn} == {"a.log", "b.log"}
    for d in drawn:
        assert d.path == tmp_path / "set" / d.name
        times = [round(n / 5, 6) for n in range(49 if d.name == "a.log" else 30)]
        assert d.offset_s in times     # from the trace's own start, whatever its first time
    assert len({d.offset_s for d in drawn}) > len(drawn) // 2


def test_every_cell_meets_a_page_on_the_same_draw_and_a_rerun_draws_the_same(tmp_path):
    scenario = on_a_set(tmp_path)
    first, *others = [draws(scenario, cell) for cell in plan.cells(scenario)]
    assert all(other == first for other in others)
    assert draws(on_a_set(tmp_path), plan.cells(scenario)[0]) == first


def test_another_seed_or_repetition_draws_otherwise(tmp_path):
    scenario = on_a_set(tmp_path)
    cell = plan.cells(scenario)[0]
    assert draws(on_a_set(tmp_path, seed=1), cell) != draws(scenario, cell)
    again = keys.Cell(cell.scheduler, cell.rt, repetition=1)
    assert draws(scenario, again) != draws(scenario, cell)


def test_a_rate_or_a_single_trace_draws_nothing(matrix):
    cell = plan.cells(matrix)[0]
    assert all(keys.load_trace(matrix, cell, ref) is None for ref in matrix.web.pages[:3])


def test_the_set_its_traces_and_the_seed_name_the_cell(tmp_path):
    scenario = on_a_set(tmp_path)
    cell = plan.cells(scenario)[0]
    key = keys.cell_key(scenario, cell)
    names = [name for name, _ in keys.conditions(scenario, cell).key_input()["link"]["traces"][1]]
    assert names == ["a.log", "b.log"]
    assert keys.cell_key(on_a_set(tmp_path, seed=1), cell) != key
    (tmp_path / "set" / "b.log").write_text("0 5\n")
    changed = keys.cell_key(on_a_set(tmp_path), cell)
    (tmp_path / "set" / "c.log").write_text("0 5\n")
    assert len({key, changed, keys.cell_key(on_a_set(tmp_path), cell)}) == 3


def test_the_lab_refuses_a_set_in_one_line(tmp_path):
    from confucius.lab import runner

    with pytest.raises(runner.RunnerError, match=r"link.traces: the lab plays one trace per run"):
        runner.plan(on_a_set(tmp_path), None)
