"""One side of a comparison: median with a distribution-free interval, mean, spread.

The median's interval uses order statistics: [x_(k), x_(n+1-k)] covers the population median
with probability 1 - 2 P(Binomial(n, 1/2) <= k-1), whatever the distribution.  With fewer than
6 samples no such interval reaches 95%, and the summary says so instead of inventing one.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence

import numpy as np
from numpy.typing import NDArray

from iolab.stats.types import Summary


@functools.lru_cache(maxsize=4096)  # pure in (n, level); wide tables ask it again and again
def median_ci_orders(n: int, level: float) -> tuple[int, float] | None:
    """(k, achieved level) of the narrowest order-statistic interval covering `level`, or None."""
    if n < 2:
        return None
    ks = np.arange(1, n // 2 + 1)
    coverage = 1.0 - 2.0 * _binomial_half_cdf(n)[: ks.size]
    ok = np.nonzero(coverage >= level - 1e-12)[0]
    if ok.size == 0:
        return None
    best = int(ok[-1])
    return int(ks[best]), float(coverage[best])


def _binomial_half_cdf(n: int) -> NDArray[np.float64]:
    """P(Binomial(n, 1/2) <= j) for j = 0 .. n, from exact integer counts (scipy's binom.cdf,
    to the last bit or two, without importing scipy.stats)."""
    total = 2**n
    running = 0
    out = np.empty(n + 1)
    for j in range(n + 1):
        running += math.comb(n, j)
        out[j] = running / total
    return out


def min_n_for_median_ci(level: float) -> int:
    n = 1
    while median_ci_orders(n, level) is None:
        n += 1
    return n


def sample_sd(x: NDArray[np.float64], total: np.float64 | None = None) -> float:
    """np.std(x, ddof=1) of a 1-D array (n >= 2), with its arithmetic (the pairwise sum, the
    mean, the centred squares, n - 1) and so its bits, without its dispatch: a table asks
    for hundreds of these per command.  `total`: np.add.reduce(x), when the caller has it."""
    n = x.size
    if total is None:
        total = np.add.reduce(x)
    centred = x - total / n
    return float(np.sqrt(np.add.reduce(centred * centred) / (n - 1)))


def summarize(values: Sequence[float], level: float = 0.95) -> Summary:
    """Summary of one sample; an empty sample is a caller error (ValueError)."""
    x = np.sort(np.asarray(values, dtype=float))
    n = int(x.size)
    if n == 0:
        raise ValueError("summarize() needs at least one value")
    if not np.isfinite(x).all():
        raise ValueError("summarize() got a non-finite value")
    warnings: list[str] = []
    # np.median, np.mean and np.std(ddof=1)'s arithmetic, on the sorted values, without their
    # dispatch (a wide table summarises hundreds of samples per command)
    half = n // 2
    median = float(x[half]) if n % 2 else float((x[half - 1] + x[half]) / 2.0)
    total = np.add.reduce(x)
    mean = float(total / n)
    stddev = sample_sd(x, total) if n >= 2 else None
    cv = stddev / abs(mean) if stddev is not None and mean != 0 else None
    orders = median_ci_orders(n, level)
    if orders is None:
        lo = hi = None
        achieved = level
        warnings.append(
            f"need >= {min_n_for_median_ci(level)} samples for a {level:.0%} interval "
            f"of the median (have {n})"
        )
    else:
        k, achieved = orders
        lo, hi = float(x[k - 1]), float(x[n - k])
    if n < 2:
        warnings.append("one sample: no spread can be estimated")
    if cv is not None and cv > 0.25:
        warnings.append(
            f"high variation (CV {cv:.0%}): check the lab's noise before reading changes"
        )
    if math.isclose(float(x[0]), float(x[-1])) and n >= 2:
        warnings.append("all values are equal")
    return Summary(
        n=n,
        median=median,
        median_ci_low=lo,
        median_ci_high=hi,
        ci_level=achieved,
        mean=mean,
        stddev=stddev,
        cv=cv,
        min=float(x[0]),
        max=float(x[-1]),
        warnings=tuple(warnings),
    )
