"""Westfall–Young step-down max-T over the design's own randomization, for the secondary
metrics of one comparison.

Why: the secondary metrics of a storage comparison are far from independent (p50 … p99.99
of one histogram, one counter read by two monitors, jbd2's transactions and the
transactions it was asked for).  Holm pays for each as if it were a new question; with 9
blocks and ~90 metrics no metric can pass it, however clearly it moved.  Permuting the
*design* instead of each metric keeps the correlation between metrics under the null: in a
randomized complete block the order of A and B inside a block is a coin flip, so under "B
changes none of these metrics" flipping the labels of a block flips the sign of every
metric's within-block difference at once.  The largest studentized statistic over the
metrics, recomputed under every joint flip, is the yardstick each metric is compared
with; two identical metrics then cost nothing, and the family-wise error rate is exact
(Westfall & Young 1993, algorithm 2.8, "step-down max-T").

- Paired (block ids): d = within-block difference of transformed values; the statistic is
  the one-sample t of d, |mean| / (sd / sqrt(n)); all 2^n joint sign flips when n <= 16
  (exact), else the identity and 1,999 drawn with a fixed generator (the same data give
  the same p-values).
- Unpaired: Student's two-sample t of the transformed values (pooled variance: with equal
  sides the same as Welch's); joint permutations of the sample labels
  (all of them when there are at most 2,000, else the identity and 1,999 drawn).
- Transform per metric, decided on the pooled values of both sides (so it is the same
  under every relabelling): log when every value is > 0 (changes are multiplicative);
  log1p when some are 0 (counters that can be 0: log1p keeps 0 finite and is log-like for
  counts far from 0); values below 0 on the raw scale.  The test is exact whatever the
  transform: it only decides which changes it is most sensitive to.
- A value missing from a block or sample is left out of that metric's statistic only.

Why not min-P (the smallest per-metric p as the statistic): at 9 blocks a signed-rank p can
take only a few values, and every metric that moved the same way in all 9 blocks sits at the
smallest, 2/512; the joint distribution of the minimum then counts the distinct sign
patterns of the metrics (2 flips of 2^n each), which on the demo's data (8 blocks, 18
patterns) puts the adjusted p of every metric at 0.14 or above (docs/statistics.md).  The
studentized t keeps the size of the move, so a 5-fold change in every block stands out from
noise that happens to share a sign pattern.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
from numpy.typing import NDArray

EXACT_MAX_BLOCKS = 16  # 2^16 = 65,536 joint sign flips: exact up to here
# drawn relabellings beyond that (plus the observed one).  The test stays exact at any
# number of draws (the observed labelling is one of them); more draws only sharpen p: at
# 2,000 an adjusted p near 0.05 is known to ±0.005, and 100 metrics x 50 samples per side
# are corrected in ~15 ms of CPU (docs/compare.md)
DRAWS = 1_999
EXACT_MAX_PERMUTATIONS = 2_000
_SEED = 20_261_126  # fixed: the same data always give the same adjusted p-values
_CHUNK = 8_192  # relabellings per pass (memory: chunk x metrics floats)
_TIE = 1e-9  # relative: a relabelling's |t| this close to the observed one counts as equal


@dataclass(frozen=True)
class JointResult:
    """Step-down max-T p-values of one family, and how they were computed.

    `stepdown[k]` is the p-value of the metric ranked k-th by |t| (largest first), before
    the monotone running maximum is taken; `order[k]` its index.  `adjusted` is the
    procedure's adjusted p of every metric, in input order (monotone in the ranking)."""

    order: tuple[int, ...]
    stepdown: tuple[float, ...]
    adjusted: tuple[float, ...]
    relabellings: int  # how many joint relabellings the null distribution holds
    exact: bool  # all of them (True), or a drawn sample
    design: str  # "paired" | "unpaired"

    @property
    def procedure(self) -> str:
        how = "all" if self.exact else "a sample of"
        what = (
            "joint sign flips of the blocks"
            if self.design == "paired"
            else "joint permutations of the sample labels"
        )
        return f"Westfall–Young step-down max-T over {how} {self.relabellings:,} {what}"


