"""The result types of `iolab.stats` — the contract the report, compare and ab layers consume.

Every type is a frozen dataclass of plain values (floats, ints, strings, tuples), so results
can be compared in tests, serialised to JSON field by field, and never change after they are
made.  Every result carries its own `warnings` (sentences, no trailing period) that the
caller prints; nothing in `iolab.stats` prints.

Conventions
- Relative changes are of B against A, in percent: `change_pct = 100 * (B/A - 1)`, computed
  on log values and transformed back (so +10% and -9.09% are the same distance from 0).
- A value that cannot be computed (a CI with too few samples, a CV of a zero mean) is `None`,
  never NaN, so JSON output stays valid.
- Verdicts are direction-aware: for a higher-is-better metric a significant drop is a
  "regression".  Metrics with a neutral direction (evidence such as jbd2 or vmstat counters)
  are never judged good or bad: they get "changed" instead of "regression"/"improvement".
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

from iolab.model.metrics import Direction

# "changed" only for Direction.NEUTRAL metrics (and histogram shifts).
Verdict = Literal["regression", "improvement", "no change", "inconclusive", "changed"]
VERDICTS: tuple[Verdict, ...] = (
    "regression",
    "improvement",
    "no change",
    "inconclusive",
    "changed",
)
# "holm": the table-wide family-wise procedure (graphical Holm between the KPIs and the
# secondary family; inside it, the secondary metrics corrected jointly by step-down max-T
# over the design's relabellings, stats.maxt).  "holm-marginal": the same split with plain
# Holm for every secondary test (what "holm" was before max-T; kept for comparisons).
# "bh": Benjamini–Hochberg on the secondary tests.
Correction = Literal["holm", "holm-marginal", "bh"]


@dataclass(frozen=True)
class Summary:
    """One side of a comparison: location, spread and how well n pins the median down."""

    n: int
    median: float
    median_ci_low: float | None  # distribution-free (order statistics); None if n is too small
    median_ci_high: float | None
    ci_level: float  # the level actually achieved by the order-statistic CI (>= the requested)
    mean: float
    stddev: float | None  # sample standard deviation (ddof=1); None for n < 2
    cv: float | None  # stddev / |mean|, as a fraction (0.09 = 9%); None if undefined
    min: float
    max: float
    warnings: tuple[str, ...] = ()


@dataclass(frozen=True)
class MetricInput:
    """The samples of one metric on both sides, as the compare layer hands them in.

    `blocks_a` / `blocks_b`: the randomized-complete-block id of every sample (same length as
    `a` / `b`).  When given, samples of A and B that share a block id are paired and the paired
    tests are used; samples without a partner are dropped (with a warning).  When None, the
    unpaired tests are used.  `direction` None means: look it up in the metric table.
    `ids_a` / `ids_b`: which sample each value comes from (unpaired tables: the joint
    permutation of sample labels keeps each sample's metrics together); None = position.
    """

    name: str
    a: Sequence[float]
    b: Sequence[float]
    kpi: bool = False
    unit: str | None = None
    direction: Direction | None = None
    blocks_a: Sequence[str | int] | None = None
    blocks_b: Sequence[str | int] | None = None
    ids_a: Sequence[str | int] | None = None
    ids_b: Sequence[str | int] | None = None


@dataclass(frozen=True)
class MetricComparison:
    """B against A for one metric: estimate, interval, test, verdict and what would settle it."""

    name: str
    unit: str
    direction: Direction
    kpi: bool
    a: Summary
    b: Summary
    paired: bool
    n_pairs: int | None  # pairs actually used when paired, else None
    change_pct: float | None  # Hodges–Lehmann estimate on log values, as % of A
    ci_low_pct: float | None  # distribution-free CI of change_pct at `ci_level`
    ci_high_pct: float | None
    p_value: float | None  # two-sided; Wilcoxon signed-rank (paired) or Mann–Whitney U
    p_adjusted: float | None  # after the table's multiplicity correction (docs/statistics.md)
    test: str  # "wilcoxon signed-rank (paired, log ratios)" | "mann-whitney u" | "none"
    verdict: Verdict
    margin_pct: float  # the equivalence margin used for "no change" (± this many %)
    tost_p_value: float | None  # max of the two one-sided p-values against ±margin
    min_p_value: float | None  # smallest p the test can reach at this n (warns when > alpha)
    runs_needed: int | None  # estimated extra runs PER SIDE to settle an inconclusive verdict
    warnings: tuple[str, ...] = ()
    # Confidence of the interval: 1 - alpha * p_value / p_adjusted, the level this row's test
    # is judged at after the correction, so the interval excludes 0 exactly when it rejects.
    ci_level: float | None = None
    same_as: str | None = None  # a KPI proportional to this one (iops and bw_bytes): one test
    # Secondary metrics equal to this one, or exact multiples of it, in every sample of the
    # comparison: one measurement, one test, one row (this one names them).
    aliases: tuple[str, ...] = ()
    alias_of: str | None = None  # set on those others: the row that stands for them

    @property
    def n_a(self) -> int:
        return self.a.n

    @property
    def n_b(self) -> int:
        return self.b.n


@dataclass(frozen=True)
class HistogramBucket:
    """One bucket of merged bins: raw counts and each side's share of its own total."""

    bucket: str  # the bucket's label as the monitor names it ("1", "2-3", "4-7", ...)
    count_a: int
    count_b: int
    share_a: float  # count_a / total_a
    share_b: float


@dataclass(frozen=True)
class HistogramShift:
    """Did a distribution of events (e.g. pages per ext4_writepages call) move from A to B?"""

    name: str
    buckets: tuple[HistogramBucket, ...]
    total_a: int
    total_b: int
    runs_a: int
    runs_b: int
    statistic: float | None  # chi-square statistic after the overdispersion correction
    dof: int | None
    dispersion: float  # run-to-run overdispersion factor phi (>= 1) the statistic was divided by
    p_value: float | None
    p_adjusted: float | None  # across all histogram shifts and secondary metrics of the table
    test: str
    total_variation: float  # 0.5 * sum |share_b - share_a|: how much of the mass moved (0..1)
    mean_a: float | None  # mean bucket value when bucket labels are numeric, else None
    mean_b: float | None
    verdict: Literal["changed", "inconclusive"]
    warnings: tuple[str, ...] = ()


@dataclass(frozen=True)
class Comparison:
    """A whole table: every metric compared, histogram shifts, and the table-wide settings."""

    metrics: tuple[MetricComparison, ...]
    histogram_shifts: tuple[HistogramShift, ...]
    alpha: float
    margin_pct: float
    correction: Correction  # how secondary metrics' false discoveries are controlled
    warnings: tuple[str, ...] = ()
    # The correction as a reader should see it named, e.g. "step-down max-T over all 512
    # joint sign flips of the blocks, within a graphical Holm split (table-wide FWER ≤ 0.05)"
    procedure: str = ""

    @property
    def shown(self) -> tuple[MetricComparison, ...]:
        """The rows to show: every metric except those another row stands for."""
        return tuple(m for m in self.metrics if m.alias_of is None)

    @property
    def kpis(self) -> tuple[MetricComparison, ...]:
        return tuple(m for m in self.metrics if m.kpi)

    @property
    def secondary(self) -> tuple[MetricComparison, ...]:
        return tuple(m for m in self.metrics if not m.kpi)


SequentialVerdict = Literal["regression", "improvement", "no change", "inconclusive"]


@dataclass(frozen=True)
class SequentialState:
    """Where an adaptive A/B test of one KPI stands after the latest block.

    `done` is True once a verdict is reached (it then never changes) or the budget is spent
    (verdict stays "inconclusive").  `ci_low_pct`/`ci_high_pct` form an anytime-valid
    confidence sequence: it may be read after every block without losing coverage.
    """

    name: str
    direction: Direction
    n_blocks: int  # pairs seen so far (one run of A and one of B per block)
    verdict: SequentialVerdict
    done: bool
    estimate_pct: float | None  # Hodges–Lehmann estimate of the change (paired log ratios)
    ci_low_pct: float | None
    ci_high_pct: float | None
    # evidence against "no difference" (a one-sided test: that it got worse, or for an
    # improvement verdict better); a verdict needs >= 1/alpha
    e_value: float
    e_value_equivalence: float  # evidence against "|change| >= margin" (min of both sides)
    alpha: float
    margin_pct: float
    runs_needed: int | None  # rough extra blocks to a verdict when stopped inconclusive
    reason: str  # one line: why it stopped or what it is waiting for
    warnings: tuple[str, ...] = field(default_factory=tuple)
