"""The store's API: runs and samples in, `Sample` / `RunInfo` out.

Transactions follow what a crash may leave behind: `add_sample` commits one sample with all
its metrics and bins, or nothing (the lab writes each sample as it finishes); `import_results`
commits a whole import or nothing.  Reads load metrics and bins for all selected samples
in a few set-based queries, never one query per sample.
"""

from __future__ import annotations

import socket
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from itertools import chain, islice
from typing import Any, cast

from sqlalchemy import (
    Connection,
    Engine,
    Row,
    and_,
    case,
    delete,
    exists,
    func,
    insert,
    select,
    update,
)
from sqlalchemy.exc import DBAPIError, IntegrityError

from iolab.errors import RefusedError, StoreError
from iolab.model.result import Result
from iolab.model.sample import RunInfo, Sample, case_key
from iolab.store import convert
from iolab.store.convert import chunks
from iolab.store.engine import WRITE_OPTION
from iolab.store.reader import SampleQuery, StoreReader, no_run_id
from iolab.store.schema import histograms, metrics, run_tags, runs, samples

RUN_KINDS = ("import", "lab", "ab", "bisect")
RUN_STATUSES = ("running", "finished", "interrupted", "cancelled", "failed")
SAMPLE_STATUSES = ("ok", "failed")


def _now() -> datetime:
    return datetime.now(UTC)


