"""Reading a current SQLite store with the standard library's sqlite3, without SQLAlchemy.

Why a second reader: `iolab results` is run dozens of times an hour, and importing
SQLAlchemy alone costs about 20 times an empty Python's start-up on the lab machines
(bench/startup.py), more than everything else the command does.  Listing runs and a run's
samples needs five plain SELECTs, so a SQLite file whose schema is the newest revision is
read here; everything else (PostgreSQL, an older file, writing, selectors) goes through
`Store`.  The two must agree row for row: tests/test_store_reader.py reads the same
populated stores through both and compares every field.

Values are decoded as SQLAlchemy's types do on SQLite: JSON columns are JSON text, and
timestamps are naive UTC text (`UTCDateTime`) read back as aware datetimes.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from iolab.errors import StoreError
from iolab.model.sample import RunInfo, Sample
from iolab.store import convert
from iolab.store.convert import chunks
from iolab.store.location import QUERY_ONLY, sqlite_read_only_uri
from iolab.store.reader import SampleQuery, StoreReader, no_run_id
from iolab.store.revision import VERSION_TABLE, known_heads

BUSY_TIMEOUT_MS = 30_000  # as the SQLAlchemy engine's (store/engine.py)
_JSON = frozenset({"meta", "cell", "provenance", "jobs"})
_TIMES = frozenset({"created_at", "finished_at", "started_at", "claimed_at"})
_RUN_COLUMNS = (
    "id, kind, label, status, created_at, finished_at, host, plan_path, plan_text, plan_hash, meta"
)
_SAMPLE_COLUMNS = (
    "s.id, s.run_id, s.variant, s.cell, s.block, s.position, s.status, s.reason, s.tool, "
    "s.tool_version, s.format, s.source, s.caption, s.started_at, s.finished_at, "
    "s.provenance, s.jobs, s.host, r.label AS run_label"
)


def _time(text: str | None) -> datetime | None:
    return None if text is None else datetime.fromisoformat(text).replace(tzinfo=UTC)


def _decoded(cursor: sqlite3.Cursor, row: tuple[Any, ...]) -> dict[str, Any]:
    """A row as {column: value}, JSON and timestamps decoded (the cursor's row factory)."""
    out: dict[str, Any] = {}
    for (name, *_), value in zip(cursor.description, row, strict=True):
        if name in _JSON:
            out[name] = json.loads(value)
        elif name in _TIMES:
            out[name] = _time(value)
        else:
            out[name] = value
    return out


def _marks(values: Sequence[Any]) -> str:
    return ", ".join("?" * len(values))


class SQLiteReader(StoreReader):
    """A current SQLite store opened read-only (never written, never created).

    Use `SQLiteReader.open`, which returns None where this reader is not the one to use: a
    missing, foreign, damaged or older file — `open_store` then says what is wrong, or
    upgrades it, with its usual messages.
    """

    def __init__(self, connection: sqlite3.Connection, location: str) -> None:
        self._db = connection
        self.location = location

    @classmethod
    def open(cls, path: Path) -> SQLiteReader | None:
        if not path.is_file():
            return None
        try:
            db = sqlite3.connect(sqlite_read_only_uri(path), uri=True, isolation_level=None)
        except sqlite3.Error:
            return None
        try:
            db.execute(QUERY_ONLY)
            db.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
            found = {str(row[0]) for row in db.execute(f"SELECT version_num FROM {VERSION_TABLE}")}
        except sqlite3.Error:  # no version table, not a database, damaged, ...
            db.close()
            return None
        if not found or found != known_heads():
            db.close()
            return None
        db.row_factory = _decoded
        return cls(db, str(path))

    # -- lifetime -------------------------------------------------------------------------

    def close(self) -> None:
        self._db.close()

    @contextmanager
    def _snapshot(self) -> Iterator[sqlite3.Connection]:
        """One read transaction (one consistent snapshot under WAL) whose failures reach
        the user as one StoreError line, as `Store`'s do."""
        try:
            self._db.execute("BEGIN")
            try:
                yield self._db
            finally:
                self._db.execute("COMMIT")
        except sqlite3.Error as exc:
            first = (str(exc).strip().splitlines() or ["?"])[0]
            raise StoreError(f"store {self.location}: {first}") from None

    # -- runs -----------------------------------------------------------------------------

    def runs(self, label: str | None = None) -> list[RunInfo]:
        """Runs, oldest first, with their tags and sample counts (as `Store.runs`)."""
        where, params = ("WHERE label = ?", (label,)) if label is not None else ("", ())
        with self._snapshot() as db:
            rows = db.execute(f"SELECT {_RUN_COLUMNS} FROM runs {where} ORDER BY id", params)
            return _run_infos(db, rows.fetchall())

    def run(self, run_id: int) -> RunInfo:
        if no_run_id(run_id):
            raise StoreError(f"no run {run_id} in the store")
        with self._snapshot() as db:
            rows = db.execute(f"SELECT {_RUN_COLUMNS} FROM runs WHERE id = ?", (run_id,))
            found = _run_infos(db, rows.fetchall())
        if not found:
            raise StoreError(f"no run {run_id} in the store")
        return found[0]

    def labels(self) -> list[str]:
        """Every label in use, sorted (as `Store.labels`)."""
        with self._snapshot() as db:
            query = "SELECT DISTINCT label FROM runs WHERE label IS NOT NULL"
            return sorted(str(row[0]) for row in _tuples(db, query, ()))

    def variants(self, run_id: int) -> list[str]:
        """Variant names of a run, in the order first stored (as `Store.variants`)."""
        query = (
            "SELECT variant, min(id) AS first FROM samples WHERE run_id = ? AND variant IS NOT "
            "NULL GROUP BY variant ORDER BY first"
        )
        with self._snapshot() as db:
            return [str(row[0]) for row in _tuples(db, query, (run_id,))]

    def cells(self, run_id: int) -> list[dict[str, Any]]:
        """The distinct matrix cells of a run, in the order first stored (as `Store.cells`)."""
        query = (
            "SELECT cell, min(id) AS first FROM samples WHERE run_id = ? GROUP BY cell_key "
            "ORDER BY first"
        )
        with self._snapshot() as db:
            return [dict(json.loads(row[0])) for row in _tuples(db, query, (run_id,))]

    # -- samples --------------------------------------------------------------------------

    def select_samples(self, query: SampleQuery) -> list[Sample]:
        """As `Store.select_samples`, the same rows in the same order."""
        conditions: list[str] = []
        params: list[Any] = []
        for table, column, value in query.equalities():
            conditions.append(f"{table[0]}.{column} = ?")  # samples s, runs r
            params.append(value)
        for key, value in (query.tags or {}).items():
            conditions.append(
                "EXISTS (SELECT 1 FROM run_tags t WHERE t.run_id = s.run_id "
                "AND t.key = ? AND t.value = ?)"
            )
            params += [key, value]
        where = f"WHERE {' AND '.join(conditions)}" if conditions else ""
        sql = (
            f"SELECT {_SAMPLE_COLUMNS} FROM samples s JOIN runs r ON r.id = s.run_id "
            f"{where} ORDER BY s.id"
        )
        with self._snapshot() as db:
            found = {
                row["id"]: convert.sample_of(row, row["run_label"], query.with_jobs)
                for row in db.execute(sql, params)
                if query.keeps_cell(row["cell"])
            }
            if not found:
                return []
            convert.attach_tags(
                found.values(), _tags_of(db, sorted({s.run_id for s in found.values()}))
            )
            job = "" if query.with_jobs else "AND job = ''"
            names = list(query.metrics) if query.metrics is not None else None
            for ids in chunks(list(found)):
                for name_filter, name_params in _name_filters(names):
                    convert.fill_metrics(
                        found,
                        _tuples(
                            db,
                            "SELECT sample_id, job, name, value FROM metrics "
                            f"WHERE sample_id IN ({_marks(ids)}) {job} {name_filter}",
                            [*ids, *name_params],
                        ),
                    )
                if query.with_histograms:
                    convert.fill_histograms(
                        found,
                        _tuples(
                            db,
                            'SELECT sample_id, job, name, bin, "count" FROM histograms '
                            f"WHERE sample_id IN ({_marks(ids)}) {job}",
                            ids,
                        ),
                    )
            return list(found.values())


def _tuples(db: sqlite3.Connection, sql: str, params: Sequence[Any]) -> list[Any]:
    """Rows as plain tuples (a metrics read returns hundreds of thousands of them)."""
    cursor = db.cursor()
    cursor.row_factory = None
    return cursor.execute(sql, params).fetchall()


def _name_filters(names: list[str] | None) -> Iterable[tuple[str, Sequence[str]]]:
    """`AND name IN (...)` in chunks, or no filter at all."""
    if names is None:
        yield "", ()
        return
    for chunk in chunks(names):
        yield f"AND name IN ({_marks(chunk)})", chunk


def _tuples_in(db: sqlite3.Connection, sql: str, values: Sequence[Any]) -> Iterator[Any]:
    """Rows of `sql` run once per chunk of `values`, its `{marks}` the chunk's `?, ?, …`."""
    for chunk in chunks(values):
        yield from _tuples(db, sql.format(marks=_marks(chunk)), chunk)


def _tags_of(db: sqlite3.Connection, run_ids: Sequence[int]) -> dict[int, dict[str, str]]:
    out: dict[int, dict[str, str]] = {}
    query = "SELECT run_id, key, value FROM run_tags WHERE run_id IN ({marks}) ORDER BY run_id, key"
    for run_id, key, value in _tuples_in(db, query, run_ids):
        out.setdefault(run_id, {})[key] = value
    return out


def _run_infos(db: sqlite3.Connection, rows: list[dict[str, Any]]) -> list[RunInfo]:
    ids = [row["id"] for row in rows]
    query = (
        "SELECT run_id, count(*), sum(CASE WHEN status = 'failed' THEN 1 ELSE 0 END) "
        "FROM samples WHERE run_id IN ({marks}) GROUP BY run_id"
    )
    counts = {
        run_id: (int(total), int(failed or 0))
        for run_id, total, failed in _tuples_in(db, query, ids)
    }
    return convert.run_infos(rows, _tags_of(db, ids), counts)
