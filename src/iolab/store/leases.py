"""Block attempts (leases) and fleet hosts in the store: the fleet's truth (docs/fleet.md).

Every transition is one conditional UPDATE (or a row lock then a check), so that two parties
racing for one attempt — a redelivered message and the original, a worker storing its block
and the controller expiring it — cannot both win:

    queued ──claim──▶ running ──store_block──▶ finished
       │                 │──end──▶ failed | infra_error | refused
       │                 │──expire──▶ lost | timed_out
       │                 └──begin_boot──▶ booting ──requeue──▶ queued (same host)
       │                                     └──▶ wrong_kernel | lost (not back in time)
       └──▶ lost (never claimed) | revoked (not needed any more)

`booting` (docs/kernels.md): the host's worker asked for a kernel and ended its task; no
task spans a reboot.  The controller sends the attempt again, to that host only, once the
host is back with a new boot id and the kernel asked for.

Times are the database server's clock (`now()` on PostgreSQL), so hosts whose clocks differ
still agree on a heartbeat's age.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import Connection, and_, delete, func, insert, or_, select, update

from iolab.model.sample import Sample
from iolab.store.schema import block_attempts, fleet_hosts, run_cancels, runs
from iolab.store.store import Store

LIVE = ("queued", "running", "booting")
TERMINAL = (
    "finished",
    "failed",
    "infra_error",
    "timed_out",
    "lost",
    "refused",
    "revoked",
    "wrong_kernel",
)
HOST_STATES = ("idle", "busy", "offline", "quarantined")


class RunCancelled(KeyboardInterrupt):
    """`iolab cancel RUN` asked the run to stop: its owner ends it as an interrupt (the
    machine restored, the run `cancelled`, exit 5), wherever the owner runs."""


@dataclass(frozen=True)
class Attempt:
    id: int
    run_id: int
    block: int
    attempt: int
    state: str
    host_class: str | None
    host: str | None
    reason: str | None
    after_decision: bool
    created_at: datetime
    sent_at: datetime | None
    claimed_at: datetime | None
    heartbeat_at: datetime | None
    ended_at: datetime | None
    boot_kernel: str | None = None  # `booting`: the release it waits for
    boot_from: str | None = None  # `booting`: the boot id the host left
    boot_at: datetime | None = None  # `booting`: since when (the boot timeout counts)


@dataclass(frozen=True)
class HostRow:
    name: str
    host_class: str
    state: str
    drained: bool
    reason: str | None
    heartbeat_at: datetime | None
    started_at: datetime | None
    kernel: str | None
    boot_id: str | None
    current_job: str | None
    devices: list[str]
    cmdline: str | None = None
    device_names: list[str] = field(default_factory=list)
    provides: list[str] = field(default_factory=list)
    version: str | None = None


def db_now(conn: Connection) -> datetime:
    """The database server's time (PostgreSQL), else this machine's (SQLite is local)."""
    if conn.dialect.name == "postgresql":
        value = conn.execute(select(func.now())).scalar_one()
        assert isinstance(value, datetime)
        return value.astimezone(UTC)
    return datetime.now(UTC)


def _attempt(row: Any) -> Attempt:
    m = row._mapping
    return Attempt(**{k: m[k] for k in Attempt.__dataclass_fields__})


# -- attempts -------------------------------------------------------------------------------


def new_attempt(
    store: Store,
    run_id: int,
    block: int,
    *,
    state: str = "queued",
    host_class: str | None,
    host: str | None = None,
) -> Attempt:
    """The next attempt at (run, block): attempt = the highest so far + 1 (unique index)."""
    with store._session(write=True) as conn:
        now = db_now(conn)
        c = block_attempts.c
        last = conn.execute(
            select(func.max(c.attempt)).where(c.run_id == run_id, c.block == block)
        ).scalar()
        number = int(last or 0) + 1
        running = state == "running"
        new_id = conn.execute(
            insert(block_attempts)
            .values(
                run_id=run_id,
                block=block,
                attempt=number,
                state=state,
                host_class=host_class,
                host=host,
                created_at=now,
                claimed_at=now if running else None,
                heartbeat_at=now if running else None,
            )
            .returning(c.id)
        ).scalar_one()
        row = conn.execute(select(block_attempts).where(c.id == new_id)).one()
        conn.commit()
        return _attempt(row)


def mark_sent(store: Store, attempt_id: int) -> None:
    with store._session(write=True) as conn:
        conn.execute(
            update(block_attempts)
            .where(block_attempts.c.id == attempt_id)
            .values(sent_at=db_now(conn))
        )
        conn.commit()


def claim(store: Store, run_id: int, block: int, attempt: int, host: str) -> Attempt | None:
    """Take the queued attempt for `host`; None when it is not queued (running elsewhere,
    finished, expired, revoked: a redelivered or duplicate message measures nothing), or is
    queued again after a boot of another host (it continues there only)."""
    c = block_attempts.c
    with store._session(write=True) as conn:
        now = db_now(conn)
        done = conn.execute(
            update(block_attempts)
            .where(c.run_id == run_id, c.block == block, c.attempt == attempt, c.state == "queued")
            .where(or_(c.host.is_(None), c.host == host))
            .values(state="running", host=host, claimed_at=now, heartbeat_at=now)
        )
        conn.commit()
        if done.rowcount != 1:
            return None
        row = conn.execute(
            select(block_attempts).where(c.run_id == run_id, c.block == block, c.attempt == attempt)
        ).one()
        return _attempt(row)


def state_of(store: Store, run_id: int, block: int, attempt: int) -> str | None:
    c = block_attempts.c
    with store._session() as conn:
        return conn.execute(
            select(c.state).where(c.run_id == run_id, c.block == block, c.attempt == attempt)
        ).scalar()


def heartbeat(store: Store, attempt_id: int) -> bool:
    """Renew a running lease; False when it is no longer running (expired meanwhile)."""
    c = block_attempts.c
    with store._session(write=True) as conn:
        done = conn.execute(
            update(block_attempts)
            .where(c.id == attempt_id, c.state == "running")
            .values(heartbeat_at=db_now(conn))
        )
        conn.commit()
        return done.rowcount == 1


def store_block(store: Store, attempt_id: int, samples: Sequence[Sample]) -> bool:
    """Store a block's samples and end its attempt `finished`, in one transaction, only if
    the lease is still running (row locked first); False — nothing stored — otherwise."""
    c = block_attempts.c
    with store._session(write=True) as conn:
        state = conn.execute(select(c.state).where(c.id == attempt_id).with_for_update()).scalar()
        if state != "running":
            conn.rollback()
            return False
        for sample in samples:
            Store._insert_sample(conn, sample)
        conn.execute(
            update(block_attempts)
            .where(c.id == attempt_id)
            .values(state="finished", ended_at=db_now(conn), reason=None)
        )
        conn.commit()
        return True


def add_guarded(store: Store, attempt_id: int, sample: Sample) -> int | None:
    """One sample stored while its (local) lease is running; None when it is not."""
    c = block_attempts.c
    with store._session(write=True) as conn:
        state = conn.execute(select(c.state).where(c.id == attempt_id).with_for_update()).scalar()
        if state != "running":
            conn.rollback()
            return None
        sample_id = Store._insert_sample(conn, sample)
        conn.commit()
        return sample_id


def begin_boot(store: Store, attempt_id: int, kernel: str, boot_from: str) -> bool:
    """running → booting: the host boots `kernel` and its task ends; False when the lease
    was no longer running (nothing is booted then)."""
    c = block_attempts.c
    with store._session(write=True) as conn:
        done = conn.execute(
            update(block_attempts)
            .where(c.id == attempt_id, c.state == "running")
            .values(
                state="booting",
                reason=f"booting {kernel}",
                boot_kernel=kernel,
                boot_from=boot_from,
                boot_at=db_now(conn),
            )
        )
        conn.commit()
        return done.rowcount == 1


def requeue_booted(store: Store, attempt_id: int) -> bool:
    """booting → queued (same host, sent again): the host is back on the kernel asked for."""
    c = block_attempts.c
    with store._session(write=True) as conn:
        done = conn.execute(
            update(block_attempts)
            .where(c.id == attempt_id, c.state == "booting")
            .values(state="queued", reason=None, sent_at=None)
        )
        conn.commit()
        return done.rowcount == 1


def end(
    store: Store,
    attempt_id: int,
    state: str,
    reason: str | None = None,
    *,
    only_from: Iterable[str] = LIVE,
) -> bool:
    """Move a live attempt to terminal `state`; False when it had ended already."""
    if state not in TERMINAL:
        raise ValueError(f"attempt state {state!r} is not one of {TERMINAL}")
    c = block_attempts.c
    with store._session(write=True) as conn:
        done = conn.execute(
            update(block_attempts)
            .where(c.id == attempt_id, c.state.in_(list(only_from)))
            .values(state=state, reason=reason, ended_at=db_now(conn))
        )
        conn.commit()
        return done.rowcount == 1


def expire(
    store: Store, run_id: int, *, grace_s: float, block_timeout_s: float | None = None
) -> list[Attempt]:
    """Running attempts of `run_id` whose heartbeat is older than `grace_s` → `lost`, and
    those running longer than `block_timeout_s` → `timed_out`; the attempts so ended."""
    c = block_attempts.c
    ended: list[Attempt] = []
    with store._session(write=True) as conn:
        now = db_now(conn)
        rules = [
            (
                "lost",
                c.heartbeat_at < now - timedelta(seconds=grace_s),
                f"no heartbeat for {grace_s:g} s",
            ),
        ]
        if block_timeout_s is not None:
            rules.insert(
                0,
                (
                    "timed_out",
                    c.claimed_at < now - timedelta(seconds=block_timeout_s),
                    f"running longer than {block_timeout_s:g} s",
                ),
            )
        for state, condition, reason in rules:
            rows = conn.execute(
                update(block_attempts)
                .where(c.run_id == run_id, c.state == "running", condition)
                .values(state=state, reason=reason, ended_at=now)
                .returning(*block_attempts.c)
            ).all()
            ended.extend(_attempt(r) for r in rows)
        conn.commit()
    return ended


def attempts(
    store: Store, run_id: int | None = None, states: Iterable[str] | None = None
) -> list[Attempt]:
    c = block_attempts.c
    query = select(block_attempts)
    if run_id is not None:
        query = query.where(c.run_id == run_id)
    if states is not None:
        query = query.where(c.state.in_(list(states)))
    with store._session() as conn:
        return [_attempt(r) for r in conn.execute(query.order_by(c.run_id, c.block, c.attempt))]


@dataclass(frozen=True)
class RunView:
    """What a fleet controller reads at each poll, in one round trip's session: whether the
    run was cancelled, its attempts, and the server's clock."""

    cancelled: bool
    attempts: list[Attempt]
    now: datetime


