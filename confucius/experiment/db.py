# SPDX-License-Identifier: MIT
"""The results database: SQLite (Python's own sqlite3), one file, one row per run, frame,
page, object, flow and qdisc sample. This module holds what every experiment's tables share:
the file, its schema version and upgrades, the scenarios, merging and exporting. Each
experiment's tables, writer and queries stand beside it, and no SQL is written elsewhere:
db_runs.py (the page-load experiment: lab and simulator), db_flent.py (Flent's tests),
db_percca.py (per-CCA queueing).

SQLite rather than DuckDB: it ships with Python (no dependency), a half-written run is
rolled back as a whole (one transaction per run), and the matrix writing while a report
reads is what its WAL mode is for. The tables are small enough (a 1500-page matrix is a
few million frame rows) for either.

Times: `*_ns` columns are the guest's CLOCK_MONOTONIC (per run: the VM boots afresh), `*_s`
columns of objects and connections count from their page load's start, `*_unix` are host
wall clock. Rates in bit/s, delays in ms.

    db = Database("results/lab/lab.sqlite")
    run_id = db_runs.store_run(db, scenario_id, run_info, run_data)
    db.merge("other.sqlite")       # a matrix measured in several processes, as one
    db.export("part.sqlite.xz", since_unix=t0)   # the runs since t0, small, to keep or send
"""

from __future__ import annotations

import json
import lzma
import shutil
import sqlite3
import tempfile
from contextlib import contextmanager
from graphlib import TopologicalSorter
from pathlib import Path
from typing import Iterable, Iterator

from confucius.provenance import recorded_programs

from . import db_flent, db_percca, db_runs

# The lab's database unless told otherwise (`--db`): the runner writes it, the report reads it.
DEFAULT_DB = Path(__file__).resolve().parents[2] / "results" / "lab" / "lab.sqlite"

SCHEMA_VERSION = 12
# Older versions this code still reads, once it has added what they lack: the tables
# (3 added qdisc_flows, 6 the percca_* tables, 7 flent_tests, 10 flent_flows, 11 bulk_rtts,
# 12 host_bytes) and the columns each experiment's ADDED_COLUMNS lists (4 the runs' engine,
# 5 the pages' warm-ups, 8 the runs' seed, 9 the per-CCA runs' versions, 10 the Flent tests'
# bulk RTT).
UPGRADABLE_VERSIONS = {2, 3, 4, 5, 6, 7, 8, 9, 10, 11}
EXPERIMENTS = (db_runs, db_flent, db_percca)
SHARED_TABLES = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS scenarios (
    id INTEGER PRIMARY KEY, name TEXT NOT NULL, digest TEXT NOT NULL, path TEXT, text TEXT NOT NULL,
    UNIQUE (name, digest));
"""
SCHEMA = SHARED_TABLES + "".join(part.TABLES.removeprefix("\n") for part in EXPERIMENTS)
ADDED_COLUMNS = {table: columns for part in EXPERIMENTS for table, columns in part.ADDED_COLUMNS.items()}
# How merge() knows that a source's run is here already: a run copied twice is the same row.
_RUN_IDENTITY = {**db_runs.RUN_IDENTITY, **db_percca.RUN_IDENTITY}
# Rows that runs share rather than own: a source's row becomes the destination's equal one.
_SHARED_IDENTITY = {"scenarios": ("name", "digest")}
# What an export leaves out unless asked for samples (each experiment's SAMPLE_TABLES).
EXPORT_SAMPLE_TABLES = (*db_runs.SAMPLE_TABLES, *db_percca.SAMPLE_TABLES)


class DatabaseError(RuntimeError):
    """A database that is not this project's, or of another schema version."""


