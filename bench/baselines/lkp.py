"""The 0-day robot's (LKP-tests) default "changed stat" rule, as in lib/stats.rb and
lib/changed_stat.rb of intel/lkp-tests.

Per side, the samples are sorted and trimmed by n >> 5 at each end (at most 3), and the
"mean" it compares is in fact the element at index n/2 of the sorted list (the upper median).
Without the `distance` option a change is flagged when B's minimum lies above A's middle value
and B's middle value lies above A's maximum (or the mirror image).  The change must then pass
`skip_small_change?`: the ratio of the larger middle value to the smaller must exceed 1.01
for KPI ("perf metric") stats, 1.05 for others.  At least one side needs 3 samples.
With `distance` (bisection mode) the rule is instead: ranges do not overlap and the gap exceeds
(difference of middle values) / 2, or for n < 3 a gap larger than distance x the wider range.
"""

from __future__ import annotations

from collections.abc import Sequence

from baselines import Outcome, directional


def _summary(values: Sequence[float], max_margin: int = 3) -> tuple[float, float, float]:
    s = sorted(values)
    margin = min(len(s) >> 5, max_margin)
    if margin:
        s = s[margin : len(s) - margin]
    return s[0], s[len(s) // 2], s[-1]


def lkp_compare(
    a: Sequence[float],
    b: Sequence[float],
    *,
    kpi: bool = True,
    distance: float | None = None,
    higher_is_better: bool = True,
) -> Outcome:
    if len(a) < 3 and len(b) < 3:
        return "no change"
    min_a, mid_a, max_a = _summary(a)
    min_b, mid_b, max_b = _summary(b)
    if distance is None:
        up = min_b > mid_a and mid_b > max_a
        down = min_a > mid_b and mid_a > max_b
    elif len(a) < 3 or len(b) < 3:
        gap = max(max_a - min_a, max_b - min_b) * distance
        up, down = min_b - max_a > gap, min_a - max_b > gap
    else:
        up = min_b > max_a and (min_b - max_a) > (mid_b - mid_a) / 2
        down = min_a > max_b and (min_a - max_b) > (mid_a - mid_b) / 2
    if not (up or down):
        return "no change"
    high, low = (mid_b, mid_a) if mid_b >= mid_a else (mid_a, mid_b)
    ratio = high / low if low > 0 else 5.0
    if not ratio > 1.01 or not (ratio > 1.05 or kpi):
        return "no change"
    return directional(up, higher_is_better)