def run_view(store: Store, run_id: int) -> RunView:
    c = block_attempts.c
    query = select(block_attempts).where(c.run_id == run_id)
    with store._session() as conn:
        cancelled = conn.execute(
            select(run_cancels.c.run_id).where(run_cancels.c.run_id == run_id)
        ).first()
        rows = conn.execute(query.order_by(c.block, c.attempt))
        return RunView(cancelled is not None, [_attempt(r) for r in rows], db_now(conn))


def mark_after_decision(store: Store, run_id: int, blocks: Iterable[int]) -> None:
    c = block_attempts.c
    wanted = list(blocks)
    if not wanted:
        return
    with store._session(write=True) as conn:
        conn.execute(
            update(block_attempts)
            .where(c.run_id == run_id, c.block.in_(wanted))
            .values(after_decision=True)
        )
        conn.commit()


def begin_local(store: Store, run_id: int, block: int, host: str) -> Attempt:
    """A local run's lease on one block: earlier live attempts of it (a killed process's:
    the caller holds the run's claim, so nobody else runs it) end `lost` first."""
    c = block_attempts.c
    with store._session(write=True) as conn:
        conn.execute(
            update(block_attempts)
            .where(c.run_id == run_id, c.block == block, c.state.in_(list(LIVE)))
            .values(state="lost", reason="its process ended", ended_at=db_now(conn))
        )
        conn.commit()
    return new_attempt(store, run_id, block, state="running", host_class=None, host=host)