class Database:
    def __init__(self, path):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.conn = sqlite3.connect(self.path, timeout=60)
        self.conn.row_factory = sqlite3.Row
        try:
            self.conn.execute("PRAGMA journal_mode=WAL")
            self.conn.execute("PRAGMA foreign_keys=ON")
            self._check_schema()
        except sqlite3.DatabaseError as err:
            self.conn.close()
            raise DatabaseError(f"{self.path} is not a results database: {err}") from None

    def _check_schema(self) -> None:
        tables = {r[0] for r in self.conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        if tables and "meta" not in tables:
            raise DatabaseError(f"{self.path} is an SQLite file but not a results database")
        if "meta" in tables:
            row = self.conn.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()
            if row is None or int(row[0]) not in {SCHEMA_VERSION, *UPGRADABLE_VERSIONS}:
                raise DatabaseError(f"{self.path} has schema version {row[0] if row else '?'}, "
                                    f"this code reads version {SCHEMA_VERSION}")
        with self.conn:
            self._add_missing_columns(tables)
            self.conn.executescript(SCHEMA)
            self.conn.execute("INSERT OR REPLACE INTO meta VALUES ('schema_version', ?)", (str(SCHEMA_VERSION),))

    def _add_missing_columns(self, tables: set[str]) -> None:
        for table, columns in ADDED_COLUMNS.items():
            if table not in tables:
                continue
            have = {r[1] for r in self.conn.execute(f"PRAGMA table_info({table})")}
            for name, declaration in columns:
                if name not in have:
                    self.conn.execute(f"ALTER TABLE {table} ADD COLUMN {name} {declaration}")

    def close(self) -> None:
        self.conn.close()

    def __enter__(self) -> Database:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # ------------------------------------------------------------------ queries

    def query(self, sql: str, params: Iterable = ()) -> list[sqlite3.Row]:
        return self.conn.execute(sql, tuple(params)).fetchall()

    def for_keys(self, sql: str, keys: Iterable[str]) -> Iterator[sqlite3.Row]:
        """The rows of `sql`, whose `{marks}` stands for the keys' placeholders, for all
        `keys`, asked in chunks that SQLite's limit on parameters allows."""
        keys = list(keys)
        for start in range(0, len(keys), 500):
            chunk = keys[start:start + 500]
            yield from self.conn.execute(sql.format(marks=",".join("?" * len(chunk))), chunk)

    def refuse_other_programs(self, found: set[str | None], programs: dict[str, str | None], what: str) -> None:
        """Refuse when the `versions` of stored `what` (cells, points) record another digest
        of a program than `programs` (the digests now) does."""
        # A digest unknown (runs stored before versions were, a program not built now) is no
        # evidence of another program: only two known digests that differ are.
        differing: dict[str, set] = {}
        for versions in found:
            then = recorded_programs(json.loads(versions or "{}"))
            for name, digest in programs.items():
                if None not in (digest, then.get(name)) and then[name] != digest:
                    differing.setdefault(name, set()).add(then[name])
        if differing:
            digests = "; ".join(f"{name} {', '.join(sorted(then))} then, {programs[name]} now"
                                for name, then in sorted(differing.items()))
            raise DatabaseError(f"{self.path} holds measurements of these {what} made by other programs "
                                f"(sha256 {digests}): resuming would mix two versions. Resume with the "
                                f"programs that made them, or measure into another database (--db).")

    # ------------------------------------------------------------------ writing

    def scenario_id(self, name: str, digest: str, path: str, text: str) -> int:
        with self.conn:
            self.conn.execute("INSERT OR IGNORE INTO scenarios (name, digest, path, text) VALUES (?,?,?,?)",
                              (name, digest, path, text))
        return self.conn.execute("SELECT id FROM scenarios WHERE name=? AND digest=?", (name, digest)).fetchone()[0]

    def scenario_names(self) -> list[str]:
        return [r["name"] for r in self.query("SELECT DISTINCT name FROM scenarios ORDER BY name")]

    def scenario_texts(self) -> list[sqlite3.Row]:
        """Every stored scenario's name, path and text, in the order they were stored."""
        return self.query("SELECT name, path, text FROM scenarios ORDER BY id")

    # ------------------------------------------------------------------ merging

    def merge(self, source) -> dict[str, int]:
        """Copy in every run of the results database `source` that this one lacks, with all
        that hangs on it (pages, flows, frames, samples ...), in one transaction: rows get
        new ids, scenarios are shared, runs already here are skipped. The rows copied per table."""
        source = Path(source)
        check_source(source)
        if source.resolve() == self.path.resolve():
            raise DatabaseError(f"{source} is the database it would be merged into")
        with _plain(source) as plain:
            return self._merge_attached(plain)

    def _merge_attached(self, source: Path) -> dict[str, int]:
        self.conn.execute("ATTACH DATABASE ? AS src", (str(source),))
        tables: list[str] = []
        try:
            tables = self._tables_parents_first()
            with self.conn:
                return {table: self._copy_table(table) for table in tables}
        finally:
            for table in tables:
                self.conn.execute(f'DROP TABLE IF EXISTS temp."merged_{table}"')
            self.conn.execute("DETACH DATABASE src")

    # ------------------------------------------------------------------ exporting

    def export(self, target, since_unix: float | None = None, samples: bool = False) -> dict[str, int]:
        """Write the new database `target` with the runs (and per-CCA runs) started at or after
        `since_unix` (all by default), with all that hangs on them. Without `samples`, what the
        load reports do not read is left out (EXPORT_SAMPLE_TABLES), and the RT flows' frames
        and rate logs keep only the time around each page load: a matrix's measurements small
        enough to keep beside the code (data/README.md). A target named *.xz is compressed,
        and `merge` reads it as it is. The rows kept per table."""
        return _write_export(self.conn, Path(target), since_unix, samples)

    def _tables_parents_first(self) -> list[str]:
        def names(schema: str) -> set[str]:
            return {r[0] for r in self.conn.execute(f"SELECT name FROM {schema}.sqlite_master WHERE type='table'")}
        tables = (names("main") & names("src")) - {"meta"}
        return _parents_first(self.conn, tables)

    def _copy_table(self, table: str) -> int:
        """Copy `table`'s rows whose parents were copied, their references renumbered;
        a table with ids records old -> new in temp.merged_TABLE for its children."""
        def columns(schema: str) -> list[str]:
            return [r["name"] for r in self.conn.execute(f'PRAGMA {schema}.table_info("{table}")')]
        mine = columns("main")
        shared = [c for c in mine if c in set(columns("src")) and c != "id"]
        parents = list(_foreign_keys(self.conn, table).items())
        joins = " ".join(f'LEFT JOIN temp."merged_{parent}" p{i} ON p{i}.old = s."{column}"'
                         for i, (column, parent) in enumerate(parents))
        kept = [f'(s."{column}" IS NULL OR p{i}.old IS NOT NULL)' for i, (column, _) in enumerate(parents)]
        if table in _RUN_IDENTITY:
            same = " AND ".join(f'm."{c}" IS s."{c}"' for c in _RUN_IDENTITY[table])
            kept.append(f'NOT EXISTS (SELECT 1 FROM main."{table}" m WHERE {same})')
        where = " WHERE " + " AND ".join(kept) if kept else ""
        renumbered = {column: f"p{i}.new" for i, (column, _) in enumerate(parents)}
        values = ", ".join(renumbered.get(c, f's."{c}"') for c in shared)
        names = ", ".join(f'"{c}"' for c in shared)
        if "id" not in mine:
            return self.conn.execute(f'INSERT INTO main."{table}" ({names}) SELECT {values} FROM src."{table}" s '
                                     f"{joins}{where}").rowcount
        self.conn.execute(f'CREATE TEMP TABLE "merged_{table}" (old INTEGER PRIMARY KEY, new INTEGER NOT NULL)')
        if table in _SHARED_IDENTITY:
            copied = self.conn.execute(f'INSERT OR IGNORE INTO main."{table}" ({names}) '
                                       f'SELECT {values} FROM src."{table}" s {joins}{where}').rowcount
            same = " AND ".join(f'm."{c}" = s."{c}"' for c in _SHARED_IDENTITY[table])
            self.conn.execute(f'INSERT INTO temp."merged_{table}" SELECT s.id, m.id FROM src."{table}" s '
                              f'JOIN main."{table}" m ON {same}')
            return copied
        offset = self.conn.execute(f'SELECT COALESCE(MAX(id), 0) FROM main."{table}"').fetchone()[0]
        self.conn.execute(f'INSERT INTO temp."merged_{table}" SELECT s.id, s.id + ? FROM src."{table}" s '
                          f"{joins}{where}", (offset,))
        return self.conn.execute(f'INSERT INTO main."{table}" (id, {names}) SELECT n.new, {values} '
                                 f'FROM src."{table}" s JOIN temp."merged_{table}" n ON n.old = s.id {joins}').rowcount

    def insert(self, table: str, row: dict) -> int:
        names = ",".join(row)
        marks = ",".join("?" * len(row))
        return self.conn.execute(f"INSERT INTO {table} ({names}) VALUES ({marks})", tuple(row.values())).lastrowid

    def insert_many(self, table: str, columns: tuple[str, ...], rows: Iterable[tuple]) -> None:
        marks = ",".join("?" * len(columns))
        self.conn.executemany(f"INSERT INTO {table} ({','.join(columns)}) VALUES ({marks})", rows)


def _tables(conn: sqlite3.Connection) -> list[str]:
    return [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table' AND name != 'meta' "
                                       "ORDER BY name")]


