"""What every output format renders: one or more groups, each a `stats.Comparison` of B
against A in one matrix cell, plus the latency percentiles of merged histogram bins.

Formats never compute statistics; they only lay out what is here.  `ci_exit_code` is the
one rule for `--ci` (docs/exit-codes.md), shared by `compare` and `ab`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from iolab.errors import EXIT_INCONCLUSIVE, EXIT_OK, EXIT_REGRESSION
from iolab.model.metrics import Direction
from iolab.stats.hosts import HostStrata
from iolab.stats.types import Comparison, MetricComparison, SequentialState


@dataclass(frozen=True)
class LatencyRow:
    """One percentile of the merged bins of each side (not an average of percentiles)."""

    percentile: str  # "p99", "p99.9"
    a: float
    b: float
    change_pct: float  # 100 * (b / a - 1); the test is in `test` (per-run values), if any
    test: MetricComparison | None  # the per-run comparison of the same percentile metric


@dataclass(frozen=True)
class LatencySummary:
    name: str  # histogram name, e.g. "write.clat_ns"
    rows: tuple[LatencyRow, ...]
    runs_a: int
    runs_b: int
    events_a: int
    events_b: int


@dataclass(frozen=True)
class Group:
    """B against A in one matrix cell (an empty cell when the samples have none)."""

    a_name: str  # what A is here: a variant name, a selector, a dimension value
    b_name: str
    cell: dict[str, str]
    comparison: Comparison
    latency: tuple[LatencySummary, ...] = ()
    sequential: tuple[SequentialState, ...] = ()  # `iolab ab`: the KPI decisions
    paired_blocks: int | None = None  # blocks shared by A and B when paired
    hosts: tuple[HostStrata, ...] = ()  # per-host KPI effects, when blocks ran on several hosts

    @property
    def cell_text(self) -> str:
        return " ".join(f"{k}={v}" for k, v in self.cell.items())

    @property
    def title(self) -> str:
        where = f"{self.cell_text}: " if self.cell else ""
        return f"{where}{self.b_name} vs {self.a_name}"


@dataclass(frozen=True)
class Report:
    a: str  # the A side as the user named it (selector, or "run 12 variant fsync")
    b: str
    groups: tuple[Group, ...]
    alpha: float
    margin_pct: float
    mode: str = "pair"  # "pair" (A B) | "by" (one run, each value against a baseline)
    by: str | None = None  # the dimension compared in "by" mode ("variant", "fs", ...)
    sequential: bool = False  # KPI verdicts come from the sequential test (`iolab ab`)
    warnings: tuple[str, ...] = field(default_factory=tuple)

    def kpis(self) -> list[tuple[Group, MetricComparison]]:
        return [(g, m) for g in self.groups for m in g.comparison.kpis]


SIGNIFICANT = ("regression", "improvement", "changed")


def is_evidence(m: MetricComparison) -> bool:
    """A secondary metric that moved significantly after the table's correction."""
    return not m.kpi and m.verdict in SIGNIFICANT


def shown_secondary(comparison: Comparison) -> tuple[MetricComparison, ...]:
    """The secondary rows a report shows: one per measurement (a metric another row stands
    for — equal in every sample, or the same device counter read by fio — is named on that
    row instead)."""
    return tuple(m for m in comparison.secondary if m.alias_of is None)


def shown_name(m: MetricComparison) -> str:
    """The row's name, with the metrics it stands for: `jbd2.transactions (=
    jbd2.transactions_requested)`."""
    return f"{m.name} (= {', '.join(m.aliases)})" if m.aliases else m.name


def procedure(comparison: Comparison) -> str:
    """The correction the secondary verdicts passed, named for the reader."""
    if comparison.procedure:
        return comparison.procedure
    return "Holm" if comparison.correction != "bh" else "Benjamini–Hochberg"


def is_mechanism(m: MetricComparison) -> bool:
    """Evidence metrics that are not judged good or bad: monitor counters and I/O totals."""
    return is_evidence(m) and m.direction is Direction.NEUTRAL


def ci_exit_code(report: Report) -> int:
    """10 when any KPI regressed; else 11 when any KPI is inconclusive (or none was
    compared); else 0."""
    verdicts = [m.verdict for _, m in report.kpis()]
    if "regression" in verdicts:
        return EXIT_REGRESSION
    if not verdicts or "inconclusive" in verdicts:
        return EXIT_INCONCLUSIVE
    return EXIT_OK
