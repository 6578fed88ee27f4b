"""A regression in the registry and the log of what happened to it (docs/history.md)."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal

Status = Literal["open", "confirmed", "fixed", "invalid", "duplicate"]
STATUSES: tuple[Status, ...] = ("open", "confirmed", "fixed", "invalid", "duplicate")
Origin = Literal["history", "compare", "ab", "bisect", "lkp"]  # lkp: a robot mail imported


@dataclass(frozen=True)
class RegressionEvent:
    """One line of an entry's append-only log: a status change, with its note and evidence."""

    at: datetime
    old_status: str | None  # None for the entry's creation
    new_status: str
    note: str | None = None
    evidence_run_id: int | None = None


@dataclass(frozen=True)
class NewRegression:
    """What a finder (history, compare, ab, bisect) knows when it opens an entry.

    `dedup_key` names the regression (metric, case, where it first shows); `aliases` are
    keys under which the same regression may already be entered (neighbouring points of a
    change point whose position the search could have put one step away).
    """

    metric: str
    case_key: str
    case: dict[str, Any]
    dedup_key: str
    origin: Origin
    introduced_run_id: int | None = None
    last_good_run_id: int | None = None
    introduced_at: datetime | None = None
    commit_range: str | None = None
    culprit: str | None = None
    change_pct: float | None = None
    ci_low_pct: float | None = None
    ci_high_pct: float | None = None
    p_value: float | None = None
    details: dict[str, Any] = field(default_factory=dict)
    note: str | None = None
    aliases: tuple[str, ...] = ()


@dataclass(frozen=True)
class Regression:
    """A registry entry as stored, with its log (oldest first)."""

    id: int
    metric: str
    case_key: str
    case: dict[str, Any]
    origin: str
    status: str
    created_at: datetime
    introduced_run_id: int | None
    last_good_run_id: int | None
    introduced_at: datetime | None
    commit_range: str | None
    culprit: str | None
    change_pct: float | None
    ci_low_pct: float | None
    ci_high_pct: float | None
    p_value: float | None
    details: dict[str, Any]
    events: tuple[RegressionEvent, ...] = ()