def transform(columns: NDArray[np.float64]) -> NDArray[np.float64]:
    """Each column on the scale its test uses (module docstring); NaN stays NaN."""
    out = np.array(columns, dtype=float)
    lo = np.min(np.where(np.isnan(out), np.inf, out), axis=0)
    positive = lo > 0
    counts = (lo == 0) & ~positive
    out[:, positive] = np.log(out[:, positive])
    out[:, counts] = np.log1p(out[:, counts])
    return out


@lru_cache(maxsize=32)
def sign_flips(n: int) -> NDArray[np.float64]:
    """(F, n) joint sign flips, the observed one (all +1) first: every one of the 2^n when
    n <= EXACT_MAX_BLOCKS, else DRAWS drawn with a fixed generator.  Cached per n."""
    if n <= EXACT_MAX_BLOCKS:
        codes = np.arange(2**n, dtype=np.int64)
        bits = (codes[:, None] >> np.arange(n, dtype=np.int64)) & 1
        flips = 1.0 - 2.0 * bits.astype(float)
    else:
        rng = np.random.default_rng(_SEED + n)
        drawn = 1.0 - 2.0 * rng.integers(0, 2, size=(DRAWS, n)).astype(float)
        flips = np.vstack([np.ones((1, n)), drawn])
    flips.setflags(write=False)
    return flips


@lru_cache(maxsize=32)
def label_permutations(n_a: int, n_b: int) -> NDArray[np.float64]:
    """(P, n_a + n_b) 0/1 rows marking which samples are called B, the observed labelling
    (A's samples first, then B's) first: all of them when there are at most
    EXACT_MAX_PERMUTATIONS, else DRAWS drawn with a fixed generator.  Cached per design."""
    n = n_a + n_b
    observed = np.concatenate([np.zeros(n_a), np.ones(n_b)])
    if math.comb(n, n_b) <= EXACT_MAX_PERMUTATIONS:
        from itertools import combinations

        rows = np.zeros((math.comb(n, n_b), n))
        for r, chosen in enumerate(combinations(range(n), n_b)):
            rows[r, list(chosen)] = 1.0
        is_observed = np.all(rows == observed, axis=1)
        rows = np.vstack([observed[None, :], rows[~is_observed]])
    else:
        rng = np.random.default_rng(_SEED + 7919 * n_a + n_b)
        drawn = rng.permuted(np.tile(observed, (DRAWS, 1)), axis=1)
        rows = np.vstack([observed[None, :], drawn])
    rows.setflags(write=False)
    return rows


def _paired_t(d: NDArray[np.float64], flips: NDArray[np.float64]) -> NDArray[np.float64]:
    """|t| of every metric (columns of d, NaN = missing) under every row of flips."""
    present = ~np.isnan(d)
    d0 = np.where(present, d, 0.0)
    n = present.sum(axis=0).astype(float)
    sq = (d0 * d0).sum(axis=0)
    total = flips @ d0  # (F, m): sum of the flipped differences
    return _studentized(total / np.maximum(n, 1.0), sq, n, one_sample=True)