class Store(StoreReader):
    """An open results store.  Use `open_store()`; close it (or use `with`) when done."""

    def __init__(self, engine: Engine, display: str) -> None:
        self.engine = engine
        self.location = display
        self._writer = engine.execution_options(**{WRITE_OPTION: True})

    # -- lifetime -------------------------------------------------------------------------

    def close(self) -> None:
        self.engine.dispose()

    @contextmanager
    def _session(self, write: bool = False) -> Iterator[Connection]:
        """A connection (one transaction: `commit()` or it is rolled back) whose database
        failures reach the user as one StoreError line.  SQLAlchemy Core, not the ORM:
        `sqlalchemy.orm` is never imported, which keeps `iolab results` quick to start."""
        try:
            with (self._writer if write else self.engine).connect() as session:
                yield session
        # OperationalError, DataError, IntegrityError, ... and InterfaceError: a connection
        # the server closed while PostgreSQL restarts is one line to wait on, not a traceback
        except DBAPIError as exc:
            first = str(exc.orig).strip().splitlines()[0] if exc.orig else str(exc)
            raise StoreError(f"store {self.location}: {first}") from None

    # -- writing --------------------------------------------------------------------------

    def create_run(
        self,
        kind: str,
        label: str | None = None,
        tags: Mapping[str, str] | None = None,
        plan_path: str | None = None,
        plan_text: str | None = None,
        plan_hash: str | None = None,
        host: str | None = None,
        meta: Mapping[str, Any] | None = None,
        claimed_by: str | None = None,
    ) -> int:
        """A new run in status "running" (claimed by `claimed_by` from the start); its id."""
        with self._session(write=True) as session:
            run_id = self._insert_run(
                session, kind, label, tags, plan_path, plan_text, plan_hash, host, meta
            )
            if claimed_by is not None:
                session.execute(
                    update(runs)
                    .where(runs.c.id == run_id)
                    .values(claimed_by=claimed_by, claimed_at=_now())
                )
            session.commit()
            return run_id

    def claim_run(self, run_id: int, owner: str, owner_alive: Callable[[str], bool]) -> None:
        """Make `owner` the one process continuing run `run_id`, atomically: a conditional
        UPDATE that only succeeds while the claim is still what was read (nobody, or an owner
        `owner_alive` says is gone).  RefusedError when a live owner holds it."""
        for _ in range(5):
            with self._session() as session:
                row = None if no_run_id(run_id) else _run_row(session, run_id)
                if row is None:
                    raise StoreError(f"no run {run_id} in the store")
                current = row.claimed_by
            if current == owner:
                return
            if current is not None and owner_alive(current):
                raise RefusedError(
                    f"run {run_id} is still running ({describe_owner(current)}); "
                    "wait for it or stop it first"
                )
            claim = runs.c.claimed_by
            held = claim.is_(None) if current is None else claim == current
            with self._session(write=True) as session:
                done = session.execute(
                    update(runs)
                    .where(runs.c.id == run_id, held)
                    .values(claimed_by=owner, claimed_at=_now())
                )
                session.commit()
                if done.rowcount == 1:
                    return
        raise RefusedError(f"run {run_id} is being claimed by another process; try again")

    def finish_run(self, run_id: int, status: str = "finished") -> None:
        """Set a run's status; any status but "running" also stamps `finished_at`."""
        if status not in RUN_STATUSES:
            raise ValueError(f"run status {status!r} is not one of {RUN_STATUSES}")
        finished = None if status == "running" else _now()
        values: dict[str, Any] = {"status": status, "finished_at": finished}
        if status != "running":
            values.update(claimed_by=None, claimed_at=None)  # its owner lets go
        with self._session(write=True) as session:
            done = session.execute(update(runs).where(runs.c.id == run_id).values(**values))
            if done.rowcount == 0:
                raise StoreError(f"no run {run_id} in the store")
            session.commit()

    def update_run_meta(self, run_id: int, meta: Mapping[str, Any]) -> None:
        """Merge keys into a run's `meta` (e.g. what the lab learns only at the end)."""
        with self._session(write=True) as session:
            row = _run_row(session, run_id)
            if row is None:
                raise StoreError(f"no run {run_id} in the store")
            merged = {**row.meta, **meta}
            session.execute(update(runs).where(runs.c.id == run_id).values(meta=merged))
            session.commit()

    def add_sample(self, sample: Sample) -> int:
        """Store one sample with its metrics and bins in one transaction; its id."""
        with self._session(write=True) as session:
            if _run_row(session, sample.run_id) is None:
                raise StoreError(f"no run {sample.run_id} in the store")
            try:
                sample_id = self._insert_sample(session, sample)
                session.commit()
            except IntegrityError:
                raise StoreError(
                    f"run {sample.run_id} holds block {sample.block} of case "
                    f"{sample.case_key} already: not stored twice"
                ) from None
            return sample_id

    def import_results(
        self, results: Iterable[Result], label: str, tags: Mapping[str, str] | None = None
    ) -> int:
        """One "import" run holding one sample per Result — all of them or, on error, none.

        `results` may be an iterator still producing them: they are stored 500 at a time as
        they come, and an exception it raises rolls the whole import back like any other."""
        return self.import_batches(
            (convert.import_batch(chunk) for chunk in _batches(results, _SAMPLE_BATCH)),
            label,
            tags,
        )

    def import_batches(
        self,
        batches: Iterable[convert.ImportBatch],
        label: str,
        tags: Mapping[str, str] | None = None,
    ) -> int:
        """`import_results` of results already made into rows (convert.import_batch), e.g.
        by the process that parses the files while this one stores them."""
        pending = iter(batches)
        first = next(pending, None)  # nothing at all: refused before the store is written
        if first is None:
            raise StoreError("nothing to import: no results")
        with self._session(write=True) as session:
            run_id = self._insert_run(
                session, "import", label, tags, None, None, None, socket.gethostname(), None
            )
            stored = 0
            for batch in chain([first], pending):
                stored += self._insert_batch(session, run_id, batch)
            if not stored:
                raise StoreError("nothing to import: no results")  # rolled back
            session.execute(
                update(runs)
                .where(runs.c.id == run_id)
                .values(status="finished", finished_at=_now())
            )
            session.commit()
            return run_id

    def delete_run(self, run_id: int) -> None:
        """Remove a run with its tags, samples, metrics and bins."""
        with self._session(write=True) as session:
            sample_ids = select(samples.c.id).where(samples.c.run_id == run_id)
            # explicit, not only ON DELETE CASCADE: a SQLite connection without the
            # foreign_keys pragma (an old tool, a shell) must not orphan rows either
            session.execute(delete(metrics).where(metrics.c.sample_id.in_(sample_ids)))
            session.execute(delete(histograms).where(histograms.c.sample_id.in_(sample_ids)))
            session.execute(delete(samples).where(samples.c.run_id == run_id))
            session.execute(delete(run_tags).where(run_tags.c.run_id == run_id))
            gone = session.execute(delete(runs).where(runs.c.id == run_id))
            if gone.rowcount == 0:
                raise StoreError(f"no run {run_id} in the store")
            session.commit()

    @staticmethod
    def _insert_run(
        session: Connection,
        kind: str,
        label: str | None,
        tags: Mapping[str, str] | None,
        plan_path: str | None,
        plan_text: str | None,
        plan_hash: str | None,
        host: str | None,
        meta: Mapping[str, Any] | None,
    ) -> int:
        if kind not in RUN_KINDS:
            raise ValueError(f"run kind {kind!r} is not one of {RUN_KINDS}")
        run_id = session.execute(
            insert(runs)
            .values(
                kind=kind,
                label=label,
                status="running",
                created_at=_now(),
                finished_at=None,
                host=host,
                plan_path=plan_path,
                plan_text=plan_text,
                plan_hash=plan_hash,
                meta=dict(meta or {}),
            )
            .returning(runs.c.id)
        ).scalar_one()
        if tags:
            session.execute(
                insert(run_tags),
                [{"run_id": run_id, "key": k, "value": str(v)} for k, v in tags.items()],
            )
        return int(run_id)

    @staticmethod
    def _insert_batch(conn: Connection, run_id: int, batch: convert.ImportBatch) -> int:
        """A batch of import samples in three statements: one multi-row INSERT … RETURNING
        for the samples, the driver's executemany for their metrics and for their bins (Core
        and plain tuples, not the ORM's per-row bookkeeping, which was most of an import's
        time: bench/import_speed.py).  How many samples."""
        if not batch.samples:
            return 0
        rows = [{**values, "run_id": run_id} for values in batch.samples]
        for row in rows:
            if row["status"] not in SAMPLE_STATUSES:
                raise ValueError(f"sample status {row['status']!r} is not one of {SAMPLE_STATUSES}")
        returned = conn.execute(
            insert(samples).returning(samples.c.id, sort_by_parameter_order=True), rows
        )
        ids = [int(row[0]) for row in returned]
        _insert_indexed(conn, "metrics", convert.METRIC_COLUMNS, ids, batch.metrics)
        _insert_indexed(conn, "histograms", convert.HISTOGRAM_COLUMNS, ids, batch.histograms)
        return len(ids)

    @staticmethod
    def _insert_sample(session: Connection, sample: Sample) -> int:
        if sample.status not in SAMPLE_STATUSES:
            raise ValueError(f"sample status {sample.status!r} is not one of {SAMPLE_STATUSES}")
        sample_id = int(
            session.execute(
                insert(samples).values(**convert.sample_values(sample)).returning(samples.c.id)
            ).scalar_one()
        )
        metric_rows = convert.metric_rows(sample_id, sample)
        if metric_rows:
            session.execute(insert(metrics), metric_rows)
        hist_rows = convert.histogram_rows(sample_id, sample)
        if hist_rows:
            session.execute(insert(histograms), hist_rows)
        return sample_id

    # -- reading runs ---------------------------------------------------------------------

    def runs(
        self,
        label: str | None = None,
        kind: str | None = None,
        tags: Mapping[str, str] | None = None,
    ) -> list[RunInfo]:
        """Runs, oldest first, with their tags and sample counts."""
        query = select(runs)
        if label is not None:
            query = query.where(runs.c.label == label)
        if kind is not None:
            query = query.where(runs.c.kind == kind)
        query = query.where(*_tag_conditions(runs.c.id, tags))
        with self._session() as session:
            rows = list(session.execute(query.order_by(runs.c.id)))
            return _run_infos(session, rows)

    def run(self, run_id: int) -> RunInfo:
        if no_run_id(run_id):
            raise StoreError(f"no run {run_id} in the store")
        with self._session() as session:
            row = _run_row(session, run_id)
            if row is None:
                raise StoreError(f"no run {run_id} in the store")
            return _run_infos(session, [row])[0]

    def labels(self) -> list[str]:
        """Every label in use, sorted."""
        with self._session() as session:
            query = select(runs.c.label).where(runs.c.label.is_not(None)).distinct()
            return sorted(label for label in session.scalars(query) if label is not None)

    # -- reading samples ------------------------------------------------------------------

    def select_samples(self, query: SampleQuery) -> list[Sample]:
        """`samples`: metrics and bins for all selected samples in a few set-based queries."""
        tables = {"samples": samples, "runs": runs}
        sql = (
            select(samples, runs.c.label.label("run_label"))
            .join(runs, runs.c.id == samples.c.run_id)
            .where(*(tables[t].c[column] == value for t, column, value in query.equalities()))
            .where(*_tag_conditions(samples.c.run_id, query.tags))
        )
        with self._session() as session:
            found = {
                row.id: convert.sample_of(row._mapping, row.run_label, query.with_jobs)
                for row in session.execute(sql.order_by(samples.c.id))
                if query.keeps_cell(row.cell)
            }
            if not found:
                return []
            convert.attach_tags(
                found.values(), _tags_of(session, {s.run_id for s in found.values()})
            )
            m, h = metrics.c, histograms.c
            for chunk in chunks(list(found)):
                mquery = select(m.sample_id, m.job, m.name, m.value).where(m.sample_id.in_(chunk))
                hquery = select(h.sample_id, h.job, h.name, h.bin, h.count).where(
                    h.sample_id.in_(chunk)
                )
                if query.metrics is not None:
                    mquery = mquery.where(m.name.in_(list(query.metrics)))
                if not query.with_jobs:
                    mquery = mquery.where(m.job == convert.RESULT_LEVEL)
                    hquery = hquery.where(h.job == convert.RESULT_LEVEL)
                convert.fill_metrics(found, session.execute(mquery))
                if query.with_histograms:
                    convert.fill_histograms(found, session.execute(hquery))
            return list(found.values())

    def done_keys(self, run_id: int, include_failed: bool = True) -> set[tuple[str, int]]:
        """(case_key, block) of the samples a run already holds, for `iolab run --resume`.

        A failed sample was run too and counts as done unless `include_failed` is False.
        """
        s = samples.c
        query = select(s.cell_key, s.variant, s.block).where(
            s.run_id == run_id, s.block.is_not(None)
        )
        if not include_failed:
            query = query.where(s.status == "ok")
        with self._session() as session:
            return {
                (case_key(key, variant), block)
                for key, variant, block in session.execute(query)
                if block is not None
            }

    def variants(self, run_id: int) -> list[str]:
        """Variant names of a run, in the order first stored."""
        query = (
            select(samples.c.variant, func.min(samples.c.id).label("first"))
            .where(samples.c.run_id == run_id, samples.c.variant.is_not(None))
            .group_by(samples.c.variant)
            .order_by("first")
        )
        with self._session() as session:
            return [v for v, _ in session.execute(query) if v is not None]

    def cells(self, run_id: int) -> list[dict[str, Any]]:
        """The distinct matrix cells of a run, in the order first stored."""
        query = (
            select(samples.c.cell_key, func.min(samples.c.id).label("first"))
            .where(samples.c.run_id == run_id)
            .group_by(samples.c.cell_key)
            .order_by("first")
        )
        with self._session() as session:
            firsts = [first for _, first in session.execute(query)]
            if not firsts:
                return []
            rows = session.execute(
                select(samples.c.id, samples.c.cell).where(samples.c.id.in_(firsts))
            )
            cells = {sample_id: cell for sample_id, cell in rows}
            return [dict(cells[i]) for i in firsts]

    def metric_names(self, run_id: int | None = None, label: str | None = None) -> list[str]:
        """Result-level metric names present in the selected samples, sorted."""
        query = (
            select(metrics.c.name)
            .join(samples, samples.c.id == metrics.c.sample_id)
            .join(runs, runs.c.id == samples.c.run_id)
            .where(metrics.c.job == convert.RESULT_LEVEL)
            .distinct()
        )
        if run_id is not None:
            query = query.where(samples.c.run_id == run_id)
        if label is not None:
            query = query.where(runs.c.label == label)
        with self._session() as session:
            return sorted(session.scalars(query))


