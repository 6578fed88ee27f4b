"""Where the store lives and how to connect to it.

A location is a SQLAlchemy URL when it contains "://" (a team's PostgreSQL server), else a
SQLite file path (the embedded default).  SQLite gets WAL, so `iolab results` can read while
a lab run writes, foreign keys, a busy timeout, and real transactions: pysqlite's own
transaction handling skips BEGIN before DDL, which would let a crash leave half a
migration; the driver's handling is switched off and BEGIN emitted here (SQLAlchemy's
documented recipe).  Write transactions take the write lock at once (BEGIN IMMEDIATE) so two
writers wait for each other instead of failing on a stale snapshot.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sqlalchemy import URL, Engine, create_engine, event, make_url
from sqlalchemy.engine import Connection
from sqlalchemy.exc import ArgumentError, NoSuchModuleError

from iolab.errors import StoreError
from iolab.store.location import QUERY_ONLY, StoreLocation, sqlite_read_only_uri

SQLITE_MAGIC = b"SQLite format 3\x00"
BUSY_TIMEOUT_MS = 30_000
WRITE_OPTION = "iolab_write"


@dataclass(frozen=True)
class Location:
    url: URL
    display: str  # what messages show: the path, or the URL without its password
    path: Path | None  # the SQLite file, if any


def resolve(where: StoreLocation) -> Location:
    """The URL (and file, for SQLite) of a store location."""
    path = where.file
    if path is not None:
        return Location(URL.create("sqlite", database=str(path)), str(path), path)
    location = str(where.text)
    try:
        url = make_url(location)
    except ArgumentError:
        raise StoreError(f"not a database URL: {location}") from None
    display = url.render_as_string(hide_password=True)
    if url.get_backend_name() == "sqlite" and url.database not in (None, "", ":memory:"):
        return Location(url, display, Path(url.database or ""))
    return Location(url, display, None)


def check_file(path: Path, *, create: bool = True) -> None:
    """Refuse a path that is not, and cannot become, a SQLite store; create its directory
    (unless `create` is False: then a missing file is refused and nothing is made)."""
    if path.is_dir():
        raise StoreError(f"{path}: is a directory, not an iolab store")
    if path.exists():
        try:
            with path.open("rb") as fh:
                head = fh.read(len(SQLITE_MAGIC))
        except OSError as exc:
            raise StoreError(f"{path}: cannot read: {exc.strerror}") from None
        if head and head != SQLITE_MAGIC:
            raise StoreError(f"{path}: not an SQLite database, so not an iolab store")
        return
    if not create:
        raise StoreError(f"{path}: no iolab store there (nothing was imported or run into it)")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise StoreError(f"{path.parent}: cannot create directory: {exc.strerror}") from None


def read_only_url(path: Path) -> URL:
    """The SQLAlchemy URL of `sqlite_read_only_uri(path)`."""
    return URL.create("sqlite", database=sqlite_read_only_uri(path), query={"uri": "true"})


def make_engine(loc: Location, *, read_only: bool = False) -> Engine:
    """An engine for the location with the pragmas and transaction rules described above;
    `read_only` opens an existing SQLite file without writing (or creating) anything."""
    url = loc.url
    if loc.path is not None:
        check_file(loc.path, create=not read_only)
        if read_only:
            url = read_only_url(loc.path)
    try:
        # a server store: a connection left in the pool across a server restart is tested
        # before use (a fleet's controller and workers outlive PostgreSQL restarts)
        engine = create_engine(url, pool_pre_ping=loc.path is None)
    except (ArgumentError, NoSuchModuleError) as exc:
        raise StoreError(f"cannot use store {loc.display}: {exc}") from None
    except ImportError as exc:  # the dialect exists but its driver is not installed
        raise StoreError(
            f"cannot use store {loc.display}: its database driver is not installed ({exc})"
        ) from None
    if engine.dialect.name == "sqlite":
        _sqlite_setup(engine, wal=not read_only)
    return engine


def _sqlite_setup(engine: Engine, *, wal: bool = True) -> None:
    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_connection: Any, _record: Any) -> None:
        dbapi_connection.isolation_level = None  # we emit BEGIN ourselves
        cursor = dbapi_connection.cursor()
        try:
            cursor.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
            cursor.execute("PRAGMA foreign_keys = ON")
            if wal:  # a reader leaves the file's mode alone: setting it writes
                cursor.execute("PRAGMA journal_mode = WAL")
                cursor.execute("PRAGMA synchronous = NORMAL")
            else:
                cursor.execute(QUERY_ONLY)
        finally:
            cursor.close()

    @event.listens_for(engine, "begin")
    def _on_begin(conn: Connection) -> None:
        write = conn.get_execution_options().get(WRITE_OPTION, False)
        conn.exec_driver_sql("BEGIN IMMEDIATE" if write else "BEGIN")
