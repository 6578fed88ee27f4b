"""Change points in one series of per-run values: search with ruptures, confirm by permutation.

Why two steps.  A segmentation search (ruptures' PELT, exact for a penalised cost) always
finds *somewhere* to cut; the p-value of a t-test at the chosen cut is computed after the
cut was picked to maximise the difference, so it overstates significance (the weakness of
Otava's and E-Divisive's per-cut tests).  Here each candidate is confirmed by a permutation
test whose statistic is the search itself: within the stretch between the neighbouring
change points, the maximum over every admissible cut of the standardised rank-sum
(Mann–Whitney) statistic.  Permuting the stretch and taking the same maximum gives a null
distribution that includes the search, so p is honest about the selection.  Ranks make one
wild run unable to carry a change on its own, and `min_segment` forbids segments shorter than
that many points, so a single outlier is never a segment.

The search runs on log values scaled by a robust noise estimate (MAD of successive
differences, which a step barely moves), so the penalty means the same at every CV.  When
points carry their own replicate spread (lab runs: several samples per run), the noise scale
is at least the median standard error of one point — a short series cannot look quieter than
its runs are.

A candidate that fails its confirmation is dropped and the neighbours are tested again over
the merged stretch (bottom-up, weakest first), so the surviving set is consistent.  The size
of each change is estimated by iolab.stats (Hodges–Lehmann on log values with its
distribution-free interval, Mann–Whitney) from the points between the neighbouring change
points; that interval is conditional on the location, and says so in docs/history.md.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

DEFAULT_MIN_SEGMENT = 5
DEFAULT_ALPHA = 0.02  # chosen against 0.01 in bench/history_cp.py (docs/history.md)
DEFAULT_PENALTY = 1.0  # times log(n), in units of the noise variance
DEFAULT_PERMUTATIONS = 999


@dataclass(frozen=True)
class DetectOptions:
    """Settings of the search and the confirmation (defaults chosen in bench/history_cp.py)."""

    min_segment: int = DEFAULT_MIN_SEGMENT
    alpha: float = DEFAULT_ALPHA
    penalty: float = DEFAULT_PENALTY
    permutations: int = DEFAULT_PERMUTATIONS
    seed: int = 0


@dataclass(frozen=True)
class Split:
    """A confirmed change point in index space: the first point of the new level.

    `start`/`stop` bound the stretch it was tested in (the neighbouring change points or the
    series' ends); `p_value` is the permutation p of the maximal statistic over that stretch.
    """

    index: int
    start: int
    stop: int
    statistic: float
    p_value: float


def noise_scale(y: NDArray[np.float64], se: Sequence[float] | None = None) -> float:
    """Robust standard deviation of one point: MAD of first differences / sqrt(2)."""
    if y.size >= 3:
        d = np.diff(y)
        mad = float(np.median(np.abs(d - np.median(d))))
        sigma = 1.4826 * mad / math.sqrt(2.0)
    else:
        sigma = 0.0
    if se is not None:
        known = [s for s in se if s is not None and math.isfinite(s) and s > 0]
        if known:
            sigma = max(sigma, float(np.median(known)))
    if sigma <= 0:
        sigma = float(np.std(y)) or 1.0
    return sigma


def _scan(values: NDArray[np.float64], min_segment: int) -> NDArray[np.float64]:
    """|standardised left sum| for every admissible cut; rows = permutations of one stretch.

    `values` is (m, n).  Cut k (min_segment <= k <= n-min_segment) splits [0, k) | [k, n);
    under exchangeability the left sum has mean k*mean and a variance proportional to
    k(n-k)/n (the same constant for every row, so it is left out).
    """
    n = values.shape[1]
    k = np.arange(min_segment, n - min_segment + 1, dtype=float)
    csum = np.cumsum(values, axis=1)[:, min_segment - 1 : n - min_segment]
    centre = k * float(values[0].mean())
    result: NDArray[np.float64] = np.abs(csum - centre) / np.sqrt(k * (n - k) / n)
    return result


def _ranks(x: NDArray[np.float64]) -> NDArray[np.float64]:
    from scipy.stats import rankdata

    out: NDArray[np.float64] = np.asarray(rankdata(x), dtype=float)
    return out


def confirm(
    y: NDArray[np.float64], start: int, stop: int, options: DetectOptions, rng: np.random.Generator
) -> Split | None:
    """The best cut of y[start:stop] with its search-inclusive permutation p, or None if the
    stretch is too short to hold two segments."""
    n = stop - start
    m = options.min_segment
    if n < 2 * m:
        return None
    r = _ranks(y[start:stop])
    observed = _scan(r[None, :], m)[0]
    best = int(np.argmax(observed))
    stat = float(observed[best])
    perms = np.argsort(rng.random((options.permutations, n)), axis=1)
    null = _scan(r[perms], m).max(axis=1)
    p = (1.0 + float(np.sum(null >= stat - 1e-12))) / (options.permutations + 1.0)
    return Split(index=start + m + best, start=start, stop=stop, statistic=stat, p_value=p)


def candidates(y: NDArray[np.float64], sigma: float, options: DetectOptions) -> list[int]:
    """Penalised least-squares segmentation of y/sigma: candidate cut indices.

    ruptures' KernelCPD with the linear kernel is PELT on the L2 cost (the same exact optimum
    as `Pelt(model="l2")`, checked equal) in C: 1,000 points take milliseconds, not seconds.
    """
    import ruptures

    n = y.size
    if n < 2 * options.min_segment:
        return []
    signal = (y / sigma).reshape(-1, 1)
    algo = ruptures.KernelCPD(kernel="linear", min_size=options.min_segment, jump=1)
    cuts = algo.fit(signal).predict(pen=options.penalty * math.log(n))
    return [int(c) for c in cuts if c < n]


def detect(
    values: Sequence[float],
    se: Sequence[float] | None = None,
    options: DetectOptions | None = None,
) -> list[Split]:
    """Confirmed change points of a series of positive values (per-run medians), in order.

    `se`: each point's own standard error on the log scale, when its run had replicates.
    """
    opts = options or DetectOptions()
    x = np.asarray(values, dtype=float)
    if x.size < 2 * opts.min_segment or not np.all(np.isfinite(x)) or np.any(x <= 0):
        return []
    y = np.log(x)
    sigma = noise_scale(y, se)
    cuts = candidates(y, sigma, opts)
    rng = np.random.default_rng(opts.seed)
    while cuts:
        bounds = [0, *cuts, y.size]
        tested: list[Split | None] = []
        for i in range(1, len(bounds) - 1):
            # the search's location is kept; the test asks whether the stretch between the
            # neighbours holds a step at all (its best cut may sit a point or two away)
            tested.append(confirm(y, bounds[i - 1], bounds[i + 1], opts, rng))
        weakest = max(
            range(len(cuts)),
            key=lambda i: 1.0 if tested[i] is None else tested[i].p_value,  # type: ignore[union-attr]
        )
        worst = tested[weakest]
        # Bonferroni over the change points still standing: a series with one true step pays
        # nothing, and a family of spurious cuts must each beat alpha / their number
        if worst is not None and worst.p_value <= opts.alpha / len(cuts):
            return [
                Split(c, s.start, s.stop, s.statistic, s.p_value)
                for c, s in zip(cuts, tested, strict=True)
                if s is not None
            ]
        del cuts[weakest]
    return []


__all__ = [
    "DEFAULT_ALPHA",
    "DEFAULT_MIN_SEGMENT",
    "DEFAULT_PENALTY",
    "DEFAULT_PERMUTATIONS",
    "DetectOptions",
    "Split",
    "confirm",
    "detect",
    "noise_scale",
]
