"""The store's tables as a typed SQLAlchemy ORM — private to `iolab.store`.

The rest of iolab sees `Sample` and `RunInfo` (iolab.model), never these classes, so the
schema can change behind a migration without touching the lab or the statistics.

Metrics and histogram bins are rows, not JSON blobs: a comparison asks for one metric over
hundreds of samples, and `metrics.name` is indexed for that.  The migration in
`migrations/versions` creates exactly this metadata (tests/test_store.py checks it with
alembic's compare_metadata on SQLite and PostgreSQL).
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any, ClassVar

from sqlalchemy import (
    JSON,
    BigInteger,
    DateTime,
    Dialect,
    Float,
    ForeignKey,
    Index,
    Integer,
    MetaData,
    String,
    Text,
    TypeDecorator,
)
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

# alembic's own bookkeeping table; a distinct name so a shared PostgreSQL database that
# already holds another application's `alembic_version` does not confuse the two.
VERSION_TABLE = "iolab_schema_version"

# Explicit constraint names: identical on every backend, and alembic can drop them later.
NAMING = {
    "ix": "ix_%(table_name)s_%(column_0_N_name)s",
    "uq": "uq_%(table_name)s_%(column_0_N_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}


class UTCDateTime(TypeDecorator[datetime]):
    """Timestamps stored in UTC and always read back timezone-aware.

    SQLite keeps no zone, PostgreSQL converts to the session's; both come back as UTC.
    A naive datetime handed in is taken to be UTC already.
    """

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            value = value.replace(tzinfo=UTC)
        value = value.astimezone(UTC)
        return value.replace(tzinfo=None) if dialect.name == "sqlite" else value

    def process_result_value(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            return value.replace(tzinfo=UTC)
        return value.astimezone(UTC)


class Base(DeclarativeBase):
    metadata = MetaData(naming_convention=NAMING)
    type_annotation_map: ClassVar[dict[Any, Any]] = {dict[str, Any]: JSON, datetime: UTCDateTime}


class RunRow(Base):
    __tablename__ = "runs"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    kind: Mapped[str] = mapped_column(String(16))
    label: Mapped[str | None] = mapped_column(String(200), index=True)
    status: Mapped[str] = mapped_column(String(16))
    created_at: Mapped[datetime]
    finished_at: Mapped[datetime | None]
    host: Mapped[str | None] = mapped_column(String(255))
    plan_path: Mapped[str | None] = mapped_column(Text)
    plan_text: Mapped[str | None] = mapped_column(Text)
    plan_hash: Mapped[str | None] = mapped_column(String(128))
    meta: Mapped[dict[str, Any]]
    # the process that runs it now ("host:pid:start"), None when nobody does; taken by a
    # conditional UPDATE so that two processes cannot both continue one run
    claimed_by: Mapped[str | None] = mapped_column(String(255))
    claimed_at: Mapped[datetime | None]


class RunTagRow(Base):
    __tablename__ = "run_tags"
    __table_args__ = (Index("ix_run_tags_key_value", "key", "value"),)

    run_id: Mapped[int] = mapped_column(ForeignKey("runs.id", ondelete="CASCADE"), primary_key=True)
    key: Mapped[str] = mapped_column(String(200), primary_key=True)
    value: Mapped[str] = mapped_column(Text)


class SampleRow(Base):
    __tablename__ = "samples"
    __table_args__ = (
        Index("ix_samples_run_id_variant", "run_id", "variant"),
        # one sample per (run, case, block): a second process or a bug cannot store a
        # duplicate; imports have no block (NULL), and NULLs never collide
        Index("uq_samples_run_id_case_key_block", "run_id", "case_key", "block", unique=True),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    run_id: Mapped[int] = mapped_column(ForeignKey("runs.id", ondelete="CASCADE"))
    variant: Mapped[str | None] = mapped_column(String(200))
    cell: Mapped[dict[str, Any]]
    cell_key: Mapped[str] = mapped_column(Text)  # canonical "k=v,k=v" (sorted keys)
    case_key: Mapped[str] = mapped_column(Text, server_default="")  # "cell_key|variant"
    block: Mapped[int | None] = mapped_column(Integer)
    position: Mapped[int | None] = mapped_column(Integer)
    status: Mapped[str] = mapped_column(String(16))
    reason: Mapped[str | None] = mapped_column(Text)
    tool: Mapped[str | None] = mapped_column(String(64))
    tool_version: Mapped[str | None] = mapped_column(String(64))
    format: Mapped[str | None] = mapped_column(String(64))
    source: Mapped[str | None] = mapped_column(Text)
    caption: Mapped[str | None] = mapped_column(Text)
    started_at: Mapped[datetime | None]
    finished_at: Mapped[datetime | None]
    provenance: Mapped[dict[str, Any]]
    jobs: Mapped[list[str]] = mapped_column(JSON)  # job keys in source order


class MetricRow(Base):
    """One number of a sample; `job` is '' for the result-level metric."""

    __tablename__ = "metrics"

    sample_id: Mapped[int] = mapped_column(
        ForeignKey("samples.id", ondelete="CASCADE"), primary_key=True
    )
    job: Mapped[str] = mapped_column(String(200), primary_key=True)
    name: Mapped[str] = mapped_column(String(200), primary_key=True, index=True)
    value: Mapped[float] = mapped_column(Float)


class HistogramRow(Base):
    """One bin of a sample's histogram; `bin` is the bucket value in the unit of `name`."""

    __tablename__ = "histograms"

    sample_id: Mapped[int] = mapped_column(
        ForeignKey("samples.id", ondelete="CASCADE"), primary_key=True
    )
    job: Mapped[str] = mapped_column(String(200), primary_key=True)
    name: Mapped[str] = mapped_column(String(200), primary_key=True)
    bin: Mapped[float] = mapped_column(Float, primary_key=True)
    count: Mapped[int] = mapped_column(BigInteger)


