"""What the HTML report shows beyond the text formats' `Report`: the samples behind each KPI
(by block, so pairing and drift can be seen), the sequential test's path block by block,
and where each side was measured.

Plain frozen data, filled by `iolab.publish.gather` from the store; the HTML format only
lays it out (report/ never queries the store).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from iolab.report.model import Report


@dataclass(frozen=True)
class KpiSamples:
    """One KPI's values on each side of one group, as (block, value); block None = unpaired."""

    metric: str
    unit: str
    a: tuple[tuple[int | None, float], ...]
    b: tuple[tuple[int | None, float], ...]


@dataclass(frozen=True)
class SequentialPoint:
    """The sequential test of one KPI after `block` blocks (an anytime-valid interval)."""

    block: int
    estimate_pct: float | None
    ci_low_pct: float | None
    ci_high_pct: float | None


@dataclass(frozen=True)
class SequentialTrace:
    metric: str
    margin_pct: float
    points: tuple[SequentialPoint, ...]
    verdict: str
    stopped_at: int | None  # the block the decision was reached at (None: never decided)


@dataclass(frozen=True)
class GroupDetail:
    """Per group of `Report.groups` (same order): the KPI samples and sequential traces."""

    samples: tuple[KpiSamples, ...] = ()
    traces: tuple[SequentialTrace, ...] = ()


@dataclass(frozen=True)
class SideProvenance:
    """Where one side was measured: the facts of its samples (several values joined)."""

    name: str  # the side as the report names it (a variant, a selector)
    runs: tuple[str, ...]  # "run 12 (lab, finished, 2026-11-23 05:00)"
    facts: tuple[tuple[str, str], ...]  # ("kernel", "6.1.0"), ("mount options", "…")
    settings: dict[str, str] = field(default_factory=dict)  # knobs in force (sysctl, queue)


@dataclass(frozen=True)
class HtmlReport:
    """Everything one HTML report page shows."""

    title: str
    report: Report
    details: tuple[GroupDetail, ...]  # parallel to report.groups
    sides: tuple[SideProvenance, ...] = ()
    generated_by: str = "iolab"
    links: tuple[tuple[str, str], ...] = ()  # (text, href) shown in the header (the site)


@dataclass(frozen=True)
class SampleRow:
    id: int | None
    where: str  # variant, cell and block; or the source file of an import
    status: str
    values: tuple[str, ...]  # formatted, one per column


@dataclass(frozen=True)
class RunSummary:
    """A run without a comparison of its own (an import, one variant, no samples yet)."""

    title: str
    facts: tuple[tuple[str, str], ...]
    columns: tuple[str, ...]
    rows: tuple[SampleRow, ...]
    side: SideProvenance | None = None
