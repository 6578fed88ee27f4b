"""Pure statistics for iolab: summaries, rank tests, verdicts, multiplicity, histogram shifts,
and sequential A/B decisions.  No I/O and no printing; every result carries its warnings.
The method and its validation are described in docs/statistics.md.

The names below load their module on first use (PEP 562), so importing one light piece
(`iolab.stats.types`, `iolab.stats.bins`) does not load scipy: `iolab parse` and
`iolab results` start without it.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from iolab.stats.comparison import (
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

_WHERE = {
    "DEFAULT_ALPHA": "iolab.stats.comparison",
    "DEFAULT_MARGIN_PCT": "iolab.stats.comparison",
    "DEFAULT_SECONDARY_SHARE": "iolab.stats.comparison",
    "compare": "iolab.stats.comparison",
    "compare_metric": "iolab.stats.comparison",
    "pair_by_block": "iolab.stats.comparison",
    "with_adjusted_p": "iolab.stats.comparison",
    "HistogramInput": "iolab.stats.histogram",
    "histogram_shift": "iolab.stats.histogram",
    "adjust": "iolab.stats.multiple",
    "benjamini_hochberg": "iolab.stats.multiple",
    "graphical_holm": "iolab.stats.multiple",
    "holm": "iolab.stats.multiple",
    "SequentialDecision": "iolab.stats.sequential",
    "summarize": "iolab.stats.summary",
    "VERDICTS": "iolab.stats.types",
    "Comparison": "iolab.stats.types",
    "Correction": "iolab.stats.types",
    "HistogramBucket": "iolab.stats.types",
    "HistogramShift": "iolab.stats.types",
    "MetricComparison": "iolab.stats.types",
    "MetricInput": "iolab.stats.types",
    "SequentialState": "iolab.stats.types",
    "SequentialVerdict": "iolab.stats.types",
    "Summary": "iolab.stats.types",
    "Verdict": "iolab.stats.types",
}


def __getattr__(name: str) -> Any:
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module 'iolab.stats' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)


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
