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

from iolab.stats.normal import ppf

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


# Primes below 2^49: a running sum of up to 10,001 residues (m * n <= _MWU_EXACT_MAX_CELLS)
# stays inside int64.  Six of them hold every count up to 2^294; the largest, C(200, 100) at
# 100 per side, needs 197 bits.
_PRIMES = (
    562949953421231,
    562949953421201,
    562949953421189,
    562949953421173,
    562949953421131,
    562949953421111,
)


@lru_cache(maxsize=512)
def _mwu_pmf(m: int, n: int) -> NDArray[np.float64]:
    # The exact counts of U are the coefficients of the Gaussian binomial
    # prod_{i=1..m} (1 - q^(n+i)) / (1 - q^i).  They outgrow int64 (C(100, 50) ~ 2^96), so
    # they are computed modulo a few primes below 2^49 at once, in int64 arrays (one row per
    # prime), and put together by the Chinese remainder theorem: the same integers as Python
    # integers would give, in a tenth of the time (every `compare` process pays this once).
    # Each count divided by the total, as Python does it (correctly rounded).
    if m > n:
        m, n = n, m
    degree = m * n
    total = math.comb(m + n, m)
    primes: list[int] = []
    while math.prod(primes) <= total:
        primes.append(_PRIMES[len(primes)])
    rows_of = len(primes)
    p = np.array(primes, dtype=np.int64)[:, None]
    # zeros past the top coefficient: a running sum reshapes the rows without a copy
    poly = np.zeros((rows_of, degree + 2 * m + 2), dtype=np.int64)
    poly[:, 0] = 1
    top = 0
    for i in range(1, m + 1):
        k = n + i
        # multiply by (1 - q^k): every coefficient loses the one k places lower (old values)
        grown = poly[:, k : top + k + 1]
        grown -= poly[:, : top + 1]
        np.remainder(grown, p, out=grown)
        top += k
        # divide by (1 - q^i): a running sum along every i-th coefficient
        size = top + 1
        rows = -(-size // i)
        summed = np.cumsum(poly[:, : rows * i].reshape(rows_of, rows, i), axis=1)
        poly[:, :size] = summed.reshape(rows_of, rows * i)[:, :size] % p
        top -= i
    modulus = math.prod(primes)
    counts = np.zeros(degree + 1, dtype=object)
    for j, prime in enumerate(primes):
        rest = modulus // prime
        counts += poly[j, : degree + 1].astype(object) * (rest * pow(rest, -1, prime))
    return np.array([c % modulus / total for c in counts], dtype=float)


@lru_cache(maxsize=1024)  # pure; a table asks for the same few (n, level) again and again
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
    return max(0, math.floor(mean - ppf(1 - half) * sd))


@lru_cache(maxsize=1024)
def mwu_lower_count(m: int, n: int, alpha_two_sided: float) -> int:
    """Largest k with P(U < k) <= alpha/2: the CI is [D_(k), D_(mn+1-k)] of sorted differences."""
    half = alpha_two_sided / 2
    if m * n <= _MWU_EXACT_MAX_CELLS:
        cdf = np.cumsum(_mwu_pmf(m, n))
        ok = np.nonzero(cdf <= half + 1e-12)[0]
        return int(ok[-1]) + 1 if ok.size else 0
    mean = m * n / 2
    sd = math.sqrt(m * n * (m + n + 1) / 12)
    return max(0, math.floor(mean - ppf(1 - half) * sd))


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


def has_ties(x: NDArray[np.float64]) -> bool:
    """Whether two values of x are equal (as np.unique would find, without the numpy.ma
    import np.unique costs a command's start-up)."""
    s = np.sort(x, axis=None)
    return bool(s.size > 1 and np.any(s[1:] == s[:-1]))


def signed_rank_exact_p(d: NDArray[np.float64], alternative: str) -> float | None:
    """Exact signed-rank p-value of non-zero, untied |d| (None when that does not hold).

    Same statistic and distribution as scipy's method="exact", computed from the cached null
    distribution because the simulation calls it hundreds of thousands of times.
    """
    n = d.size
    ad = np.abs(d)
    if n == 0 or n > _SIGNED_RANK_EXACT_MAX or np.any(d == 0) or has_ties(ad):
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
    if has_ties(np.concatenate([x, y])):
        return None
    u_y = int(np.searchsorted(np.sort(x), y).sum())  # pairs (x_i < y_j)
    pmf = _mwu_pmf(m, n)
    if alternative == "two-sided":
        return _two_sided(pmf, u_y)
    return _one_sided(pmf, u_y, alternative == "greater")
