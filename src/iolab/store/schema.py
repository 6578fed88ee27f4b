"""The store's tables as SQLAlchemy Core `Table`s — private to `iolab.store`.

The rest of iolab sees `Sample` and `RunInfo` (iolab.model), never these classes, so the
schema can change behind a migration without touching the lab or the statistics.

Metrics and histogram bins are rows, not JSON blobs: a comparison asks for one metric over
hundreds of samples, and `metrics.name` is indexed for that.  The migration in
`migrations/versions` creates exactly this metadata (tests/test_store.py checks it with
alembic's compare_metadata on SQLite and PostgreSQL).

Core, not the ORM's declarative classes: the store reads and writes with `select()` and
`insert()` on these tables, so no command loads `sqlalchemy.orm` (its import alone was most
of `iolab results`' start-up, docs/architecture.md "Start-up").
"""

from __future__ import annotations

from datetime import UTC, datetime

from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
    Column,
    DateTime,
    Dialect,
    Float,
    ForeignKey,
    Index,
    Integer,
    MetaData,
    String,
    Table,
    Text,
    TypeDecorator,
    false,
)

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


metadata = MetaData(naming_convention=NAMING)


def _fk(target: str, ondelete: str) -> ForeignKey:
    return ForeignKey(target, ondelete=ondelete)


runs = Table(
    "runs",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("kind", String(16), nullable=False),
    Column("label", String(200), index=True),
    Column("status", String(16), nullable=False),
    Column("created_at", UTCDateTime(), nullable=False),
    Column("finished_at", UTCDateTime()),
    Column("host", String(255)),
    Column("plan_path", Text),
    Column("plan_text", Text),
    Column("plan_hash", String(128)),
    Column("meta", JSON, nullable=False),
    # the process that runs it now ("host:pid:start"), None when nobody does; taken by a
    # conditional UPDATE so that two processes cannot both continue one run
    Column("claimed_by", String(255)),
    Column("claimed_at", UTCDateTime()),
)

run_tags = Table(
    "run_tags",
    metadata,
    Column("run_id", Integer, _fk("runs.id", "CASCADE"), primary_key=True),
    Column("key", String(200), primary_key=True),
    Column("value", Text, nullable=False),
    Index("ix_run_tags_key_value", "key", "value"),
)

samples = Table(
    "samples",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("run_id", Integer, _fk("runs.id", "CASCADE"), nullable=False),
    Column("variant", String(200)),
    Column("cell", JSON, nullable=False),
    Column("cell_key", Text, nullable=False),  # canonical "k=v,k=v" (sorted keys)
    Column("case_key", Text, nullable=False, server_default=""),  # "cell_key|variant"
    Column("block", Integer),
    Column("position", Integer),
    Column("status", String(16), nullable=False),
    Column("reason", Text),
    Column("tool", String(64)),
    Column("tool_version", String(64)),
    Column("format", String(64)),
    Column("source", Text),
    Column("caption", Text),
    Column("started_at", UTCDateTime()),
    Column("finished_at", UTCDateTime()),
    Column("provenance", JSON, nullable=False),
    Column("jobs", JSON, nullable=False),  # job keys in source order
    Column("host", String(255)),  # the host that measured it (lab runs); NULL for imports
    Index("ix_samples_run_id_variant", "run_id", "variant"),
    # one sample per (run, case, block): a second process or a bug cannot store a
    # duplicate; imports have no block (NULL), and NULLs never collide
    Index("uq_samples_run_id_case_key_block", "run_id", "case_key", "block", unique=True),
)

# A test host of the fleet (docs/fleet.md), as its worker last reported it.  `state` is
# idle | busy | offline (its worker stopped) | quarantined (the controller gave up on it);
# `drained` hosts take no new block.
fleet_hosts = Table(
    "fleet_hosts",
    metadata,
    Column("name", String(255), primary_key=True),
    Column("host_class", String(100), nullable=False),
    Column("state", String(16), nullable=False),
    Column("drained", Boolean, nullable=False, server_default=false()),
    Column("reason", Text),
    Column("heartbeat_at", UTCDateTime()),
    Column("started_at", UTCDateTime()),
    Column("kernel", String(255)),
    Column("boot_id", String(64)),
    Column("current_job", String(255)),
    Column("devices", JSON, nullable=False),
    Column("cmdline", Text),  # /proc/cmdline of the boot the worker started in
    # facts only: no command.  What the controller runs for a host (its power cycle) comes
    # from the controller's own fleet.toml, never from this table.
    Column("device_names", JSON),  # host.toml [devices] names ({dev:NAME} in plans)
    Column("provides", JSON),  # host.toml provides (satisfies a plan's requires:)
    Column("version", String(64)),  # the worker's iolab version
)

