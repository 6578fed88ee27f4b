"""The regression registry's queries (tables `regressions`, `regression_events`).

Entries are never deleted or rewritten by iolab: a status change appends an event and sets
the entry's current status in the same transaction.  `add` is idempotent on the dedup key,
so two finders of the same regression meet in one entry.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from datetime import UTC, datetime

from sqlalchemy import insert, select, update
from sqlalchemy.orm import Session

from iolab.errors import StoreError
from iolab.model.regression import STATUSES, NewRegression, Regression, RegressionEvent
from iolab.store.schema import RegressionEventRow, RegressionKeyRow, RegressionRow
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
            select(RegressionKeyRow.regression_id).where(RegressionKeyRow.key.in_(keys))
        ).first()
        if found is not None:
            return int(found), False
        row = RegressionRow(
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
            created_at=_now(),
            details=dict(entry.details),
        )
        session.add(row)
        session.flush()
        session.execute(
            insert(RegressionKeyRow), [{"key": k, "regression_id": row.id} for k in keys]
        )
        session.execute(
            insert(RegressionEventRow),
            [
                {
                    "regression_id": row.id,
                    "at": row.created_at,
                    "old_status": None,
                    "new_status": "open",
                    "note": entry.note,
                    "evidence_run_id": None,
                }
            ],
        )
        session.commit()
        return row.id, True


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
        row = session.get(RegressionRow, regression_id)
        if row is None:
            raise StoreError(f"no regression {regression_id} in the registry")
        session.execute(
            insert(RegressionEventRow),
            [
                {
                    "regression_id": regression_id,
                    "at": _now(),
                    "old_status": row.status,
                    "new_status": status,
                    "note": note,
                    "evidence_run_id": evidence_run_id,
                }
            ],
        )
        session.execute(
            update(RegressionRow).where(RegressionRow.id == regression_id).values(status=status)
        )
        session.commit()


def entries(
    store: Store, status: Sequence[str] | None = None, ids: Sequence[int] | None = None
) -> list[Regression]:
    """Registry entries (oldest first) with their logs."""
    query = select(RegressionRow).order_by(RegressionRow.id)
    if status:
        query = query.where(RegressionRow.status.in_(list(status)))
    if ids is not None:
        query = query.where(RegressionRow.id.in_(list(ids)))
    with store._session() as session:
        rows = list(session.scalars(query))
        return [_entry(session, row) for row in rows]


def get(store: Store, regression_id: int) -> Regression:
    found = entries(store, ids=[regression_id]) if -(2**31) <= regression_id < 2**31 else []
    if not found:
        raise StoreError(f"no regression {regression_id} in the registry")
    return found[0]


def _entry(session: Session, row: RegressionRow) -> Regression:
    events = session.scalars(
        select(RegressionEventRow)
        .where(RegressionEventRow.regression_id == row.id)
        .order_by(RegressionEventRow.id)
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
