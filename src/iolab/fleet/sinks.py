"""Where a worker's samples go while its lease holds, and the error when it stops holding.

- `BufferSink`: a block that fits in one boot keeps its samples in memory and stores them
  with the lease's end, in one transaction (`leases.store_block`).
- `BootStampedSink`: a block across boots (a kernel plan) stores each sample at once, with
  the boot it was measured in, because nothing in memory survives the next boot.

Both stop with `LeaseGone` as soon as the heartbeat thread saw the lease expire.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field

from iolab.errors import LabError
from iolab.fleet.retry import retry_store
from iolab.model.sample import Sample
from iolab.store import leases
from iolab.store.store import Store


class LeaseGone(LabError):
    """The lease ended while the block ran: stop.  What was stored under it stays (it was
    stored while the lease held); what was only in memory is dropped."""


@dataclass
class BufferSink:
    """Keeps a block's samples until the block ends (stored at once under the lease)."""

    lost: threading.Event
    samples: list[Sample] = field(default_factory=list)

    def add_sample(self, sample: Sample) -> int:
        if self.lost.is_set():
            raise LeaseGone("the lease expired (missed heartbeats); the block is dropped")
        self.samples.append(sample)
        return -len(self.samples)  # provisional: the store gives the id


@dataclass
class BootStampedSink:
    """Stores each sample at once, only while the attempt is running, with its boot."""

    store: Store
    lost: threading.Event
    attempt_id: int
    boot_record: dict[str, object]

    def add_sample(self, sample: Sample) -> int:
        if self.lost.is_set():
            raise LeaseGone("the lease expired (missed heartbeats)")
        sample.provenance["boot"] = dict(self.boot_record)
        sample_id = retry_store(lambda: leases.add_guarded(self.store, self.attempt_id, sample))
        if sample_id is None:
            raise LeaseGone("the lease ended before the sample was stored")
        return sample_id
