"""Who runs a run: this process's identity, and whether a recorded owner is still alive.

A run's owner is written into the store (`runs.claimed_by`) as `host:pid:start`, the start
time in clock ticks since boot (/proc/PID/stat), so that a reused pid is not taken for the
owner.  Liveness is judged from the run's own store row — not from journals, whose run ids
belong to whichever store each process used.  An owner on another host cannot be checked
from here and counts as alive.
"""

from __future__ import annotations

import os
import socket
from typing import TYPE_CHECKING

from iolab.procs import process_alive, process_start

if TYPE_CHECKING:
    from iolab.store.store import Store


def this_process() -> str:
    pid = os.getpid()
    return f"{socket.gethostname()}:{pid}:{process_start(pid)}"


def owner_alive(owner: str) -> bool:
    parts = owner.split(":")
    if len(parts) < 3:
        return True  # not ours to judge
    host, pid, start = ":".join(parts[:-2]), parts[-2], parts[-1]
    if host != socket.gethostname():
        return True
    try:
        return process_alive(int(pid), None if start == "None" else int(start))
    except ValueError:
        return True


def claim(store: Store, run_id: int) -> None:
    """Become the one process continuing `run_id` (RefusedError while a live one is)."""
    store.claim_run(run_id, this_process(), owner_alive)