# -- hosts ----------------------------------------------------------------------------------


def _host(row: Any) -> HostRow:
    m = row._mapping
    values = {k: m[k] for k in HostRow.__dataclass_fields__}
    for key in ("devices", "device_names", "provides"):
        values[key] = [str(v) for v in values[key] or []]
    return HostRow(**values)


def register_host(
    store: Store,
    name: str,
    host_class: str,
    *,
    kernel: str,
    boot_id: str,
    devices: Sequence[str],
    cmdline: str | None = None,
    device_names: Sequence[str] = (),
    provides: Sequence[str] = (),
    version: str | None = None,
) -> HostRow:
    """A worker's start: its row made or refreshed (drained and quarantined are kept).
    Facts only: nothing here is ever run by anyone (docs/fleet.md "Trust")."""
    h = fleet_hosts.c
    with store._session(write=True) as conn:
        now = db_now(conn)
        values = dict(
            host_class=host_class,
            kernel=kernel,
            boot_id=boot_id,
            devices=list(devices),
            cmdline=cmdline,
            device_names=list(device_names),
            provides=list(provides),
            version=version,
            heartbeat_at=now,
            started_at=now,
            current_job=None,
        )
        row = conn.execute(select(fleet_hosts).where(h.name == name).with_for_update()).first()
        if row is None:
            conn.execute(insert(fleet_hosts).values(name=name, state="idle", **values))
        else:
            state = "quarantined" if row.state == "quarantined" else "idle"
            conn.execute(update(fleet_hosts).where(h.name == name).values(state=state, **values))
        conn.commit()
        return _host(conn.execute(select(fleet_hosts).where(h.name == name)).one())


