"""mmtests' significance star, as in bin/lib/MMTests/{Compare,Stat,Summarise}.pm of
gormanm/mmtests.

Each side is summarised by its arithmetic mean and an interval mean -+ qnorm(1 - alpha/2) * sd
(sd of the samples, not of the mean: a band holding ~95% of runs).  `cidiff` divides the
difference of means by the sum of the two half-widths facing each other; the result is
starred as significant when |cidiff| > 1, i.e. when the two bands do not overlap.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence

from scipy import stats

from baselines import Outcome, directional


def mmtests_compare(
    a: Sequence[float], b: Sequence[float], *, alpha: float = 0.05, higher_is_better: bool = True
) -> Outcome:
    if len(a) < 2 or len(b) < 2:
        return "no change"
    q = float(stats.norm.ppf(1 - alpha / 2))
    mean_a, mean_b = statistics.fmean(a), statistics.fmean(b)
    half_a, half_b = q * statistics.stdev(a), q * statistics.stdev(b)
    diff = mean_b - mean_a
    cisum = half_a + half_b
    ratio = diff if cisum == 0 else diff / cisum
    if abs(ratio) <= 1:
        return "no change"
    return directional(diff > 0, higher_is_better)
