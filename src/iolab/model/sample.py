"""A stored sample: one measured (or failed) execution with its place in a run."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from iolab.model.result import Histogram


def cell_key(cell: Mapping[str, Any]) -> str:
    """The canonical text of a matrix cell ("k=v,k=v", keys sorted), as the store keeps it."""
    return ",".join(f"{k}={cell[k]}" for k in sorted(cell))


def case_key(cell_text: str, variant: str | None) -> str:
    """The one key of a case (cell text + variant): what `done_keys` reports and what a
    resumed run skips.  Defined once, here, so the lab, the store and resume cannot drift."""
    return f"{cell_text}|{variant or ''}"


@dataclass
class Sample:
    """One sample as the store holds it.

    For imports: one per Result (variant None, block None).  For lab runs: one per case and
    block — `cell` is the matrix cell (e.g. {"fs": "xfs", "writers": 10}), `variant` the
    variant name, `block` the randomized complete block it belongs to (pairs samples of
    different variants measured close together in time).
    """

    run_id: int
    status: str = "ok"  # "ok" | "failed"
    reason: str | None = None  # why it failed; never a number
    variant: str | None = None
    cell: dict[str, Any] = field(default_factory=dict)
    block: int | None = None
    position: int | None = None  # order within its block
    tool: str | None = None
    tool_version: str | None = None
    format: str | None = None
    source: str | None = None
    caption: str | None = None
    metrics: dict[str, float] = field(default_factory=dict)
    job_metrics: dict[str, dict[str, float]] = field(default_factory=dict)  # job name → metrics
    histograms: dict[str, Histogram] = field(default_factory=dict)
    # job name → histogram name → bins
    job_histograms: dict[str, dict[str, Histogram]] = field(default_factory=dict)
    provenance: dict[str, Any] = field(default_factory=dict)
    started_at: datetime | None = None
    finished_at: datetime | None = None
    id: int | None = None
    host: str | None = None  # the host that measured it (lab runs); None for imports
    # filled in when read back from the store
    label: str | None = None
    tags: dict[str, str] = field(default_factory=dict)

    @property
    def case_key(self) -> str:
        """Stable key of the case (cell + variant) this sample measured."""
        return case_key(cell_key(self.cell), self.variant)


@dataclass
class RunInfo:
    id: int
    kind: str  # "import" | "lab" | "ab"
    label: str | None
    status: str  # "running" | "finished" | "interrupted" | "cancelled" | "failed"
    created_at: datetime
    plan_text: str | None = None
    plan_hash: str | None = None
    plan_path: str | None = None
    host: str | None = None
    tags: dict[str, str] = field(default_factory=dict)
    meta: dict[str, Any] = field(default_factory=dict)
    n_samples: int = 0  # every stored sample, ok or failed
    n_failed: int = 0
    finished_at: datetime | None = None
