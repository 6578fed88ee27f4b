"""What the bisect formats render: the engine's outcome with commit names, and the compare
report of parent against culprit.  `iolab.bisect.summary` builds it."""

from __future__ import annotations

from dataclasses import dataclass

from iolab.model.bisect import Commit, Outcome
from iolab.report.model import Report

SCHEMA = "iolab-bisect/1"


@dataclass(frozen=True)
class BisectReport:
    run_id: int
    status: str  # finished | interrupted | cancelled | failed
    kpi: str
    direction: str
    alpha: float
    margin_pct: float
    good: Commit
    bad: Commit
    candidates: int
    outcome: Outcome
    commits: dict[int, Commit]  # every index the outcome names (steps, range, ends)
    builds: dict[str, str]  # sha -> "ok" | "failed: why"
    evidence: Report | None  # parent against culprit (or the range's ends), all metrics
    cache: str
    registry: tuple[int, ...] = ()  # the regression entries its result was recorded on
    search: str = "probabilistic"  # which search and which step grade ran
    grade: str = "classify"

    def commit(self, index: int | None) -> Commit | None:
        return None if index is None else self.commits.get(index)
