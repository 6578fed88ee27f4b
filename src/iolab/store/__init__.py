"""The results store: runs, samples, metrics and histogram bins in SQLite or PostgreSQL.

`open_store(location)` is the way in; everything it returns speaks `Sample` and `RunInfo`
(iolab.model).  docs/store.md describes the location rules, the schema and the API.

SQLAlchemy is loaded when a store is opened (or `Store` is named), not when the package is
imported: `iolab.store.location` names a store without it, so `iolab --help` and `iolab
parse` start without a database library.
"""

from __future__ import annotations

import importlib
import os
from typing import TYPE_CHECKING, Any

from iolab.errors import StoreError
from iolab.store.location import StoreLocation, default_path

if TYPE_CHECKING:
    from sqlalchemy import Engine
    from sqlalchemy.exc import DBAPIError

    from iolab.store.engine import Location
    from iolab.store.reader import StoreReader
    from iolab.store.store import RUN_KINDS, RUN_STATUSES, SAMPLE_STATUSES, Store

_LAZY = ("RUN_KINDS", "RUN_STATUSES", "SAMPLE_STATUSES", "Store")


def __getattr__(name: str) -> Any:
    if name not in _LAZY:
        raise AttributeError(f"module 'iolab.store' has no attribute {name!r}")
    return getattr(importlib.import_module("iolab.store.store"), name)


def open_store(
    location: str | StoreLocation | None = None,
    *,
    must_exist: bool = False,
    read_only: bool = False,
) -> Store:
    """Open (creating or upgrading as needed) the store at a path or URL.

    None means $IOLAB_DB, else the default file (`default_path()`).  Anything that cannot
    be opened as an iolab store raises StoreError with one line.  `must_exist` refuses a
    --db or $IOLAB_DB file that does not exist (a typo must not start a new store);
    `read_only` (commands that only read) creates nothing at all, and opens a SQLite file so
    that it is never written — a store on a read-only disk or mount can be listed.  A store
    opened for writing is checked with `PRAGMA quick_check` first: a damaged file is refused
    before anything is added to it.
    """
    from iolab.store.engine import make_engine, resolve

    where = StoreLocation.given(location)
    loc = resolve(where)
    missing = loc.path is not None and not loc.path.exists()
    if missing and (read_only or (must_exist and where.named)):
        raise StoreError(f"{loc.path}: no iolab store there (nothing was imported or run into it)")
    if read_only and loc.path is not None:
        if not _current(loc):
            if not os.access(loc.path, os.W_OK):
                raise StoreError(
                    f"{loc.display}: written by an older iolab and read-only here; "
                    "open it once where it can be written to upgrade it"
                )
            open_store(location).close()  # upgrade it, as every open did before
        return _opened(loc, make_engine(loc, read_only=True), write=False)
    if loc.path is None:  # a server: waited for while it is down or starting (store.wait)
        from iolab.store.wait import waiting

        return waiting(lambda: _opened(loc, make_engine(loc), write=True), loc.display)
    return _opened(loc, make_engine(loc), write=True)


def open_reader(location: str | StoreLocation | None = None) -> StoreReader:
    """A store opened to list runs and samples, never written or created.

    A SQLite file at the newest revision is read with the standard library's sqlite3
    (`store.sqlite_reader`: no SQLAlchemy to import, which is most of a listing's
    start-up); anything else is `open_store(location, read_only=True)`, with its checks,
    upgrade and messages.
    """
    where = StoreLocation.given(location)
    if where.file is not None:
        from iolab.store.sqlite_reader import SQLiteReader

        reader = SQLiteReader.open(where.file)
        if reader is not None:
            return reader
    return open_store(where, read_only=True)


def _current(loc: Location) -> bool:
    """True when the SQLite file's schema is the newest (read without writing)."""
    from sqlalchemy.exc import DatabaseError

    from iolab.store.engine import make_engine
    from iolab.store.migrate import needs_upgrade

    engine = make_engine(loc, read_only=True)
    try:
        return not needs_upgrade(engine, loc.display)
    except DatabaseError as exc:
        raise _one_line(loc, exc) from None
    finally:
        engine.dispose()


def _opened(loc: Location, engine: Engine, *, write: bool) -> Store:
    from sqlalchemy.exc import DBAPIError

    from iolab.store.migrate import needs_upgrade, upgrade
    from iolab.store.store import Store

    try:
        if write:
            if engine.dialect.name == "sqlite":
                _quick_check(engine, loc.display)
            upgrade(engine, loc.display)
        elif needs_upgrade(engine, loc.display):
            raise StoreError(f"{loc.display}: its schema changed while it was opened")
    except DBAPIError as exc:  # InterfaceError too: a server gone mid-open
        engine.dispose()
        raise _one_line(loc, exc) from None
    except BaseException:
        engine.dispose()
        raise
    return Store(engine, loc.display)


def _quick_check(engine: Engine, display: str) -> None:
    """Refuse to write into a damaged SQLite file (SQLite's own consistency check)."""
    with engine.connect() as conn:
        found = [str(row[0]) for row in conn.exec_driver_sql("PRAGMA quick_check")]
    if found != ["ok"]:
        first = (found[0].splitlines() or ["?"])[0] if found else "?"
        raise StoreError(
            f"{display}: the store is damaged (PRAGMA quick_check: {first}); "
            "nothing was written — `sqlite3 FILE .recover` salvages what it can"
        )


def _one_line(loc: Location, exc: DBAPIError) -> StoreError:
    reason = str(exc.orig).strip().splitlines()[0] if exc.orig else str(exc).splitlines()[0]
    if "not a database" in reason or "malformed" in reason:
        return StoreError(f"{loc.display}: damaged or not an iolab store ({reason})")
    return StoreError(f"cannot open store {loc.display}: {reason}")


__all__ = [
    "RUN_KINDS",
    "RUN_STATUSES",
    "SAMPLE_STATUSES",
    "Store",
    "StoreError",
    "StoreLocation",
    "default_path",
    "open_reader",
    "open_store",
]
