"""Exact null distributions of the two rank statistics iolab uses, for confidence intervals.

scipy gives p-values for the Mann–Whitney U and Wilcoxon signed-rank tests, but not the
order-statistic indices that turn those tests into Hodges–Lehmann confidence intervals.
Both null distributions have closed generating functions, so they are computed here:

- signed-rank statistic T+ of n non-zero differences: prod_{i=1..n} (1 + q^i) / 2^n
- Mann–Whitney U of samples of sizes m, n: the Gaussian binomial [m+n choose m]_q / C(m+n, m)

Above the size limits the normal approximation is used (its error there is far below the
discreteness of the decision).
"""

from __future__ import annotations

import math
from functools import lru_cache

import numpy as np
from numpy.typing import NDArray
from scipy import stats

_SIGNED_RANK_EXACT_MAX = 400
_MWU_EXACT_MAX_CELLS = 10_000  # m * n


@lru_cache(maxsize=512)
def _signed_rank_pmf(n: int) -> NDArray[np.float64]:
    pmf = np.zeros(n * (n + 1) // 2 + 1)
    pmf[0] = 1.0
    top = 0
    for i in range(1, n + 1):
        shifted = pmf[: top + 1].copy()
        pmf[: top + 1] *= 0.5
        pmf[i : i + top + 1] += 0.5 * shifted
        top += i
    return pmf


@lru_cache(maxsize=512)
def _mwu_pmf(m: int, n: int) -> NDArray[np.float64]:
    # Exact counts with Python integers (no cancellation error), then normalised.
    if m > n:
        m, n = n, m
    degree = m * n
    poly = [0] * (degree + m + 2)
    poly[0] = 1
    top = 0
    for i in range(1, m + 1):
        k = n + i
        for j in range(top + k, k - 1, -1):  # multiply by (1 - q^k)
            if j - k <= top:
                poly[j] -= poly[j - k]
        top += k
        for j in range(i, top + 1):  # divide by (1 - q^i)
            poly[j] += poly[j - i]
        top -= i
    total = math.comb(m + n, m)
    return np.array([c / total for c in poly[: degree + 1]], dtype=float)


def signed_rank_lower_count(n: int, alpha_two_sided: float) -> int:
    """Largest k with P(T+ < k) <= alpha/2: the CI is [W_(k), W_(N+1-k)] of sorted Walsh averages.

    Returns 0 when no interval at this level exists for n.
    """
    half = alpha_two_sided / 2
    if n <= _SIGNED_RANK_EXACT_MAX:
        cdf = np.cumsum(_signed_rank_pmf(n))
        # P(T+ <= k-1) <= half  ->  k-1 <= last index with cdf <= half
        ok = np.nonzero(cdf <= half + 1e-12)[0]
        return int(ok[-1]) + 1 if ok.size else 0
    mean = n * (n + 1) / 4
    sd = math.sqrt(n * (n + 1) * (2 * n + 1) / 24)
    return max(0, math.floor(mean - float(stats.norm.ppf(1 - half)) * sd))


def mwu_lower_count(m: int, n: int, alpha_two_sided: float) -> int:
    """Largest k with P(U < k) <= alpha/2: the CI is [D_(k), D_(mn+1-k)] of sorted differences."""
    half = alpha_two_sided / 2
    if m * n <= _MWU_EXACT_MAX_CELLS:
        cdf = np.cumsum(_mwu_pmf(m, n))
        ok = np.nonzero(cdf <= half + 1e-12)[0]
        return int(ok[-1]) + 1 if ok.size else 0
    mean = m * n / 2
    sd = math.sqrt(m * n * (m + n + 1) / 12)
    return max(0, math.floor(mean - float(stats.norm.ppf(1 - half)) * sd))


def min_p_unpaired(m: int, n: int) -> float:
    """Smallest two-sided exact Mann–Whitney p-value for sizes m, n (complete separation)."""
    return min(1.0, 2.0 / math.comb(m + n, m))


def min_p_paired(n: int) -> float:
    """Smallest two-sided exact signed-rank p-value for n non-zero differences."""
    return min(1.0, 2.0 / 2.0**n)


def _two_sided(pmf: NDArray[np.float64], stat: int) -> float:
    lower = float(pmf[: stat + 1].sum())
    upper = float(pmf[stat:].sum())
    return min(1.0, 2.0 * min(lower, upper))


def _one_sided(pmf: NDArray[np.float64], stat: int, greater: bool) -> float:
    return min(1.0, float(pmf[stat:].sum() if greater else pmf[: stat + 1].sum()))


def signed_rank_exact_p(d: NDArray[np.float64], alternative: str) -> float | None:
    """Exact signed-rank p-value of non-zero, untied |d| (None when that does not hold).

    Same statistic and distribution as scipy's method="exact", computed from the cached null
    distribution because the simulation calls it hundreds of thousands of times.
    """
    n = d.size
    ad = np.abs(d)
    if n == 0 or n > _SIGNED_RANK_EXACT_MAX or np.any(d == 0) or np.unique(ad).size < n:
        return None
    ranks = np.empty(n)
    ranks[np.argsort(ad)] = np.arange(1, n + 1)
    t_plus = round(float(ranks[d > 0].sum()))
    pmf = _signed_rank_pmf(n)
    if alternative == "two-sided":
        return _two_sided(pmf, t_plus)
    return _one_sided(pmf, t_plus, alternative == "greater")


def mwu_exact_p(x: NDArray[np.float64], y: NDArray[np.float64], alternative: str) -> float | None:
    """Exact Mann–Whitney p-value for "y shifted against x" without ties (else None)."""
    m, n = x.size, y.size
    if m == 0 or n == 0 or m * n > _MWU_EXACT_MAX_CELLS:
        return None
    both = np.concatenate([x, y])
    if np.unique(both).size < both.size:
        return None
    u_y = int(np.searchsorted(np.sort(x), y).sum())  # pairs (x_i < y_j)
    pmf = _mwu_pmf(m, n)
    if alternative == "two-sided":
        return _two_sided(pmf, u_y)
    return _one_sided(pmf, u_y, alternative == "greater")
