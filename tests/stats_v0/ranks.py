"""Exact rank tests WITH ties at small n, and intervals that agree with them.

Why not scipy: `mannwhitneyu(method="exact")` and `wilcoxon(method="exact")` assume no ties
(scipy falls back to the normal approximation, or warns); `permutation_test` is exact but
enumerates every assignment (C(20, 10) = 184,756 for 10 runs per side) per call, and the
interval below needs several calls per metric.  The permutation distribution of a mid-rank
sum is a subset-sum count, so it is computed exactly by dynamic programming over the pooled
values (doubled mid-ranks are integers), the way benchstat (aclements/go-moremath) does.

- Mann–Whitney: S = sum of B's doubled mid-ranks; under H0 B's ranks are a uniformly random
  n-subset of the pooled ranks.  Exact when m + n <= 60.
- Signed-rank: T = sum of the doubled mid-ranks of |d| where d > 0 (zeros dropped, as
  Wilcoxon did); under H0 each sign is a fair coin.  Exact when n <= 60.
Above those sizes stats.shift uses scipy's normal approximation with tie correction.  Two-sided p =
2 · min(P(S <= s), P(S >= s)), capped at 1 (benchstat's definition).

`agree_at_zero` makes a shift interval agree with the test at 0: with ties the order-statistic
interval and the tie-exact p can disagree by one breakpoint next to 0, and a row must not
show an interval that excludes 0 beside a p that does not reject (or the reverse).
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np
from numpy.typing import NDArray
from scipy import stats

EXACT_MAX = 60  # values in all: the count below costs ~15 ms at 30 per side, 0.2 s at 50


def _doubled_midranks(values: NDArray[np.float64]) -> NDArray[np.int64]:
    doubled: NDArray[np.int64] = np.rint(2.0 * stats.rankdata(values)).astype(np.int64)
    return doubled


def _tails(counts: NDArray[np.float64], s: int) -> tuple[float, float]:
    total = float(counts.sum())
    lower = float(counts[: s + 1].sum()) / total
    upper = float(counts[s:].sum()) / total
    return lower, upper


def _p(lower: float, upper: float, alternative: str) -> float:
    if alternative == "two-sided":
        return min(1.0, 2.0 * min(lower, upper))
    return min(1.0, upper if alternative == "greater" else lower)


def mwu_tied_p(x: NDArray[np.float64], y: NDArray[np.float64], alternative: str) -> float:
    """Mann–Whitney p of "y shifted against x" ("greater": y larger), exact with ties."""
    m, n = x.size, y.size
    ranks = _doubled_midranks(np.concatenate([x, y]))
    s = int(ranks[m:].sum())
    if m + n > EXACT_MAX:
        raise ValueError(f"exact with ties up to {EXACT_MAX} values; scipy's approximation beyond")
    if n > m:  # count subsets of the smaller side: S_y = total - S_x, tails swap
        flipped = {"greater": "less", "less": "greater"}.get(alternative, alternative)
        return mwu_tied_p(y, x, flipped)
    counts_n = _subset_sums(tuple(int(r) for r in np.sort(ranks)), n)
    lower, upper = _tails(counts_n, s)
    return _p(lower, upper, alternative)


@lru_cache(maxsize=256)
def _subset_sums(ranks: tuple[int, ...], n: int) -> NDArray[np.float64]:
    """How many n-subsets of the (doubled, sorted) ranks have each sum; cached because a
    comparison asks for the same tie structure again (the interval at the adjusted level)."""
    top = sum(ranks[-n:])
    # counts[k, t]: subsets of k pooled values whose doubled ranks sum to t (floats: exact
    # integers up to 2^53, relative error 1e-16 beyond, far below any p that matters)
    counts = np.zeros((n + 1, top + 1))
    counts[0, 0] = 1.0
    for r in ranks:
        counts[1:, r:] += counts[:-1, : top + 1 - r].copy()
    result: NDArray[np.float64] = counts[n]
    return result


def signed_rank_tied_p(d: NDArray[np.float64], alternative: str) -> float:
    """Wilcoxon signed-rank p of d ("greater": d > 0), zeros dropped, exact with ties."""
    nz = d[d != 0]
    n = nz.size
    if n == 0:
        return 1.0
    ranks = _doubled_midranks(np.abs(nz))
    t = int(ranks[nz > 0].sum())
    if n > EXACT_MAX:
        raise ValueError(f"exact with ties up to {EXACT_MAX} pairs; scipy's approximation beyond")
    top = int(ranks.sum())
    pmf = np.zeros(top + 1)
    pmf[0] = 1.0
    for r in ranks:
        pmf[r:] += pmf[: top + 1 - r].copy()
    lower, upper = _tails(pmf, t)
    return _p(lower, upper, alternative)


def agree_at_zero(
    lo: float | None,
    hi: float | None,
    estimate: float,
    breakpoints: NDArray[np.float64],
    rejects_at_zero: bool,
) -> tuple[float | None, float | None]:
    """The interval [lo, hi] (None: unbounded) adjusted so that it excludes 0 exactly when the
    test at 0 rejects.  Only the end next to 0 moves, to the nearest breakpoint (a pairwise
    difference or Walsh average) on the estimate's side, or out to 0 itself."""
    contains = (lo is None or lo <= 0.0) and (hi is None or hi >= 0.0)
    if not rejects_at_zero:
        if contains:
            return lo, hi
        assert lo is not None and hi is not None
        return min(lo, 0.0), max(hi, 0.0)
    if not contains:
        return lo, hi
    above = breakpoints[breakpoints > 0]
    below = breakpoints[breakpoints < 0]
    upward = estimate > 0 or (estimate == 0 and above.size >= below.size)
    if upward and above.size:
        return float(above.min()), hi if hi is not None else float(breakpoints.max())
    if below.size:
        return lo if lo is not None else float(breakpoints.min()), float(below.max())
    return lo, hi  # every breakpoint is 0: the test cannot reject then (p = 1)
