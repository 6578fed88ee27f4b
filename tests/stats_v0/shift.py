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
from scipy import stats

from stats_v0 import ranks
from stats_v0._nulls import (
    min_p_paired,
    min_p_unpaired,
    mwu_exact_p,
    mwu_lower_count,
    signed_rank_exact_p,
    signed_rank_lower_count,
)

_EXACT_MAX_N = 50  # scipy's exact rank tests are used up to this size when there are no ties


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


def _has_ties(x: NDArray[np.float64]) -> bool:
    return bool(np.unique(x).size < x.size)


def mwu_p(a: NDArray[np.float64], b: NDArray[np.float64], alternative: str = "two-sided") -> float:
    """Mann–Whitney U p-value of B against A: exact without ties (m*n <= 10^4), exact with ties
    up to 60 values in all (stats.ranks), else scipy (exact up to 50 per side without ties,
    normal approximation with tie correction)."""
    fast = mwu_exact_p(a, b, alternative)
    if fast is not None:
        return fast
    if a.size + b.size <= ranks.EXACT_MAX:
        return ranks.mwu_tied_p(a, b, alternative)
    exact = max(a.size, b.size) <= _EXACT_MAX_N and not _has_ties(np.concatenate([a, b]))
    method = "exact" if exact else "asymptotic"
    res = stats.mannwhitneyu(b, a, alternative=alternative, method=method)
    return float(min(1.0, res.pvalue))


def signed_rank_p(d: NDArray[np.float64], alternative: str = "two-sided") -> float:
    """Wilcoxon signed-rank p-value of within-block log ratios (zeros dropped, as Wilcoxon did):
    exact without ties up to 400 pairs, exact with ties up to 60 (stats.ranks), else scipy's
    normal approximation with tie correction."""
    nz = d[d != 0]
    if nz.size == 0:
        return 1.0
    fast = signed_rank_exact_p(nz, alternative)
    if fast is not None:
        return fast
    if nz.size <= ranks.EXACT_MAX:
        return ranks.signed_rank_tied_p(nz, alternative)
    exact = nz.size <= _EXACT_MAX_N and not _has_ties(np.abs(nz))
    method = "exact" if exact else "approx"
    res = stats.wilcoxon(nz, alternative=alternative, method=method, zero_method="wilcox")
    return float(min(1.0, res.pvalue))


def unpaired_shift(
    log_a: NDArray[np.float64], log_b: NDArray[np.float64], alpha: float
) -> ShiftEstimate:
    diffs = np.sort(np.subtract.outer(log_b, log_a).ravel())
    m, n = log_a.size, log_b.size
    k = mwu_lower_count(m, n, alpha)
    lo = float(diffs[k - 1]) if k >= 1 else None
    hi = float(diffs[m * n - k]) if k >= 1 else None
    p_value = mwu_p(log_a, log_b)
    estimate = float(np.median(diffs))
    lo, hi = ranks.agree_at_zero(lo, hi, estimate, diffs, p_value <= alpha)
    return ShiftEstimate(
        estimate=estimate,
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


def paired_shift(d: NDArray[np.float64], alpha: float) -> ShiftEstimate:
    w = walsh_averages(d)
    n = d.size
    k = signed_rank_lower_count(n, alpha)
    lo = float(w[k - 1]) if k >= 1 else None
    hi = float(w[w.size - k]) if k >= 1 else None
    p_value = signed_rank_p(d)
    estimate = float(np.median(w))
    lo, hi = ranks.agree_at_zero(lo, hi, estimate, w, p_value <= alpha)
    return ShiftEstimate(
        estimate=estimate,
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