def describe_owner(owner: str) -> str:
    """`host:pid:start` as a person reads it."""
    parts = owner.split(":")
    if len(parts) >= 3:
        return f"pid {parts[-2]} on {':'.join(parts[:-2])}"
    return owner


def _tag_conditions(run_id_col: Any, tags: Mapping[str, str] | None) -> list[Any]:
    """One EXISTS per tag: the run must carry every given key with that value."""
    return [
        exists().where(
            and_(run_tags.c.run_id == run_id_col, run_tags.c.key == key, run_tags.c.value == value)
        )
        for key, value in (tags or {}).items()
    ]


def _tags_of(session: Connection, run_ids: set[int]) -> dict[int, dict[str, str]]:
    out: dict[int, dict[str, str]] = {}
    ids = sorted(run_ids)
    for chunk in chunks(ids):
        rows = session.execute(
            select(run_tags.c.run_id, run_tags.c.key, run_tags.c.value)
            .where(run_tags.c.run_id.in_(chunk))
            .order_by(run_tags.c.run_id, run_tags.c.key)
        )
        for run_id, key, value in rows:
            out.setdefault(run_id, {})[key] = value
    return out


def _run_row(session: Connection, run_id: int) -> Row[Any] | None:
    """The `runs` row of an id, or None."""
    return session.execute(select(runs).where(runs.c.id == run_id)).first()


