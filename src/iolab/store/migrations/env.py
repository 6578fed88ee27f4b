"""Alembic environment for the iolab store.

iolab runs migrations itself (iolab.store.migrate), handing the connection over in
`config.attributes["connection"]`.  Run by the `alembic` command instead (developers, with
store/alembic.ini), it opens the store that `$IOLAB_DB` or iolab's default names.
"""

from __future__ import annotations

from alembic import context
from sqlalchemy.engine import Connection

from iolab.store.engine import make_engine, resolve
from iolab.store.location import StoreLocation
from iolab.store.revision import VERSION_TABLE
from iolab.store.schema import metadata


def _run(connection: Connection) -> None:
    context.configure(
        connection=connection,
        target_metadata=metadata,
        version_table=VERSION_TABLE,
        render_as_batch=True,  # SQLite alters tables by copying them
        compare_type=True,
    )
    with context.begin_transaction():
        context.run_migrations()


def main() -> None:
    if context.is_offline_mode():
        raise SystemExit("iolab migrations run online only")
    connection = context.config.attributes.get("connection")
    if connection is not None:
        _run(connection)
        return
    engine = make_engine(resolve(StoreLocation.given()))
    try:
        with engine.connect() as conn:
            _run(conn)
            conn.commit()
    finally:
        engine.dispose()


main()
