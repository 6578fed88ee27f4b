"""Pure statistics for iolab: summaries, rank tests, verdicts, multiplicity, histogram shifts,
and sequential A/B decisions.  No I/O and no printing; every result carries its warnings.
The method and its validation are described in docs/statistics.md.
"""

from iolab.stats.compare import (
    DEFAULT_ALPHA,
    DEFAULT_MARGIN_PCT,
    DEFAULT_SECONDARY_SHARE,
    compare,
    compare_metric,
    pair_by_block,
    with_adjusted_p,
)
from iolab.stats.histogram import HistogramInput, histogram_shift
from iolab.stats.multiple import adjust, benjamini_hochberg, graphical_holm, holm
from iolab.stats.sequential import SequentialDecision
from iolab.stats.summary import summarize
from iolab.stats.types import (
    VERDICTS,
    Comparison,
    Correction,
    HistogramBucket,
    HistogramShift,
    MetricComparison,
    MetricInput,
    SequentialState,
    SequentialVerdict,
    Summary,
    Verdict,
)

__all__ = [
    "DEFAULT_ALPHA",
    "DEFAULT_MARGIN_PCT",
    "DEFAULT_SECONDARY_SHARE",
    "VERDICTS",
    "Comparison",
    "Correction",
    "HistogramBucket",
    "HistogramInput",
    "HistogramShift",
    "MetricComparison",
    "MetricInput",
    "SequentialDecision",
    "SequentialState",
    "SequentialVerdict",
    "Summary",
    "Verdict",
    "adjust",
    "benjamini_hochberg",
    "compare",
    "compare_metric",
    "graphical_holm",
    "histogram_shift",
    "holm",
    "pair_by_block",
    "summarize",
    "with_adjusted_p",
]