# A request to cancel a run (`iolab cancel RUN`): the run's owner — a controller, a local
# run, a bisect — sees it between samples, lets the blocks in flight end cleanly and ends
# the run `cancelled`.
run_cancels = Table(
    "run_cancels",
    metadata,
    Column("run_id", Integer, _fk("runs.id", "CASCADE"), primary_key=True),
    Column("requested_at", UTCDateTime(), nullable=False),
    Column("requested_by", String(255)),
)

# One attempt at one block of a run: the lease (docs/fleet.md "The state machine").  The
# controller creates it `queued`; a worker (or the local runner) turns it `running` with a
# conditional UPDATE — the claim — and heartbeats it; it ends in exactly one terminal state.
# Samples are stored only while their attempt is `running`, in the transaction that ends it.
block_attempts = Table(
    "block_attempts",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("run_id", Integer, _fk("runs.id", "CASCADE"), nullable=False),
    Column("block", Integer, nullable=False),
    Column("attempt", Integer, nullable=False),
    Column("state", String(16), nullable=False),
    Column("host_class", String(100)),
    Column("host", String(255)),
    Column("reason", Text),
    Column("after_decision", Boolean, nullable=False, server_default=false()),
    Column("created_at", UTCDateTime(), nullable=False),
    Column("sent_at", UTCDateTime()),
    Column("claimed_at", UTCDateTime()),
    Column("heartbeat_at", UTCDateTime()),
    Column("ended_at", UTCDateTime()),
    # `booting` (docs/kernels.md): the release it waits for, the boot id left, since when
    Column("boot_kernel", String(255)),
    Column("boot_from", String(64)),
    Column("boot_at", UTCDateTime()),
    Index("uq_block_attempts_run_id_block_attempt", "run_id", "block", "attempt", unique=True),
    Index("ix_block_attempts_state", "state"),
)

# One number of a sample; `job` is '' for the result-level metric.
metrics = Table(
    "metrics",
    metadata,
    Column("sample_id", Integer, _fk("samples.id", "CASCADE"), primary_key=True),
    Column("job", String(200), primary_key=True),
    Column("name", String(200), primary_key=True, index=True),
    Column("value", Float, nullable=False),
)

# One bin of a sample's histogram; `bin` is the bucket value in the unit of `name`.
histograms = Table(
    "histograms",
    metadata,
    Column("sample_id", Integer, _fk("samples.id", "CASCADE"), primary_key=True),
    Column("job", String(200), primary_key=True),
    Column("name", String(200), primary_key=True),
    Column("bin", Float, primary_key=True),
    Column("count", BigInteger, nullable=False),
)

# One regression in the registry (docs/history.md); its status changes are events.
#
# `dedup_key` names it (metric, case, the point the change first shows in); hashed, it and
# its aliases (neighbouring points) are rows of `regression_keys`, unique across entries, so
# the same regression found twice — history run again, its step placed one point later,
# the same compare repeated — is entered once.
regressions = Table(
    "regressions",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("metric", String(200), nullable=False, index=True),
    Column("case_key", Text, nullable=False),
    Column("case", JSON, nullable=False),
    Column("dedup_key", Text, nullable=False),
    Column("origin", String(16), nullable=False),  # history | compare | ab | bisect | lkp
    Column("introduced_run_id", Integer, _fk("runs.id", "SET NULL")),
    Column("last_good_run_id", Integer, _fk("runs.id", "SET NULL")),
    Column("introduced_at", UTCDateTime()),
    Column("commit_range", Text),
    Column("culprit", Text),
    Column("change_pct", Float),
    Column("ci_low_pct", Float),
    Column("ci_high_pct", Float),
    Column("p_value", Float),
    Column("status", String(16), nullable=False),
    Column("created_at", UTCDateTime(), nullable=False),
    Column("details", JSON, nullable=False),
)

# An append-only log line: a status change (or a note) of one regression.
regression_events = Table(
    "regression_events",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("regression_id", Integer, _fk("regressions.id", "CASCADE"), nullable=False, index=True),
    Column("at", UTCDateTime(), nullable=False),
    Column("old_status", String(16)),
    Column("new_status", String(16), nullable=False),
    Column("note", Text),
    Column("evidence_run_id", Integer, _fk("runs.id", "SET NULL")),
)

# Every key an entry is known by (its dedup key and its aliases); unique across entries.
regression_keys = Table(
    "regression_keys",
    metadata,
    Column("key", String(64), primary_key=True),
    Column("regression_id", Integer, _fk("regressions.id", "CASCADE"), nullable=False, index=True),
)
