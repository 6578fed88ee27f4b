"""fsperf's regression check, as in src/utils.py of josefbacik/fsperf (`check_regression`,
`diff_string`).

The baseline is summarised by its mean and sample standard deviation (0 with one run); the
new result (its mean, when several runs) is flagged when it falls outside
baseline mean -+ 1.96 baseline sd, on the bad side for a regression, the good side for an
improvement.  With one baseline run every difference is flagged.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence

from baselines import Outcome


def fsperf_compare(
    a: Sequence[float], b: Sequence[float], *, higher_is_better: bool = True
) -> Outcome:
    mean_a = statistics.fmean(a)
    sd_a = statistics.stdev(a) if len(a) > 1 else 0.0
    new = statistics.fmean(b)
    below, above = new < mean_a - 1.96 * sd_a, new > mean_a + 1.96 * sd_a
    if (below and higher_is_better) or (above and not higher_is_better):
        return "regression"
    if (above and higher_is_better) or (below and not higher_is_better):
        return "improvement"
    return "no change"
