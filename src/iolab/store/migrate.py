"""Bring a store's schema to the newest revision with alembic, configured in code.

No alembic.ini is read: the script location is the `migrations` directory next to this
module, so an installed iolab migrates its users' stores on open.  A database that holds
tables but no iolab revision is somebody else's and is refused, never altered.

Opening a store that is already current is the common case (`iolab results` dozens of
times an hour), so it costs one query and no alembic: the stored revision is read with plain
SQL and compared with the heads found by reading the revision files' `revision =` and
`down_revision =` lines.  Alembic (about a third of a second to import) is loaded only when
something is to be created, upgraded or refused.

On PostgreSQL the creation or upgrade runs under a transaction-level advisory lock: a lab's
first day (or every host back after a power cut) starts many workers and controllers at
once, and two of them creating the same tables would collide in the catalog (`duplicate key
value violates unique constraint "pg_type_typname_nsp_index"`).  The first takes the lock and
migrates; the others wait for it, then find the schema current and do nothing.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from sqlalchemy import Connection, Engine, column, inspect, select, table, text

from iolab.errors import StoreError
from iolab.store.engine import WRITE_OPTION
from iolab.store.revision import MIGRATIONS, VERSION_TABLE, known_heads

if TYPE_CHECKING:
    from alembic.config import Config
    from alembic.script import ScriptDirectory


def stored_revisions(engine: Engine) -> tuple[str, ...]:
    """The revisions the store records (none for a new or foreign database)."""
    with engine.connect() as conn:
        if not inspect(conn).has_table(VERSION_TABLE):
            return ()
        versions = table(VERSION_TABLE, column("version_num"))
        return tuple(str(v) for v in conn.execute(select(versions.c.version_num)).scalars())


def alembic_config() -> Config:
    from alembic.config import Config

    cfg = Config()
    cfg.set_main_option("script_location", str(MIGRATIONS))
    return cfg


# pg_advisory_xact_lock's key: "iolabmig" as a signed 64-bit number, one per database
MIGRATION_LOCK = int.from_bytes(b"iolabmig", "big", signed=True)


def current_revisions(engine: Engine) -> tuple[str, ...]:
    """The store's revisions as alembic reads them."""
    with engine.connect() as conn:
        return _current_on(conn)


def _current_on(conn: Connection) -> tuple[str, ...]:
    from alembic.runtime.migration import MigrationContext

    ctx = MigrationContext.configure(conn, opts={"version_table": VERSION_TABLE})
    return tuple(ctx.get_current_heads())


def needs_upgrade(engine: Engine, display: str) -> bool:
    """Whether the schema is older than this iolab's (nothing is written to find out);
    StoreError for a foreign or newer database.  A PostgreSQL database without an iolab
    revision is judged under the migration lock instead (`upgrade`): its tables may be
    those another process is creating at this very moment."""
    current = stored_revisions(engine)
    if current and set(current) == known_heads():
        return False
    from alembic.script import ScriptDirectory

    script = ScriptDirectory.from_config(alembic_config())
    with engine.connect() as conn:
        current = _current_on(conn)
        if set(current) == set(script.get_heads()):
            return False
        if conn.dialect.name == "postgresql" and not current:
            return True
        _refuse(conn, script, current, display)
    return True


def _refuse(
    conn: Connection, script: ScriptDirectory, current: tuple[str, ...], display: str
) -> None:
    """StoreError for a database that holds other tables but no iolab revision, or a
    revision this iolab does not know (a newer one's)."""
    from alembic.util import CommandError

    if not current:
        tables = inspect(conn).get_table_names()
        if tables:
            raise StoreError(
                f"{display}: not an iolab store (it holds other tables: {', '.join(tables[:5])})"
            )
    for rev in current:
        try:
            found = script.get_revision(rev)
        except CommandError:
            found = None
        if found is None:
            raise StoreError(f"{display}: made by a newer iolab (schema revision {rev})")


def upgrade(engine: Engine, display: str) -> None:
    """Create or upgrade the schema; StoreError for a foreign or newer database."""
    if not needs_upgrade(engine, display):
        return
    from alembic import command
    from alembic.script import ScriptDirectory

    cfg = alembic_config()
    with engine.execution_options(**{WRITE_OPTION: True}).begin() as conn:
        if conn.dialect.name == "postgresql":
            # held until this transaction ends: a process migrating now is waited for, and
            # what it made is seen whole once the lock is ours
            conn.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": MIGRATION_LOCK})
            script = ScriptDirectory.from_config(cfg)
            current = _current_on(conn)
            if set(current) == set(script.get_heads()):
                return  # done by the process that held the lock
            _refuse(conn, script, current, display)
        cfg.attributes["connection"] = conn
        command.upgrade(cfg, "head")
