"""The results store: runs, samples, metrics and histogram bins in SQLite or PostgreSQL.

`open_store(location)` is the way in; everything it returns speaks `Sample` and `RunInfo`
(iolab.model).  docs/store.md describes the location rules, the schema and the API.
"""

from __future__ import annotations

import os

from sqlalchemy.exc import OperationalError

from iolab.errors import StoreError
from iolab.store.engine import default_path, make_engine, resolve
from iolab.store.migrate import upgrade
from iolab.store.store import RUN_KINDS, RUN_STATUSES, SAMPLE_STATUSES, Store


def open_store(location: str | None = None, *, must_exist: bool = False) -> Store:
    """Open (creating or upgrading as needed) the store at a path or URL.

    None means $IOLAB_DB, else the default file (`default_path()`).  Anything that cannot
    be opened as an iolab store raises StoreError with one line.  Commands that only read
    pass `must_exist`, so a mistyped --db or $IOLAB_DB is named instead of answered from a new,
    empty file.
    """
    loc = resolve(location)
    named = bool(location or os.environ.get("IOLAB_DB"))  # the default file may simply be new
    if must_exist and named and loc.path is not None and not loc.path.exists():
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
    "default_path",
    "open_store",
]
