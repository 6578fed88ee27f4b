"""Waiting for a server store that is not there yet (a cold start, a restart, a link down).

A lab's hosts and its controller come up in any order, PostgreSQL among them.  A process that
cannot reach the store, or finds it still starting, waits and tries again with a growing
pause (1, 2, 4 … 30 s), saying so once per step on standard error, instead of exiting — for
up to $IOLAB_DB_WAIT_S seconds (default 120; 0: do not wait).  What waiting cannot mend
(a wrong password, a database that is not an iolab store, a newer schema) fails at once.
SQLite files are never waited for: they are there or not.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import TypeVar

from iolab.envsettings import env_seconds
from iolab.errors import StoreError

T = TypeVar("T")
DEFAULT_WAIT_S = 120.0
MAX_STEP_S = 30.0
# what a server says while it is down, starting, restarting or not yet made
_TRANSIENT = (
    "connection refused",
    "could not connect",
    "server closed the connection",
    "the database system is starting up",
    "the database system is shutting down",
    "the database system is in recovery mode",
    "terminating connection",
    "connection timed out",
    "timeout expired",
    "no route to host",
    "network is unreachable",
    "consuming input failed",
    "connection is lost",
    "connection failed",
)


# what waiting cannot mend, even when the driver words it as a failed connection
_PERMANENT = (
    "certificate",
    "ssl error",
    "password authentication failed",
    "no pg_hba.conf entry",
    "role ",
    "permission denied",
)


def wait_budget_s() -> float:
    """$IOLAB_DB_WAIT_S, else 120 s."""
    return env_seconds("IOLAB_DB_WAIT_S", DEFAULT_WAIT_S, 0, 7 * 86400, StoreError)


def transient(message: str) -> bool:
    """Whether a store failure may mend itself by waiting (the server down or starting, a
    database not created yet)."""
    low = message.lower()
    if any(word in low for word in _PERMANENT):
        return False
    if 'database "' in low and "does not exist" in low:
        return True  # created by the lab's setup, perhaps right now
    return any(word in low for word in _TRANSIENT)


def waiting(action: Callable[[], T], display: str, *, budget_s: float | None = None) -> T:
    """`action()`, tried again while it fails with a transient StoreError, within the
    budget; each pause announced once."""
    budget = wait_budget_s() if budget_s is None else budget_s
    start = time.monotonic()
    step = 1.0
    while True:
        try:
            return action()
        except StoreError as exc:
            waited = time.monotonic() - start
            if not transient(exc.message) or waited + step > budget:
                raise
            print(
                f"iolab: store {display} not reachable yet ({_reason(exc.message)}); "
                f"trying again in {step:g} s (waited {waited:.0f} of {budget:g} s, "
                "IOLAB_DB_WAIT_S)",
                file=sys.stderr,
                flush=True,
            )
            time.sleep(step)
            step = min(step * 2, MAX_STEP_S)


def _reason(message: str) -> str:
    """The server's words without the store's name in front."""
    return message.split(": ", 1)[-1] if message.startswith(("store ", "cannot open")) else message