def _foreign_keys(conn: sqlite3.Connection, table: str) -> dict[str, str]:
    """The parent table of each of `table`'s referencing columns (in the main schema)."""
    return {r[3]: r[2] for r in conn.execute(f'PRAGMA main.foreign_key_list("{table}")')}


def _parents_first(conn: sqlite3.Connection, tables) -> list[str]:
    """`tables`, each after the tables among them that it references."""
    graph = {t: {parent for parent in _foreign_keys(conn, t).values() if parent in tables} for t in tables}
    return list(TopologicalSorter(graph).static_order())


def _prune(conn: sqlite3.Connection, since_unix: float | None, samples: bool) -> None:
    """Reduce a copy of a results database to an export (Database.export), then compact it."""
    with conn:
        if since_unix is not None:
            for table in _RUN_IDENTITY:
                conn.execute(f"DELETE FROM {table} WHERE started_unix < ?", (since_unix,))
        if not samples:
            for table in EXPORT_SAMPLE_TABLES:
                conn.execute(f"DELETE FROM {table}")
            db_runs.prune_to_load_windows(conn)
        for table in _parents_first(conn, set(_tables(conn))):
            for column, parent in _foreign_keys(conn, table).items():
                conn.execute(f'DELETE FROM "{table}" WHERE "{column}" IS NOT NULL '
                             f'AND "{column}" NOT IN (SELECT id FROM "{parent}")')
        used = " UNION ".join(f"SELECT scenario_id FROM {table}" for table in _RUN_IDENTITY)
        conn.execute(f"DELETE FROM scenarios WHERE id NOT IN ({used})")
        # A third of the file, and opening it as a Database makes them again (SCHEMA).
        for (index,) in conn.execute("SELECT name FROM sqlite_master WHERE type='index' AND sql IS NOT NULL").fetchall():
            conn.execute(f'DROP INDEX "{index}"')
    conn.execute("VACUUM")
    conn.execute("PRAGMA journal_mode=DELETE")   # one file, no WAL beside it


