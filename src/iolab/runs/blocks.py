"""Where a run's blocks are measured: here (`LocalBlocks`) or on a fleet (`iolab.fleet`).

Drivers (`plan_run`, `ab.loop`, the bisect session) start blocks and take them back as they
finish; a `BlockSource` decides where and how many at once.  Every block runs under a lease
(a `block_attempts` row, docs/fleet.md): locally the lease is taken when the block starts and
each sample is stored only while it is held — the same guard a fleet worker writes through.
"""

from __future__ import annotations

import contextlib
import socket
from collections import deque
from collections.abc import Sequence
from typing import Protocol

from iolab.errors import IolabError, LabError
from iolab.lab.runner import LabSession
from iolab.model.sample import Sample
from iolab.plan.model import Case, Plan
from iolab.store import leases
from iolab.store.store import Store


class BlockSource(Protocol):
    """Blocks measured somewhere: up to `width` at once, handed back as they end."""

    @property
    def width(self) -> int: ...

    @property
    def ahead(self) -> int:
        """Blocks that may wait beyond `width` when every block will be measured (a plain
        run, never an adaptive one): on a fleet one, so that a host ending a block takes the
        next from the queue at once instead of waiting for the controller."""
        ...

    def start(self, block: int, cases: Sequence[Case] = ()) -> None: ...

    def next_finished(self) -> tuple[int, list[Sample]]: ...

    def in_flight(self) -> list[int]: ...

    def stop(self, unused: Sequence[int] = ()) -> list[int]:
        """No more blocks are wanted: those not started are revoked, running ones end and
        are stored; `unused` are blocks handed back but not used by the caller's decision.
        The blocks that hold samples after the decision."""
        ...


class GuardedSink:
    """Stores a sample only while the lease of its block is running."""

    def __init__(self, store: Store, attempt_id: int, block: int) -> None:
        self.store, self.attempt_id, self.block = store, attempt_id, block

    def add_sample(self, sample: Sample) -> int:
        stored = leases.add_guarded(self.store, self.attempt_id, sample)
        if stored is None and leases.cancel_requested(self.store, sample.run_id):
            raise leases.RunCancelled(f"run {sample.run_id} was cancelled (iolab cancel)")
        if stored is None:
            raise LabError(f"the lease of block {self.block} ended; its sample was not stored")
        return stored


class OneAtATime:
    """The queue of a source that measures one block at a time in this process (`width` 1):
    a block is measured when it is asked for (`next_finished`), so nothing queued has
    started when the caller stops or abandons."""

    def __init__(self) -> None:
        self._queue: deque[tuple[int, Sequence[Case]]] = deque()

    @property
    def width(self) -> int:
        return 1

    @property
    def ahead(self) -> int:
        return 0

    def start(self, block: int, cases: Sequence[Case] = ()) -> None:
        self._queue.append((block, cases))

    def in_flight(self) -> list[int]:
        return [b for b, _ in self._queue]

    def stop(self, unused: Sequence[int] = ()) -> list[int]:
        self._queue.clear()
        return []

    def abandon(self) -> None:
        """The run ends with an error: nothing queued here has started."""
        self._queue.clear()


class LocalBlocks(OneAtATime):
    """Blocks run in this process, one at a time, each under its own lease."""

    def __init__(
        self, session: LabSession, store: Store, done: set[tuple[str, int]] | None = None
    ) -> None:
        super().__init__()
        self.session, self.store, self.done = session, store, done
        self.host = session.host or socket.gethostname()

    def next_finished(self) -> tuple[int, list[Sample]]:
        block, cases = self._queue.popleft()
        return block, run_leased(self.session, self.store, block, self.done, cases, self.host)

    def use_plan(self, plan: Plan) -> None:
        """A bisect's plan gained an arm: here each block is given its cases, which carry
        all of it."""


def run_leased(
    session: LabSession,
    store: Store,
    block: int,
    done: set[tuple[str, int]] | None,
    cases: Sequence[Case],
    host: str,
) -> list[Sample]:
    """`session.run_block` under a lease on (run, block): finished, or failed with why."""
    lease = leases.begin_local(store, session.run_id, block, host)
    sink, session.sink = session.sink, GuardedSink(store, lease.id, block)
    try:
        samples = session.run_block(block, done, cases)
    except BaseException as exc:
        reason = exc.message if isinstance(exc, IolabError) else type(exc).__name__
        with contextlib.suppress(IolabError):
            leases.end(store, lease.id, "failed", reason)
        raise
    finally:
        session.sink = sink
    leases.end(store, lease.id, "finished")
    return samples
