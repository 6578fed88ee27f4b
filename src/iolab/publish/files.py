"""Writing output files so that a reader never sees half of one."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from iolab.errors import IolabError


def write_atomically(path: str | Path, text: str) -> None:
    """Write next to `path`, then rename over it; one clear error when the place is unusable."""
    target = Path(path)
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", dir=target.parent or Path("."))
    except OSError as exc:
        raise IolabError(f"{target}: cannot write here ({exc.strerror})") from None
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            out.write(text)
        os.chmod(tmp, 0o644)
        os.replace(tmp, target)
    except OSError as exc:
        Path(tmp).unlink(missing_ok=True)
        raise IolabError(f"{target}: cannot write ({exc.strerror})") from None