def host_heartbeat(store: Store, name: str, current_job: str | None) -> HostRow | None:
    """A worker's heartbeat: its state busy/idle (offline → back; quarantined stays)."""
    h = fleet_hosts.c
    with store._session(write=True) as conn:
        state = "busy" if current_job else "idle"
        conn.execute(
            update(fleet_hosts)
            .where(h.name == name, h.state != "quarantined")
            .values(state=state, reason=None)
        )
        conn.execute(
            update(fleet_hosts)
            .where(h.name == name)
            .values(heartbeat_at=db_now(conn), current_job=current_job)
        )
        conn.commit()
        row = conn.execute(select(fleet_hosts).where(h.name == name)).first()
        return _host(row) if row is not None else None


def set_host_state(store: Store, name: str, state: str, reason: str | None) -> None:
    if state not in HOST_STATES:
        raise ValueError(f"host state {state!r} is not one of {HOST_STATES}")
    h = fleet_hosts.c
    with store._session(write=True) as conn:
        conn.execute(
            update(fleet_hosts)
            .where(h.name == name, and_(h.state != "quarantined"))
            .values(state=state, reason=reason)
        )
        conn.commit()


def set_drained(store: Store, name: str, drained: bool) -> bool:
    """Drain (no new block) or undrain a host; undrain also lifts a quarantine."""
    h = fleet_hosts.c
    values: dict[str, Any] = {"drained": drained}
    if not drained:
        values.update(state="offline", reason=None)  # its next heartbeat says idle/busy
    with store._session(write=True) as conn:
        query = update(fleet_hosts).where(h.name == name)
        if not drained:
            query = query.where(h.state == "quarantined")
            conn.execute(query.values(**values))
            done = conn.execute(update(fleet_hosts).where(h.name == name).values(drained=False))
        else:
            done = conn.execute(query.values(**values))
        conn.commit()
        return done.rowcount == 1


