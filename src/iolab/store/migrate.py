"""Bring a store's schema to the newest revision with alembic, configured in code.

No alembic.ini is read: the script location is the `migrations` directory next to this
module, so an installed iolab migrates its users' stores on open.  A database that holds
tables but no iolab revision is somebody else's and is refused, never altered.

Opening a store that is already current is the common case (`iolab results` dozens of
times an hour), so it costs one query and no alembic: the stored revision is read with plain
SQL and compared with the heads found by reading the revision files' `revision =` and
`down_revision =` lines.  Alembic (about a third of a second to import) is loaded only when
something is to be created, upgraded or refused.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from sqlalchemy import Engine, column, inspect, select, table

from iolab.errors import StoreError
from iolab.store.engine import WRITE_OPTION
from iolab.store.revision import MIGRATIONS, VERSION_TABLE, known_heads

if TYPE_CHECKING:
    from alembic.config import Config


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


def current_revisions(engine: Engine) -> tuple[str, ...]:
    """The store's revisions as alembic reads them."""
    from alembic.runtime.migration import MigrationContext

    with engine.connect() as conn:
        ctx = MigrationContext.configure(conn, opts={"version_table": VERSION_TABLE})
        return tuple(ctx.get_current_heads())


def needs_upgrade(engine: Engine, display: str) -> bool:
    """Whether the schema is older than this iolab's (nothing is written to find out);
    StoreError for a foreign or newer database."""
    current = stored_revisions(engine)
    if current and set(current) == known_heads():
        return False
    from alembic.script import ScriptDirectory
    from alembic.util import CommandError

    script = ScriptDirectory.from_config(alembic_config())
    heads = set(script.get_heads())
    current = current_revisions(engine)
    if set(current) == heads:
        return False
    if not current:
        with engine.connect() as conn:
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
    return True


def upgrade(engine: Engine, display: str) -> None:
    """Create or upgrade the schema; StoreError for a foreign or newer database."""
    if not needs_upgrade(engine, display):
        return
    from alembic import command

    cfg = alembic_config()
    with engine.execution_options(**{WRITE_OPTION: True}).begin() as conn:
        cfg.attributes["connection"] = conn
        command.upgrade(cfg, "head")
