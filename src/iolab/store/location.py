"""Which store a command or script means: the one typed place for the store's location.

`--db` (or the Python API's argument) wins, then `$IOLAB_DB`, then the default file; the
environment is read here and nowhere else.  No database library is imported, so a command
can name its store before deciding whether it needs one.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote

ENV = "IOLAB_DB"


def default_path() -> Path:
    """`$XDG_DATA_HOME/iolab/iolab.db`, else `~/.local/share/iolab/iolab.db`."""
    base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base) / "iolab" / "iolab.db"


@dataclass(frozen=True)
class StoreLocation:
    """A SQLite file path or a SQLAlchemy URL (it contains "://"); None is the default file."""

    text: str | None = None
    # named by --db or $IOLAB_DB: a read-only command then refuses a file that is not there,
    # instead of answering from a new, empty store (the default file may simply be new)
    named: bool = False

    @classmethod
    def given(cls, location: str | StoreLocation | None = None) -> StoreLocation:
        """The location a `--db` value (None: not given) names, with $IOLAB_DB as fallback."""
        if isinstance(location, StoreLocation):
            return location
        text = location or os.environ.get(ENV) or None
        return cls(text, named=text is not None)

    @property
    def is_url(self) -> bool:
        return self.text is not None and "://" in self.text

    @property
    def file(self) -> Path | None:
        """The SQLite file a path names (None for a URL)."""
        if self.is_url:
            return None
        return Path(self.text).expanduser() if self.text else default_path()


def sqlite_read_only_uri(path: Path) -> str:
    """A SQLite URI for reading `path`; each connection opened with it runs `QUERY_ONLY`
    first, so no statement can write.  A file the reader could write is opened read-write
    all the same: only such a connection may, when it is the last one to close, checkpoint
    and remove the -wal and -shm files that any reader of a WAL database makes (a `mode=ro`
    reader left them behind after every `compare`).  On a read-only directory or file SQLite
    cannot make the WAL index (-shm) a reader needs, so the file is opened `immutable` there:
    nobody can be writing it anyway."""
    writable = os.access(path, os.W_OK) and os.access(path.parent, os.W_OK)
    return f"file:{quote(str(path.resolve()))}?" + (
        "mode=rw" if writable else "mode=ro&immutable=1"
    )


# run first on every reading connection: SQLite then refuses any statement that writes
QUERY_ONLY = "PRAGMA query_only = ON"


def same_text(stored: Any, wanted: Any) -> bool:
    """Cell values compare as text, so a selector's `writers=10` matches a stored 10 (both
    readers of a store filter cells with this)."""

    def text(value: Any) -> str:
        if isinstance(value, bool):
            return "true" if value else "false"
        return str(value)

    return text(stored) == text(wanted)
