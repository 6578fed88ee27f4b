"""The regression registry's queries (tables `regressions`, `regression_events`).

Entries are never deleted or rewritten by iolab: a status change appends an event and sets
the entry's current status in the same transaction.  `add` is idempotent on the dedup key,
so two finders of the same regression meet in one entry.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import Connection, Row, insert, select, update

from iolab.errors import StoreError
from iolab.model.regression import STATUSES, NewRegression, Regression, RegressionEvent
from iolab.store.schema import regression_events, regression_keys, regressions
from iolab.store.store import Store


def _now() -> datetime:
    return datetime.now(UTC)


def _digest(key: str) -> str:
    """Keys are hashed: a case key (cells, hosts) has no length limit, the column has."""
    return hashlib.sha256(key.encode()).hexdigest()


def add(store: Store, entry: NewRegression) -> tuple[int, bool]:
    """(id, created): a new open entry, or the id of the one already known by any key."""
    keys = list(dict.fromkeys(_digest(k) for k in (entry.dedup_key, *entry.aliases)))
    with store._session(write=True) as session:
        found = session.scalars(
            select(regression_keys.c.regression_id).where(regression_keys.c.key.in_(keys))
        ).first()
        if found is not None:
            return int(found), False
        created_at = _now()
        new_id = session.execute(
            insert(regressions)
            .values(
                metric=entry.metric,
                case_key=entry.case_key,
                case=dict(entry.case),
                dedup_key=entry.dedup_key,
                origin=entry.origin,
                introduced_run_id=entry.introduced_run_id,
                last_good_run_id=entry.last_good_run_id,
                introduced_at=entry.introduced_at,
                commit_range=entry.commit_range,
                culprit=entry.culprit,
                change_pct=entry.change_pct,
                ci_low_pct=entry.ci_low_pct,
                ci_high_pct=entry.ci_high_pct,
                p_value=entry.p_value,
                status="open",
                created_at=created_at,
                details=dict(entry.details),
            )
            .returning(regressions.c.id)
        ).scalar_one()
        session.execute(
            insert(regression_keys), [{"key": k, "regression_id": new_id} for k in keys]
        )
        session.execute(
            insert(regression_events),
            [
                {
                    "regression_id": new_id,
                    "at": created_at,
                    "old_status": None,
                    "new_status": "open",
                    "note": entry.note,
                    "evidence_run_id": None,
                }
            ],
        )
        session.commit()
        return int(new_id), True


def set_status(
    store: Store,
    regression_id: int,
    status: str,
    note: str | None = None,
    evidence_run_id: int | None = None,
) -> None:
    """Append a status change (and its note/evidence) and make it the entry's status."""
    if status not in STATUSES:
        raise ValueError(f"status {status!r} is not one of {STATUSES}")
    with store._session(write=True) as session:
        old_status = _status_of(session, regression_id)
        session.execute(
            insert(regression_events),
            [
                {
                    "regression_id": regression_id,
                    "at": _now(),
                    "old_status": old_status,
                    "new_status": status,
                    "note": note,
                    "evidence_run_id": evidence_run_id,
                }
            ],
        )
        session.execute(
            update(regressions).where(regressions.c.id == regression_id).values(status=status)
        )
        session.commit()


def update_details(store: Store, regression_id: int, details: dict[str, Any], note: str) -> None:
    """Replace an entry's details and log why (an event that keeps its status)."""
    with store._session(write=True) as session:
        old_status = _status_of(session, regression_id)
        session.execute(
            update(regressions).where(regressions.c.id == regression_id).values(details=details)
        )
        session.execute(
            insert(regression_events),
            [
                {
                    "regression_id": regression_id,
                    "at": _now(),
                    "old_status": old_status,
                    "new_status": old_status,
                    "note": note,
                    "evidence_run_id": None,
                }
            ],
        )
        session.commit()


def record_finding(
    store: Store,
    regression_id: int,
    details: dict[str, Any],
    note: str,
    evidence_run_id: int | None = None,
    status: str | None = None,
    columns: dict[str, str | None] | None = None,
) -> None:
    """What the lab found for an entry, in one transaction: its details replaced, the
    `culprit`/`commit_range` columns set (`columns`), the status changed (or kept), and a
    log line with the note and the run it comes from."""
    if status is not None and status not in STATUSES:
        raise ValueError(f"status {status!r} is not one of {STATUSES}")
    allowed = {"culprit", "commit_range"}
    if columns and not set(columns) <= allowed:
        raise ValueError(f"columns {sorted(set(columns) - allowed)} cannot be set")
    with store._session(write=True) as session:
        old_status = _status_of(session, regression_id)
        new_status = status or old_status
        session.execute(
            update(regressions)
            .where(regressions.c.id == regression_id)
            .values(details=details, status=new_status, **(columns or {}))
        )
        session.execute(
            insert(regression_events),
            [
                {
                    "regression_id": regression_id,
                    "at": _now(),
                    "old_status": old_status,
                    "new_status": new_status,
                    "note": note,
                    "evidence_run_id": evidence_run_id,
                }
            ],
        )
        session.commit()


def entries(
    store: Store, status: Sequence[str] | None = None, ids: Sequence[int] | None = None
) -> list[Regression]:
    """Registry entries (oldest first) with their logs."""
    query = select(regressions).order_by(regressions.c.id)
    if status:
        query = query.where(regressions.c.status.in_(list(status)))
    if ids is not None:
        query = query.where(regressions.c.id.in_(list(ids)))
    with store._session() as session:
        rows = list(session.execute(query))
        return [_entry(session, row) for row in rows]


def get(store: Store, regression_id: int) -> Regression:
    found = entries(store, ids=[regression_id]) if -(2**31) <= regression_id < 2**31 else []
    if not found:
        raise StoreError(f"no regression {regression_id} in the registry")
    return found[0]


def _status_of(session: Connection, regression_id: int) -> str:
    """The entry's status now, or one line naming the id when there is no such entry."""
    row = session.execute(
        select(regressions.c.status).where(regressions.c.id == regression_id)
    ).first()
    if row is None:
        raise StoreError(f"no regression {regression_id} in the registry")
    return str(row.status)


def _entry(session: Connection, row: Row[Any]) -> Regression:
    events = session.execute(
        select(regression_events)
        .where(regression_events.c.regression_id == row.id)
        .order_by(regression_events.c.id)
    )
    return Regression(
        id=row.id,
        metric=row.metric,
        case_key=row.case_key,
        case=dict(row.case),
        origin=row.origin,
        status=row.status,
        created_at=row.created_at,
        introduced_run_id=row.introduced_run_id,
        last_good_run_id=row.last_good_run_id,
        introduced_at=row.introduced_at,
        commit_range=row.commit_range,
        culprit=row.culprit,
        change_pct=row.change_pct,
        ci_low_pct=row.ci_low_pct,
        ci_high_pct=row.ci_high_pct,
        p_value=row.p_value,
        details=dict(row.details),
        events=tuple(
            RegressionEvent(
                at=e.at,
                old_status=e.old_status,
                new_status=e.new_status,
                note=e.note,
                evidence_run_id=e.evidence_run_id,
            )
            for e in events
        ),
    )
