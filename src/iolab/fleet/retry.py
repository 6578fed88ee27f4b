"""Waiting out a store that cannot be reached (a PostgreSQL restart, a link down).

Both sides of the fleet call the store through `retry_store`: a controller polling its
attempts and a worker claiming, heartbeating or storing a block wait for the server instead
of exiting; the lease rules make a late success harmless.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import TypeVar

from iolab.errors import StoreError

log = logging.getLogger("iolab.fleet.retry")
T = TypeVar("T")


def retry_store(action: Callable[[], T], *, seconds: float = 600.0) -> T:
    """`action()` again while the store cannot be reached, for up to `seconds`."""
    deadline = time.monotonic() + seconds
    while True:
        try:
            return action()
        except StoreError as exc:
            if time.monotonic() > deadline:
                raise
            log.warning("store unreachable, retrying: %s", exc)
            time.sleep(1.0)
