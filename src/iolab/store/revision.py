"""The schema revision this iolab writes, found without alembic or SQLAlchemy.

Opening a current store is the common case (`iolab results` dozens of times an hour), so it
must not pay for alembic: the heads are read from the revision files' `revision =` and
`down_revision =` lines (tests/test_cli_startup.py checks they are alembic's heads).
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

MIGRATIONS = Path(__file__).with_name("migrations")
# alembic's own bookkeeping table; a distinct name so a shared PostgreSQL database that
# already holds another application's `alembic_version` does not confuse the two.
VERSION_TABLE = "iolab_schema_version"
_ASSIGNMENT = re.compile(r"^(revision|down_revision)\s*(?::[^=]*)?=\s*(.+?)\s*$", re.M)


def known_heads() -> set[str]:
    """The newest revisions of this iolab's migrations, from the revision files' text."""
    revisions: set[str] = set()
    parents: set[str] = set()
    for path in (MIGRATIONS / "versions").glob("*.py"):
        found = {m.group(1): m.group(2) for m in _ASSIGNMENT.finditer(path.read_text())}
        if "revision" not in found:
            continue
        revisions.add(str(ast.literal_eval(found["revision"])))
        down = ast.literal_eval(found.get("down_revision", "None"))
        parents.update([down] if isinstance(down, str) else list(down or ()))
    return revisions - parents
