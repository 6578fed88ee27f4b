"""The results store: runs, samples, metrics and histogram bins in SQLite or PostgreSQL.

`open_store(location)` is the way in; everything it returns speaks `Sample` and `RunInfo`
(iolab.model).  docs/store.md describes the location rules, the schema and the API.

SQLAlchemy is loaded when a store is opened (or `Store` is named), not when the package is
imported: `iolab.store.location` names a store without it, so `iolab --help` and `iolab
parse` start without a database library.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from iolab.errors import StoreError
from iolab.store.location import StoreLocation, default_path

if TYPE_CHECKING:
    from iolab.store.store import RUN_KINDS, RUN_STATUSES, SAMPLE_STATUSES, Store

_LAZY = ("RUN_KINDS", "RUN_STATUSES", "SAMPLE_STATUSES", "Store")


def __getattr__(name: str) -> Any:
    if name not in _LAZY:
        raise AttributeError(f"module 'iolab.store' has no attribute {name!r}")
    return getattr(importlib.import_module("iolab.store.store"), name)


def open_store(
    location: str | StoreLocation | None = None, *, must_exist: bool = False
) -> Store:
    """Open (creating or upgrading as needed) the store at a path or URL.

    None means $IOLAB_DB, else the default file (`default_path()`).  Anything that cannot
    be opened as an iolab store raises StoreError with one line.  Commands that only read
    pass `must_exist`, so a mistyped --db or $IOLAB_DB is named instead of answered from a new,
    empty file.
    """
    from sqlalchemy.exc import OperationalError

    from iolab.store.engine import make_engine, resolve
    from iolab.store.migrate import upgrade
    from iolab.store.store import Store

    where = StoreLocation.given(location)
    loc = resolve(where)
    if must_exist and where.named and loc.path is not None and not loc.path.exists():
        raise StoreError(f"{loc.path}: no iolab store there (nothing was imported or run into it)")
    engine = make_engine(loc)
    try:
        upgrade(engine, loc.display)
    except OperationalError as exc:
        engine.dispose()
        reason = str(exc.orig).strip().splitlines()[0] if exc.orig else str(exc)
        raise StoreError(f"cannot open store {loc.display}: {reason}") from None
    except BaseException:
        engine.dispose()
        raise
    return Store(engine, loc.display)


__all__ = [
    "RUN_KINDS",
    "RUN_STATUSES",
    "SAMPLE_STATUSES",
    "Store",
    "StoreError",
    "StoreLocation",
    "default_path",
    "open_store",
]
