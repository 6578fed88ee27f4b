"""Run claims and unique samples in the store (issue 8), on SQLite and the real PostgreSQL:
a second claimant cannot win a run, a (run, case, block) cannot be stored twice, and a store
from before revision 0004 is upgraded with its duplicate samples removed."""

from __future__ import annotations

import multiprocessing
import re
from collections.abc import Iterator
from datetime import UTC, datetime
from multiprocessing.queues import Queue
from multiprocessing.synchronize import Barrier as BarrierType
from pathlib import Path

import pytest
from alembic import command
from sqlalchemy import text

from iolab.errors import RefusedError, StoreError
from iolab.model.sample import Sample
from iolab.store import Store, StoreLocation, open_store
from iolab.store.engine import make_engine, resolve
from iolab.store.migrate import alembic_config
from store_backends import BACKENDS, location_for

DEAD = "gone-host:1:1"


@pytest.fixture(params=BACKENDS)
def location(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    yield from location_for(request.param, tmp_path)


@pytest.fixture
def store(location: str) -> Iterator[Store]:
    with open_store(location) as opened:
        yield opened


def sample(run_id: int, variant: str | None, block: int | None) -> Sample:
    return Sample(run_id=run_id, variant=variant, cell={"fs": "ext4"}, block=block,
                  metrics={"write.iops": 1.0})  # fmt: skip


def test_a_sample_identity_is_stored_once(store: Store) -> None:
    run_id = store.create_run("lab")
    store.add_sample(sample(run_id, "a", 1))
    store.add_sample(sample(run_id, "b", 1))
    store.add_sample(sample(run_id, None, 1))  # no variant is a case of its own
    with pytest.raises(StoreError, match=re.escape("holds block 1 of case fs=ext4|a already")):
        store.add_sample(sample(run_id, "a", 1))
    with pytest.raises(StoreError, match="already"):
        store.add_sample(sample(run_id, None, 1))
    store.add_sample(sample(run_id, None, None))  # imports have no block: never a clash
    store.add_sample(sample(run_id, None, None))
    assert len(store.samples(run_id=run_id)) == 5


class _AliveUnlessDead:
    """The claimants' liveness check.  Seeing the dead owner, each claimant waits on the
    barrier: so every one of them has read the claim as DEAD before any of them writes, and
    all of them then race their conditional UPDATEs (the concurrent path, forced)."""

    def __init__(self, together: BarrierType) -> None:
        self.together = together
        self.saw_dead = False

    def __call__(self, owner: str) -> bool:
        if owner == DEAD:
            self.saw_dead = True
            self.together.wait(60)
        return owner != DEAD


def _claimant(
    location: str, run_id: int, me: str, together: BarrierType, results: Queue[str]
) -> None:
    with open_store(location) as opened:
        alive = _AliveUnlessDead(together)
        try:
            opened.claim_run(run_id, me, alive)
            results.put(f"won {me} (saw DEAD: {alive.saw_dead})")
        except RefusedError as exc:
            results.put(f"refused {exc.message} (saw DEAD: {alive.saw_dead})")


def test_a_run_is_claimed_by_exactly_one_process(store: Store, location: str) -> None:
    run_id = store.create_run("lab", claimed_by="this-host:10:10")
    with pytest.raises(RefusedError, match="still running \\(pid 10 on this-host\\)"):
        store.claim_run(run_id, "this-host:11:11", lambda owner: True)
    store.finish_run(run_id, "interrupted")  # the owner lets go
    store.claim_run(run_id, DEAD, lambda owner: True)  # then dies (kill -9): DEAD holds it
    ctx = multiprocessing.get_context("spawn")
    results: Queue[str] = ctx.Queue()
    claimants = 4
    together = ctx.Barrier(claimants)
    procs = [
        ctx.Process(target=_claimant, args=(location, run_id, f"h:{n}:{n}", together, results))
        for n in range(claimants)
    ]
    for proc in procs:
        proc.start()
    for proc in procs:
        proc.join(120)
    outcomes = sorted(results.get(timeout=5) for _ in procs)
    # every claimant read DEAD and passed the barrier before any wrote: the race was run
    assert all(o.endswith("(saw DEAD: True)") for o in outcomes), outcomes
    winners = [o for o in outcomes if o.startswith("won")]
    assert len(winners) == 1, outcomes
    # the losers' UPDATE found the claim changed under them; re-read, it is a live owner's
    assert all("still running" in o or "being claimed" in o for o in outcomes if o not in winners)
    with store.engine.connect() as conn:
        owner = conn.execute(text(f"SELECT claimed_by FROM runs WHERE id = {run_id}")).scalar()
    assert winners[0] == f"won {owner} (saw DEAD: True)"


def test_upgrade_from_0001_removes_duplicate_samples(location: str) -> None:
    loc = resolve(StoreLocation.given(location))
    engine = make_engine(loc)
    cfg = alembic_config()
    with engine.begin() as conn:
        cfg.attributes["connection"] = conn
        command.upgrade(cfg, "0001")
        now = datetime(2026, 1, 1, tzinfo=UTC).replace(tzinfo=None)
        conn.execute(
            text(
                "INSERT INTO runs (kind, status, created_at, meta) "
                "VALUES ('lab', 'finished', :t, '{}')"
            ),
            {"t": now},
        )
        rows = [  # id, variant, block: 2 and 4 repeat 1 and 3; 5 and 6 are imports
            (1, "a", 1), (2, "a", 1), (3, None, 2), (4, None, 2), (5, None, None), (6, None, None),
        ]  # fmt: skip
        for sid, variant, block in rows:  # ids are given out in this order
            conn.execute(
                text(
                    "INSERT INTO samples (run_id, variant, cell, cell_key, block, status, "
                    "provenance, jobs) VALUES (1, :v, '{}', '', :b, 'ok', '{}', '[]')"
                ),
                {"v": variant, "b": block},
            )
            conn.execute(
                text("INSERT INTO metrics VALUES (:id, '', 'write.iops', :x)"),
                {"id": sid, "x": float(sid)},
            )
    engine.dispose()
    with open_store(location) as opened:
        kept = opened.samples(run_id=1)
        assert sorted(s.id for s in kept if s.id is not None) == [1, 3, 5, 6]
        assert [s.metrics["write.iops"] for s in kept] == [1.0, 3.0, 5.0, 6.0]
        with opened.engine.connect() as conn:
            orphans = conn.execute(
                text("SELECT count(*) FROM metrics WHERE sample_id IN (2, 4)")
            ).scalar()
            keys = conn.execute(text("SELECT case_key FROM samples ORDER BY id")).scalars()
            assert list(keys) == ["|a", "|", "|", "|"]
        assert orphans == 0
        with pytest.raises(StoreError, match="already"):
            opened.add_sample(Sample(run_id=1, variant="a", cell={}, block=1))
