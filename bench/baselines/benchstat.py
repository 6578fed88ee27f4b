"""benchstat's comparison, as in benchmath/anone.go and sample.go of golang/perf.

The default assumption (AssumeNothing) compares two samples with a two-sided Mann–Whitney U
test; the delta is shown (a change reported) when p <= alpha, alpha = 0.05, otherwise "~".
Exact distribution for small samples without ties, normal approximation otherwise — scipy's
`mannwhitneyu` gives the same p-values.  The direction is read from the medians.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence

from scipy import stats

from baselines import Outcome, directional


def benchstat_compare(
    a: Sequence[float], b: Sequence[float], *, alpha: float = 0.05, higher_is_better: bool = True
) -> Outcome:
    if len(a) < 1 or len(b) < 1:
        return "no change"
    p = float(stats.mannwhitneyu(a, b, alternative="two-sided", method="auto").pvalue)
    if not p <= alpha:
        return "no change"
    return directional(statistics.median(b) > statistics.median(a), higher_is_better)