def _run_infos(session: Connection, rows: list[Row[Any]]) -> list[RunInfo]:
    if not rows:
        return []
    ids = [row.id for row in rows]
    tags = _tags_of(session, set(ids))
    counts: dict[int, tuple[int, int]] = {}
    for chunk in chunks(ids):
        query = (
            select(
                samples.c.run_id,
                func.count(),
                func.sum(case((samples.c.status == "failed", 1), else_=0)),
            )
            .where(samples.c.run_id.in_(chunk))
            .group_by(samples.c.run_id)
        )
        for run_id, total, failed in session.execute(query):
            counts[run_id] = (int(total), int(failed or 0))
    return convert.run_infos([row._mapping for row in rows], tags, counts)


_SAMPLE_BATCH = 500  # samples per INSERT … RETURNING


def _insert_indexed(
    conn: Connection,
    table: str,
    columns: tuple[str, ...],
    ids: Sequence[int],
    rows: convert.Columns,
) -> None:
    """Rows whose first value indexes `ids`, with the DB-API's own executemany, fed by an
    iterator (no list of a million tuples, no per-row parameter processing: plain numbers
    and strings).  The ids of one INSERT … RETURNING are consecutive in practice (SQLite
    under the write lock, a sequence nobody else draws from at that moment): then the
    database adds the first id to each index; otherwise each row gets its id here."""
    if not len(rows):
        return
    style = conn.dialect.paramstyle
    if style not in ("qmark", "format", "pyformat"):
        raise ValueError(f"unsupported DB-API paramstyle {style!r}")
    marks = ["?" if style == "qmark" else "%s"] * len(columns)
    first = ids[0]
    params: Iterator[tuple[Any, ...]]
    if ids == list(range(first, first + len(ids))):
        marks[0] = f"{marks[0]} + {int(first)}"
        params = rows.rows()
    else:
        params = ((ids[index], *rest) for index, *rest in rows.rows())
    sql = f"INSERT INTO {table} ({', '.join(columns)}) VALUES ({', '.join(marks)})"
    dbapi_error = conn.dialect.loaded_dbapi.Error
    if not conn.in_transaction():
        conn.begin()  # the cursor below writes in the transaction the caller commits
    cursor = conn.connection.cursor()  # the transaction's own connection
    # PEP 249 asks for a sequence; sqlite3 takes any iterable, and the iterator saves
    # building a million tuples at once
    batch = (
        cast("Sequence[Sequence[Any]]", params) if conn.dialect.name == "sqlite" else list(params)
    )
    try:
        cursor.executemany(sql, batch)
    except dbapi_error as exc:  # as SQLAlchemy would raise it: _session makes it one line
        raise DBAPIError.instance(sql, None, exc, dbapi_error) from None
    finally:
        cursor.close()


def _batches(items: Iterable[Result], size: int) -> Iterator[list[Result]]:
    it = iter(items)
    while chunk := list(islice(it, size)):
        yield chunk
