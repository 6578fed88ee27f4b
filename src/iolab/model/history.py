"""The typed results of `iolab.history`: series of per-run points and their change points.

These are the face the CLI and the HTML report (issue 12) render; they carry plain values
only, so JSON (`iolab-history/1`, docs/history.md) is a field-by-field copy.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from iolab.model.metrics import Direction


@dataclass(frozen=True)
class Case:
    """What one series holds constant: plan, variant, matrix cell, host (and --by values)."""

    plan: str | None
    variant: str | None
    cell: dict[str, str]
    host: str | None
    extra: dict[str, str] = field(default_factory=dict)  # --by tag values

    @property
    def key(self) -> str:
        cell = ",".join(f"{k}={self.cell[k]}" for k in sorted(self.cell))
        extra = ",".join(f"{k}={self.extra[k]}" for k in sorted(self.extra))
        parts = [
            f"plan={self.plan or ''}",
            f"variant={self.variant or ''}",
            f"cell={cell}",
            f"host={self.host or ''}",
        ]
        if extra:
            parts.append(f"by={extra}")
        return "|".join(parts)

    def to_json(self) -> dict[str, Any]:
        return {
            "plan": self.plan,
            "variant": self.variant,
            "cell": dict(sorted(self.cell.items())),
            "host": self.host,
            "by": dict(sorted(self.extra.items())),
        }


@dataclass(frozen=True)
class Point:
    """One run (lab/ab: the median of its samples of this case) or one imported result."""

    run_id: int
    sample_id: int | None  # the imported result's sample; None for a lab run's median
    label: str | None
    time: datetime | None  # the result's own time (fio timestamp, header date, sample start)
    tags: dict[str, str]
    value: float  # the median of the run's samples, or the imported value
    ci_low: float | None  # the median's distribution-free interval from the run's samples
    ci_high: float | None
    n: int  # samples behind the point
    se_log: float | None  # standard error of log(value) from the replicates, if any

    @property
    def ref(self) -> str:
        """How the point is named to a user: `run 12` or `run 12 sample 345`."""
        return f"run {self.run_id}" + (f" sample {self.sample_id}" if self.sample_id else "")


@dataclass(frozen=True)
class ChangePoint:
    """A confirmed step: the first point of the new level and what the data say about it.

    `change_pct` and its interval: Hodges–Lehmann on log values of the points between the
    neighbouring change points (iolab.stats), conditional on this location.  `p_value` is the
    permutation p of the search's own maximum (selection included); `p_ab` the plain
    Mann–Whitney p of the two sides, which ignores the search and is shown for reference.
    """

    index: int
    time: datetime | None
    before: Point  # the last point of the old level
    after: Point  # the first point of the new level
    runs_before: tuple[int, ...]  # run ids of the tested stretch before / after
    runs_after: tuple[int, ...]
    n_before: int
    n_after: int
    median_before: float
    median_after: float
    change_pct: float | None
    ci_low_pct: float | None
    ci_high_pct: float | None
    p_value: float
    p_ab: float | None
    kind: str  # "regression" | "improvement" | "changed" (neutral metric)
    regression_id: int | None = None  # the registry entry it opened or joined


@dataclass(frozen=True)
class Series:
    metric: str
    unit: str
    direction: Direction
    kpi: bool
    case: Case
    points: tuple[Point, ...]
    change_points: tuple[ChangePoint, ...]
    warnings: tuple[str, ...] = ()


@dataclass(frozen=True)
class History:
    """Everything `iolab history` shows for one selector."""

    selector: str
    order: str  # "time" or "tag:KEY"
    series: tuple[Series, ...]
    min_segment: int
    alpha: float
    warnings: tuple[str, ...] = ()
