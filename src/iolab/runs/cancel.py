"""`iolab cancel RUN`: stop a run from any terminal, whoever runs it and wherever.

The request is a row in the store (`leases.request_cancel`), so it reaches every kind of
owner: a fleet controller sees it at its next poll, a local run when it stores its next
sample; and the block attempts of the run are revoked at once, so each worker stops at its
next sample and its session restores the host (unmounts, detaches, undoes its settings)
before it takes another block.  An owner on this machine is also sent SIGTERM, which
interrupts the sample it runs (the lab's interrupt path restores the machine).  The owner
records the run `cancelled` (lifecycle.stopped_status); a run whose owner is gone is marked
so here; a one-box run's resume unit (`iolab ab --here`) is removed, so that no boot
continues it.  The cancel then waits until the run has ended and no host is still busy
with it.
"""

from __future__ import annotations

import os
import signal
import socket
import time
from dataclasses import dataclass, field

from iolab.errors import IolabError, LabError
from iolab.lab import claim
from iolab.runs import resume_unit
from iolab.store import leases
from iolab.store.store import Store


@dataclass
class Cancelled:
    run_id: int
    revoked: int  # queued blocks that will not start
    stopped: int  # blocks in flight told to stop
    how: str  # what was done to the owner
    status: str = "running"
    busy: list[str] = field(default_factory=list)  # hosts still on it (wait ran out)


def cancel(store: Store, run_id: int, *, wait_s: float, poll_s: float = 0.5) -> Cancelled:
    info = store.run(run_id)
    if info.status != "running":
        raise IolabError(f"run {run_id} is {info.status}; nothing to cancel")
    revoked, stopped = leases.request_cancel(store, run_id, claim.this_process())
    owner = leases.run_owner(store, run_id)
    how = _stop_owner(store, run_id, owner)
    if resume_unit.remove(run_id):  # a one-box run (`--here`): no boot continues it
        how += f"; {resume_unit.name(run_id)} removed"
    done = Cancelled(run_id, revoked, stopped, how)
    deadline = time.monotonic() + wait_s
    while True:
        done.status = store.run(run_id).status
        done.busy = leases.running_hosts(store, run_id)
        if done.status != "running" and not done.busy:
            return done
        if time.monotonic() > deadline:
            raise LabError(
                f"run {run_id}: cancel requested, but after {wait_s:g} s the run is "
                f"{done.status}"
                + (f" and {', '.join(done.busy)} still busy with it" if done.busy else "")
            )
        time.sleep(poll_s)


def _stop_owner(store: Store, run_id: int, owner: str | None) -> str:
    if owner is None or not claim.owner_alive(owner):
        store.finish_run(run_id, "cancelled")
        return "its process had ended; marked cancelled"
    host, pid = owner.split(":")[:-2], owner.split(":")[-2]
    if ":".join(host) == socket.gethostname() and pid.isdigit():
        try:
            os.kill(int(pid), signal.SIGTERM)
        except OSError:
            pass
        else:
            return f"its process {pid} here was sent SIGTERM"
    return f"its owner ({owner.split(':')[0]}) stops at its next poll or sample"
