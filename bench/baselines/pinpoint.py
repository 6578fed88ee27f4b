"""Chromium Pinpoint's three-outcome comparison, as in dashboard/pinpoint/models/compare/
(compare.py, thresholds.py, thresholds_performance.py) and models/job_state.py of
catapult-project/catapult.

p = min(Kolmogorov–Smirnov p, Mann–Whitney p (normal approximation with continuity
correction)).  DIFFERENT when p <= 0.01; SAME when p > a "high threshold"; otherwise UNKNOWN,
and the job adds 10 more attempts to each side and compares again.  The high threshold is
the 99th percentile of the U-test p-value for two normal samples of size n whose means differ
by a given magnitude, in interquartile ranges (IQR); the magnitude is the expected change
divided by the larger IQR of the two samples.  Pinpoint ships a precomputed table; here the
same quantity is recomputed by simulation (seeded) for the magnitudes met, keeping Pinpoint's
mapping from magnitude to table row (row = int(10 * magnitude) - 5, clamped, with rows for
0.3 ... 4.0 IQR).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import lru_cache

import numpy as np
from scipy import stats

from baselines import Outcome, directional

LOW_THRESHOLD = 0.01
REPEAT_INCREASE = 10
_ROWS = tuple(round(0.3 + 0.1 * i, 1) for i in range(38))  # 0.3 ... 4.0 IQR


def _p_value(a: Sequence[float], b: Sequence[float]) -> float:
    ks = float(stats.ks_2samp(a, b).pvalue)
    mw = float(
        stats.mannwhitneyu(
            a, b, alternative="two-sided", method="asymptotic", use_continuity=True
        ).pvalue
    )
    return min(ks, mw)


@lru_cache(maxsize=64)
def _high_thresholds(row_distance_iqr: float, n_max: int, sims: int = 1000) -> dict[int, float]:
    """99th percentile of U-test p-values at n = 10, 20, ... n_max (Pinpoint looks there),
    for normal samples `row` IQR apart."""
    rng = np.random.default_rng(12345)
    shift = row_distance_iqr * float(stats.norm.ppf(0.75) - stats.norm.ppf(0.25))
    a = rng.normal(size=(sims, n_max))
    b = rng.normal(loc=shift, size=(sims, n_max))
    out: dict[int, float] = {}
    for n in range(REPEAT_INCREASE, n_max + 1, REPEAT_INCREASE):
        p = stats.mannwhitneyu(
            a[:, :n], b[:, :n], axis=1, alternative="two-sided", method="asymptotic"
        ).pvalue
        out[n] = float(np.percentile(p, 99))
    return out


def high_threshold(magnitude_iqr: float, n: int, n_max: int = 400) -> float:
    index = min(max(int(magnitude_iqr * 10) - 5, 0), len(_ROWS) - 1)
    table = _high_thresholds(_ROWS[index], n_max)
    key = min(max(REPEAT_INCREASE, n - n % REPEAT_INCREASE), n_max)
    return table[key]


def pinpoint_compare(
    a: Sequence[float],
    b: Sequence[float],
    magnitude_iqr: float = 1.0,
    *,
    higher_is_better: bool = True,
) -> Outcome:
    """One comparison: DIFFERENT (regression/improvement), SAME ("no change") or UNKNOWN."""
    n = (len(a) + len(b)) // 2
    p = _p_value(a, b)
    if p <= LOW_THRESHOLD:
        return directional(float(np.median(b)) > float(np.median(a)), higher_is_better)
    if p > high_threshold(magnitude_iqr, n):
        return "no change"
    return "inconclusive"


def _iqr(x: Sequence[float]) -> float:
    q75, q25 = np.percentile(x, [75, 25])
    return float(q75 - q25)


def pinpoint_sequential(
    draw: Callable[[int], tuple[list[float], list[float]]],
    expected_change: float,
    *,
    max_per_side: int = 400,
    higher_is_better: bool = True,
) -> tuple[Outcome, int]:
    """Pinpoint's loop: 10 attempts per side, 10 more while UNKNOWN.  `draw(k)` returns the
    first k values of each side; `expected_change` is in the metric's units (the job's
    comparison_magnitude).  Returns the outcome and the attempts per side used."""
    n = REPEAT_INCREASE
    while True:
        a, b = draw(n)
        iqr = max(
            float(np.subtract(*np.percentile(a, [75, 25]))),
            float(np.subtract(*np.percentile(b, [75, 25]))),
        )
        magnitude = abs(expected_change) / iqr if iqr else 1000.0
        outcome = pinpoint_compare(a, b, magnitude, higher_is_better=higher_is_better)
        if outcome != "inconclusive" or n + REPEAT_INCREASE > max_per_side:
            return outcome, n
        n += REPEAT_INCREASE