def hosts(store: Store, host_class: str | None = None) -> list[HostRow]:
    query = select(fleet_hosts)
    if host_class is not None:
        query = query.where(fleet_hosts.c.host_class == host_class)
    with store._session() as conn:
        return [_host(r) for r in conn.execute(query.order_by(fleet_hosts.c.name))]


def server_now(store: Store) -> datetime:
    with store._session() as conn:
        return db_now(conn)


def forget_host(store: Store, name: str, *, fresh_s: float) -> str | None:
    """Remove host `name` from the fleet: None when done, else why not (unknown, a block
    of it still live, or its worker heartbeating within `fresh_s`)."""
    h, c = fleet_hosts.c, block_attempts.c
    with store._session(write=True) as conn:
        row = conn.execute(select(fleet_hosts).where(h.name == name).with_for_update()).first()
        if row is None:
            return f"no host {name} in the fleet"
        now = db_now(conn)
        if row.heartbeat_at is not None and now - row.heartbeat_at < timedelta(seconds=fresh_s):
            return (
                f"host {name} is alive (heartbeat {(now - row.heartbeat_at).total_seconds():.0f}"
                " s ago); stop its worker first"
            )
        live = conn.execute(
            select(func.count()).where(c.host == name, c.state.in_(list(LIVE)))
        ).scalar_one()
        if live:
            return f"host {name} holds {live} live block attempt(s); let them end or expire"
        conn.execute(delete(fleet_hosts).where(h.name == name))
        conn.commit()
        return None


# -- cancelling a run -----------------------------------------------------------------------


def request_cancel(store: Store, run_id: int, by: str | None) -> tuple[int, int]:
    """Ask the run's owner to stop: the request is recorded (once), queued attempts are
    revoked and running ones revoked too — their worker stops at its next sample and
    restores the host.  (queued revoked, running told)."""
    c = block_attempts.c
    with store._session(write=True) as conn:
        now = db_now(conn)
        known = conn.execute(
            select(run_cancels.c.run_id).where(run_cancels.c.run_id == run_id)
        ).first()
        if known is None:
            conn.execute(
                insert(run_cancels).values(run_id=run_id, requested_at=now, requested_by=by)
            )
        counts = []
        for states in (("queued",), ("running", "booting")):
            done = conn.execute(
                update(block_attempts)
                .where(c.run_id == run_id, c.state.in_(states))
                .values(state="revoked", reason="cancelled", ended_at=now)
            )
            counts.append(int(done.rowcount))
        conn.commit()
        return counts[0], counts[1]


def cancel_requested(store: Store, run_id: int) -> bool:
    with store._session() as conn:
        found = conn.execute(
            select(run_cancels.c.run_id).where(run_cancels.c.run_id == run_id)
        ).first()
        return found is not None


def running_hosts(store: Store, run_id: int) -> list[str]:
    """Hosts still busy with an attempt of `run_id` that was revoked by a cancel (their
    current job names it), so a cancel can wait until they are idle again."""
    prefix = f"run {run_id} block "
    with store._session() as conn:
        rows = conn.execute(
            select(fleet_hosts.c.name).where(fleet_hosts.c.current_job.like(prefix + "%"))
        ).scalars()
        return [str(r) for r in rows]


def run_owner(store: Store, run_id: int) -> str | None:
    """The process holding run `run_id` (`host:pid:start`), if any."""
    with store._session() as conn:
        found = conn.execute(select(runs.c.claimed_by).where(runs.c.id == run_id)).scalar()
        return str(found) if found else None
