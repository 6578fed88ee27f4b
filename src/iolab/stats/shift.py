"""How far B moved from A: Hodges–Lehmann estimates on log values with exact rank intervals.

Why log values: storage metrics change multiplicatively (a 3% slower kernel is 3% slower at
36k IOPS and at 360k IOPS), their noise scales with their level, and a shift on the log scale
is scale-free, so one margin ("±1%") means the same for IOPS, bytes and nanoseconds.
Why Hodges–Lehmann: it is the estimate that belongs to the rank test whose p-value we report
(Mann–Whitney unpaired, Wilcoxon signed-rank paired), so the interval excludes 0 exactly when
the test rejects (up to discreteness); it is robust to the odd outlier run and needs no
normality, and its interval has exact distribution-free coverage under a pure shift.

- unpaired: estimate = median of all m*n differences log b_j - log a_i; interval = order
  statistics of those differences at the Mann–Whitney critical value.
- paired: d_i = log b_i - log a_i within each block; estimate = median of the Walsh averages
  (d_i + d_j)/2, i <= j; interval = their order statistics at the signed-rank critical value.
Results are on the log scale; `to_pct` turns them into percent changes.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from iolab.stats import ranks
from iolab.stats._nulls import (
    min_p_paired,
    min_p_unpaired,
    mwu_exact_p,
    mwu_lower_count,
    signed_rank_exact_p,
    signed_rank_lower_count,
)
from iolab.stats.normal import ndtr


@dataclass(frozen=True)
class ShiftEstimate:
    """A log-scale shift of B against A, its interval, and the test behind both."""

    estimate: float
    ci_low: float | None
    ci_high: float | None
    p_value: float
    min_p: float
    test: str
    n: int  # pairs (paired) or min(n_a, n_b) (unpaired)


def to_pct(log_shift: float | None) -> float | None:
    return None if log_shift is None else 100.0 * math.expm1(log_shift)


def from_pct(pct: float) -> float:
    return math.log1p(pct / 100.0)


def _normal_p(z: float, alternative: str) -> float:
    """p of a standardised statistic: "greater" P(Z >= z), "less" P(Z <= z), two-sided
    both tails of |z| (scipy's `_get_pvalue` with its simple normal)."""
    if alternative == "less":
        return ndtr(z)
    if alternative == "greater":
        return ndtr(-z)
    return 2.0 * ndtr(-abs(z))


def _ratio(numerator: float, denominator: float) -> float:
    """numerator / denominator with IEEE's answers for a zero denominator (numpy's)."""
    if denominator != 0:
        return numerator / denominator
    if numerator == 0 or math.isnan(numerator):
        return math.nan
    return math.copysign(math.inf, numerator)


def mwu_normal_p(x: NDArray[np.float64], y: NDArray[np.float64], alternative: str) -> float:
    """Mann–Whitney U p of "x shifted against y" by the normal approximation with tie and
    continuity corrections — the statistic, variance and arithmetic of scipy's
    `mannwhitneyu(x, y, method="asymptotic")`, without importing scipy.stats."""
    n1, n2 = x.size, y.size
    doubled, ties = ranks.doubled_midranks(np.concatenate([x, y]))
    u1 = int(doubled[:n1].sum()) / 2 - n1 * (n1 + 1) / 2
    u2 = n1 * n2 - u1
    if alternative == "greater":
        u, factor = u1, 1
    elif alternative == "less":
        u, factor = u2, 1
    else:
        u, factor = max(u1, u2), 2
    n = n1 + n2
    t = ties.astype(float)
    tie_term = float(np.sum(t**3 - t))
    s = math.sqrt(n1 * n2 / 12 * ((n + 1) - tie_term / (n * (n - 1))))
    z = _ratio(u - n1 * n2 / 2 - 0.5, s)
    return min(1.0, max(0.0, ndtr(-z) * factor))


def signed_rank_normal_p(d: NDArray[np.float64], alternative: str) -> float:
    """Wilcoxon signed-rank p of non-zero d by the normal approximation with tie correction
    and no continuity correction (scipy's `wilcoxon(d, method="approx")`, computed alike)."""
    count = float(d.size)
    doubled, ties = ranks.doubled_midranks(np.abs(d))
    r_plus = int(doubled[d > 0].sum()) / 2
    mean = count * (count + 1.0) * 0.25
    t = ties.astype(float)
    tie_term = float(np.sum(t**3 - t))
    se = math.sqrt((count * (count + 1.0) * (2.0 * count + 1.0) - tie_term / 2) / 24)
    return _normal_p(_ratio(r_plus - mean, se), alternative)


def mwu_p(a: NDArray[np.float64], b: NDArray[np.float64], alternative: str = "two-sided") -> float:
    """Mann–Whitney U p-value of B against A: exact without ties (m*n <= 10^4), exact with ties
    up to 60 values in all (stats.ranks), else the normal approximation with tie correction.
    (Without ties and up to 50 per side m*n <= 2,500: always exact.)"""
    fast = mwu_exact_p(a, b, alternative)
    if fast is not None:
        return fast
    if a.size + b.size <= ranks.EXACT_MAX:
        return ranks.mwu_tied_p(a, b, alternative)
    return mwu_normal_p(b, a, alternative)


def signed_rank_p(d: NDArray[np.float64], alternative: str = "two-sided") -> float:
    """Wilcoxon signed-rank p-value of within-block log ratios (zeros dropped, as Wilcoxon did):
    exact without ties up to 400 pairs, exact with ties up to 60 (stats.ranks), else the
    normal approximation with tie correction."""
    nz = d[d != 0]
    if nz.size == 0:
        return 1.0
    fast = signed_rank_exact_p(nz, alternative)
    if fast is not None:
        return fast
    if nz.size <= ranks.EXACT_MAX:
        return ranks.signed_rank_tied_p(nz, alternative)
    return min(1.0, signed_rank_normal_p(nz, alternative))


def unpaired_breakpoints(
    log_a: NDArray[np.float64], log_b: NDArray[np.float64]
) -> NDArray[np.float64]:
    """The m*n differences log b_j - log a_i, sorted: the estimate and every interval of the
    unpaired shift are order statistics of these."""
    return np.sort(np.subtract.outer(log_b, log_a).ravel())


def sorted_median(values: NDArray[np.float64]) -> float:
    """np.median of an already sorted array, without sorting it again (same arithmetic)."""
    n = values.size
    half = n // 2
    if n % 2:
        return float(values[half])
    return float(np.mean(values[half - 1 : half + 1]))


def interval(
    breakpoints: NDArray[np.float64], k: int, estimate: float, rejects: bool
) -> tuple[float | None, float | None]:
    """[B_(k), B_(N+1-k)] of the sorted breakpoints (None without an interval), made to
    agree with the test at 0 (`ranks.agree_at_zero`)."""
    lo = float(breakpoints[k - 1]) if k >= 1 else None
    hi = float(breakpoints[breakpoints.size - k]) if k >= 1 else None
    return ranks.agree_at_zero(lo, hi, estimate, breakpoints, rejects)


def inside(estimate: float, lo: float | None, hi: float | None) -> float:
    """The estimate, within its interval.  With many ties the median breakpoint can be 0
    while the rank test rejects at 0, and `agree_at_zero` moves the interval off 0: the
    estimate is then the interval's end nearest to it, so no row shows a change outside its
    own interval (`+0.00% [+5.00%, +5.00%]`)."""
    if lo is not None and estimate < lo:
        return lo
    if hi is not None and estimate > hi:
        return hi
    return estimate


def unpaired_shift(
    log_a: NDArray[np.float64],
    log_b: NDArray[np.float64],
    alpha: float,
    diffs: NDArray[np.float64] | None = None,
    p_value: float | None = None,
) -> ShiftEstimate:
    """`diffs` (`unpaired_breakpoints`) and `p_value` when the caller has them already."""
    diffs = unpaired_breakpoints(log_a, log_b) if diffs is None else diffs
    m, n = log_a.size, log_b.size
    p_value = mwu_p(log_a, log_b) if p_value is None else p_value
    estimate = sorted_median(diffs)
    lo, hi = interval(diffs, mwu_lower_count(m, n, alpha), estimate, p_value <= alpha)
    return ShiftEstimate(
        estimate=inside(estimate, lo, hi),
        ci_low=lo,
        ci_high=hi,
        p_value=p_value,
        min_p=min_p_unpaired(m, n),
        test="mann-whitney u",
        n=min(m, n),
    )


def walsh_averages(d: NDArray[np.float64]) -> NDArray[np.float64]:
    i, j = np.triu_indices(d.size)
    return np.sort((d[i] + d[j]) / 2.0)


def paired_shift(
    d: NDArray[np.float64],
    alpha: float,
    walsh: NDArray[np.float64] | None = None,
    p_value: float | None = None,
) -> ShiftEstimate:
    """`walsh` (`walsh_averages(d)`) and `p_value` when the caller has them already."""
    w = walsh_averages(d) if walsh is None else walsh
    n = d.size
    p_value = signed_rank_p(d) if p_value is None else p_value
    estimate = sorted_median(w)
    lo, hi = interval(w, signed_rank_lower_count(n, alpha), estimate, p_value <= alpha)
    return ShiftEstimate(
        estimate=inside(estimate, lo, hi),
        ci_low=lo,
        ci_high=hi,
        p_value=p_value,
        min_p=min_p_paired(int(np.count_nonzero(d))),
        test="wilcoxon signed-rank (paired, log ratios)",
        n=n,
    )


def tost_p(
    log_a: NDArray[np.float64] | None,
    log_b: NDArray[np.float64] | None,
    d: NDArray[np.float64] | None,
    bounds: tuple[float, float],
) -> float:
    """Two one-sided rank tests against the margin: p <= alpha means down < change < up.

    `bounds` are the margin on the analysis scale (log1p(-m%), log1p(+m%) for log values).

    H0a: change <= -margin, H0b: change >= +margin; the equivalence p-value is the larger of the
    two one-sided p-values (an intersection–union test, so no multiplicity price is paid).
    """
    down, up = bounds
    if d is not None:
        p_low = signed_rank_p(d - down, alternative="greater")
        p_high = signed_rank_p(d - up, alternative="less")
    else:
        assert log_a is not None and log_b is not None
        p_low = mwu_p(log_a, log_b - down, alternative="greater")
        p_high = mwu_p(log_a, log_b - up, alternative="less")
    return max(p_low, p_high)