def export(source: Path, target: Path, since_unix: float | None = None, samples: bool = False) -> dict[str, int]:
    """Database.export from the results database `source` (NAME.sqlite.xz too), which is
    only read: a matrix may be writing it."""
    check_source(source)
    with _plain(source) as plain:
        conn = sqlite3.connect(f"{plain.resolve().as_uri()}?mode=ro", uri=True)
        try:
            return _write_export(conn, target, since_unix, samples)
        finally:
            conn.close()


def _write_export(conn: sqlite3.Connection, target: Path, since_unix: float | None, samples: bool) -> dict[str, int]:
    if target.exists():
        raise DatabaseError(f"{target} exists: an export goes into a new database")
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="confucius-export-", dir=target.parent) as tmp:
        plain = Path(tmp) / "export.sqlite"
        out = sqlite3.connect(plain)
        try:
            conn.backup(out)
            _prune(out, since_unix, samples)
            counts = {t: out.execute(f'SELECT COUNT(*) FROM "{t}"').fetchone()[0] for t in _tables(out)}
        finally:
            out.close()
        if target.suffix == ".xz":
            with plain.open("rb") as data, lzma.open(plain.with_suffix(".xz"), "wb", preset=9) as packed:
                shutil.copyfileobj(data, packed)
            plain = plain.with_suffix(".xz")
        plain.replace(target)
    return counts


@contextmanager
def _plain(path: Path) -> Iterator[Path]:
    """`path` itself, or for an xz-compressed database (NAME.sqlite.xz) its content in a
    temporary file."""
    if path.suffix != ".xz":
        yield path
        return
    with tempfile.TemporaryDirectory(prefix="confucius-db-") as tmp:
        plain = Path(tmp) / path.stem
        try:
            with lzma.open(path) as packed, plain.open("wb") as out:
                shutil.copyfileobj(packed, out)
        except (lzma.LZMAError, EOFError) as err:
            raise DatabaseError(f"{path} is not an xz-compressed results database: {err}") from None
        yield plain


def check_source(path: Path) -> None:
    """Refuse, before anything changes, a source that is not a results database this code reads."""
    if not path.is_file():
        raise DatabaseError(f"{path}: no such database")
    with _plain(path) as plain:
        _check_plain_source(plain, path)


def _check_plain_source(plain: Path, path: Path) -> None:
    try:
        conn = sqlite3.connect(f"{plain.resolve().as_uri()}?mode=ro", uri=True)
        try:
            row = conn.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()
        finally:
            conn.close()
    except sqlite3.DatabaseError as err:
        raise DatabaseError(f"{path} is not a results database: {err}") from None
    if row is None or int(row[0]) not in {SCHEMA_VERSION, *UPGRADABLE_VERSIONS}:
        raise DatabaseError(f"{path} has schema version {row[0] if row else '?'}, "
                            f"this code reads version {SCHEMA_VERSION}")
