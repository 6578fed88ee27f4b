"""Bring a store's schema to the newest revision with alembic, configured in code.

No alembic.ini is read: the script location is the `migrations` directory next to this
module, so an installed iolab migrates its users' stores on open.  A database that holds
tables but no iolab revision is somebody else's and is refused, never altered.
"""

from __future__ import annotations

from pathlib import Path

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from alembic.util import CommandError
from sqlalchemy import Engine, inspect

from iolab.errors import StoreError
from iolab.store.engine import WRITE_OPTION
from iolab.store.schema import VERSION_TABLE

MIGRATIONS = Path(__file__).with_name("migrations")


def alembic_config() -> Config:
    cfg = Config()
    cfg.set_main_option("script_location", str(MIGRATIONS))
    return cfg


def current_revisions(engine: Engine) -> tuple[str, ...]:
    with engine.connect() as conn:
        ctx = MigrationContext.configure(conn, opts={"version_table": VERSION_TABLE})
        return tuple(ctx.get_current_heads())


def upgrade(engine: Engine, display: str) -> None:
    """Create or upgrade the schema; StoreError for a foreign or newer database."""
    cfg = alembic_config()
    script = ScriptDirectory.from_config(cfg)
    heads = set(script.get_heads())
    current = current_revisions(engine)
    if set(current) == heads:
        return
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
    with engine.execution_options(**{WRITE_OPTION: True}).begin() as conn:
        cfg.attributes["connection"] = conn
        command.upgrade(cfg, "head")
