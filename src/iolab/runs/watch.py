"""`iolab watch RUN`: a run's progress as the store has it, from any terminal.

Every kind of run — local, on a fleet, an A/B, a bisect — stores its samples as they end and
(with a lease) its blocks as they start and end, so the store alone says how far a run is:
samples stored and failed, of how many planned (a fixed-size run), blocks queued, running
(on which host) and done.  `snapshot` reads it; `follow` yields a snapshot each time it
changes, until the run is no longer running.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass

from iolab.store import leases
from iolab.store.store import Store


@dataclass(frozen=True)
class Progress:
    run_id: int
    kind: str
    status: str
    samples: int
    failed: int
    planned: int | None  # samples of a fixed-size run; None: adaptive (ab, bisect)
    blocks: dict[str, int]  # latest attempt state of each block -> how many blocks
    hosts: tuple[str, ...]  # hosts running a block of it now

    def line(self) -> str:
        of = f"/{self.planned}" if self.planned else ""
        parts = [f"run {self.run_id} ({self.kind}) {self.status}: {self.samples}{of} samples"]
        if self.failed:
            parts.append(f"{self.failed} failed")
        if self.blocks:
            parts.append(", ".join(f"{n} {state}" for state, n in sorted(self.blocks.items())))
        if self.hosts:
            parts.append("on " + ", ".join(self.hosts))
        return "; ".join(parts)

    def to_json(self) -> dict[str, object]:
        return {**self.__dict__, "hosts": list(self.hosts)}


def snapshot(store: Store, run_id: int, planned: int | None = None) -> Progress:
    info = store.run(run_id)
    latest = {a.block: a for a in leases.attempts(store, run_id)}
    blocks = Counter("done" if a.state == "finished" else a.state for a in latest.values())
    hosts = sorted({a.host for a in latest.values() if a.state == "running" and a.host})
    return Progress(
        run_id,
        info.kind,
        info.status,
        info.n_samples,
        info.n_failed,
        planned,
        dict(blocks),
        tuple(hosts),
    )


def planned_samples(store: Store, run_id: int) -> int | None:
    """cases × blocks of a plain lab run's plan; None for adaptive runs or an odd plan."""
    info = store.run(run_id)
    if info.kind != "lab" or not info.plan_text:
        return None
    from iolab.errors import IolabError
    from iolab.plan.expand import plan_from_text

    try:
        plan = plan_from_text(info.plan_text, info.plan_path or "plan")
    except IolabError:
        return None
    return len(plan.cases) * plan.repeat


def follow(store: Store, run_id: int, *, poll_s: float = 1.0) -> Iterator[Progress]:
    """A snapshot now and at each change, the last one once the run has ended."""
    planned = planned_samples(store, run_id)
    last: Progress | None = None
    while True:
        now = snapshot(store, run_id, planned)
        if now != last:
            yield now
            last = now
        if now.status != "running":
            return
        time.sleep(poll_s)