def _studentized(
    mean: NDArray[np.float64], sq: NDArray[np.float64], n: NDArray[np.float64], one_sample: bool
) -> NDArray[np.float64]:
    """|mean| / sqrt(var / n) with var = (sum of squares - n mean^2) / (n - 1)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        var = (sq - n * mean * mean) / (n - 1.0)
        var = np.maximum(var, 0.0)
        t = np.abs(mean) / np.sqrt(var / n)
    # a metric with fewer than 2 values, or no difference at all, never counts as moved;
    # a difference with no spread (the same in every block) is infinitely far from 0
    t = np.where(np.isnan(t), 0.0, t)
    if one_sample:
        t = np.where((n < 2) | (sq == 0), 0.0, t)
    return t


def _unpaired_t(x: NDArray[np.float64], labels: NDArray[np.float64]) -> NDArray[np.float64]:
    """|Student's two-sample t| of every metric (columns of x, NaN = missing) under every
    labelling.  The pooled variance needs only B's sum: every labelling keeps each metric's
    total sum and sum of squares, so one product per metric and labelling does (and with
    equal sides it is Welch's t)."""
    present = ~np.isnan(x)
    x0 = np.where(present, x, 0.0)
    tot_s, tot_q = x0.sum(axis=0), (x0 * x0).sum(axis=0)
    sb = labels @ x0
    if present.all():  # a relabelling keeps each side's size: counts are constants
        nb: NDArray[np.float64] | float = float(labels[0].sum())
        tot_n: NDArray[np.float64] | float = float(x.shape[0])
    else:
        nb, tot_n = labels @ present.astype(float), present.sum(axis=0).astype(float)
    na = tot_n - nb
    # the arithmetic below, operation for operation, in place: (labellings x metrics) arrays
    # of a few MB each, which fresh temporaries would fault in page by page
    with np.errstate(divide="ignore", invalid="ignore"):
        mb = sb / nb
        ma = np.subtract(tot_s, sb, out=sb)
        ma /= na
        within = na * ma
        within *= ma
        within = np.subtract(tot_q, within, out=within)
        spread_b = nb * mb
        spread_b *= mb
        within -= spread_b
        np.maximum(within, 0.0, out=within)
        within /= tot_n - 2.0
        within *= 1.0 / na + 1.0 / nb
        np.sqrt(within, out=within)
        t = np.subtract(mb, ma, out=mb)
        np.abs(t, out=t)
        t /= within
    t[np.isnan(t)] = 0.0
    return np.where((na < 2) | (nb < 2), 0.0, t)


def _stepdown(
    observed: NDArray[np.float64], null_rows: list[NDArray[np.float64]], total: int
) -> tuple[NDArray[np.int64], NDArray[np.float64]]:
    """Order (largest |t| first) and the step-down p of each rank: the share of
    relabellings whose largest |t| among the metrics ranked at or below it reaches its |t|."""
    order = np.argsort(-observed, kind="stable")
    target = observed[order] * (1.0 - _TIE)
    counts = np.zeros(order.size)
    for t in null_rows:
        below = np.maximum.accumulate(t[:, order][:, ::-1], axis=1)[:, ::-1]
        counts += (below >= target).sum(axis=0)
    return order, counts / total


def joint_maxt(a: NDArray[np.float64], b: NDArray[np.float64], paired: bool) -> JointResult:
    """Step-down max-T of every column (metric) of a against b.

    Paired: a and b are (blocks, metrics), row i of both from block i.  Unpaired: a is
    (n_a, metrics), b (n_b, metrics).  NaN marks a missing value.  Pass values as measured:
    the transform is chosen here, per metric, on the pooled values."""
    a = np.asarray(a, dtype=float)
    b = np.asarray(b, dtype=float)
    m = a.shape[1]
    if m == 0:
        return JointResult((), (), (), 0, True, "paired" if paired else "unpaired")
    pooled = transform(np.vstack([a, b]))
    ta, tb = pooled[: a.shape[0]], pooled[a.shape[0] :]
    if paired:
        d = tb - ta
        rows = sign_flips(d.shape[0])
        exact = d.shape[0] <= EXACT_MAX_BLOCKS

        def stat(chunk: NDArray[np.float64]) -> NDArray[np.float64]:
            return _paired_t(d, chunk)
    else:
        x = pooled
        rows = label_permutations(a.shape[0], b.shape[0])
        exact = math.comb(a.shape[0] + b.shape[0], b.shape[0]) <= EXACT_MAX_PERMUTATIONS

        def stat(chunk: NDArray[np.float64]) -> NDArray[np.float64]:
            return _unpaired_t(x, chunk)

    observed = stat(rows[:1])[0]
    null = [stat(rows[i : i + _CHUNK]) for i in range(0, rows.shape[0], _CHUNK)]
    order, step = _stepdown(observed, null, rows.shape[0])
    adjusted = np.empty(m)
    adjusted[order] = np.maximum.accumulate(step)
    return JointResult(
        order=tuple(int(i) for i in order),
        stepdown=tuple(float(v) for v in step),
        adjusted=tuple(float(v) for v in np.minimum(adjusted, 1.0)),
        relabellings=int(rows.shape[0]),
        exact=exact,
        design="paired" if paired else "unpaired",
    )


__all__: Sequence[str] = [
    "JointResult",
    "joint_maxt",
    "label_permutations",
    "sign_flips",
    "transform",
]