class RegressionRow(Base):
    """One regression in the registry (docs/history.md); its status changes are events.

    `dedup_key` names it (metric, case, the point the change first shows in); hashed, it and
    its aliases (neighbouring points) are rows of `regression_keys`, unique across entries, so
    the same regression found twice — history run again, its step placed one point later,
    the same compare repeated — is entered once.
    """

    __tablename__ = "regressions"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    metric: Mapped[str] = mapped_column(String(200), index=True)
    case_key: Mapped[str] = mapped_column(Text)
    case: Mapped[dict[str, Any]]
    dedup_key: Mapped[str] = mapped_column(Text)
    origin: Mapped[str] = mapped_column(String(16))  # history | compare | ab | bisect
    introduced_run_id: Mapped[int | None] = mapped_column(
        ForeignKey("runs.id", ondelete="SET NULL")
    )
    last_good_run_id: Mapped[int | None] = mapped_column(
        ForeignKey("runs.id", ondelete="SET NULL")
    )
    introduced_at: Mapped[datetime | None]
    commit_range: Mapped[str | None] = mapped_column(Text)
    culprit: Mapped[str | None] = mapped_column(Text)
    change_pct: Mapped[float | None] = mapped_column(Float)
    ci_low_pct: Mapped[float | None] = mapped_column(Float)
    ci_high_pct: Mapped[float | None] = mapped_column(Float)
    p_value: Mapped[float | None] = mapped_column(Float)
    status: Mapped[str] = mapped_column(String(16))
    created_at: Mapped[datetime]
    details: Mapped[dict[str, Any]]


class RegressionEventRow(Base):
    """An append-only log line: a status change (or a note) of one regression."""

    __tablename__ = "regression_events"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    regression_id: Mapped[int] = mapped_column(
        ForeignKey("regressions.id", ondelete="CASCADE"), index=True
    )
    at: Mapped[datetime]
    old_status: Mapped[str | None] = mapped_column(String(16))
    new_status: Mapped[str] = mapped_column(String(16))
    note: Mapped[str | None] = mapped_column(Text)
    evidence_run_id: Mapped[int | None] = mapped_column(
        ForeignKey("runs.id", ondelete="SET NULL")
    )


class RegressionKeyRow(Base):
    """Every key an entry is known by (its dedup key and its aliases); unique across entries."""

    __tablename__ = "regression_keys"

    key: Mapped[str] = mapped_column(String(64), primary_key=True)
    regression_id: Mapped[int] = mapped_column(
        ForeignKey("regressions.id", ondelete="CASCADE"), index=True
    )
