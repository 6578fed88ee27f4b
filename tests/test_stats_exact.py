"""Exact rank-test p-values with ties (issue 13): the p iolab reports at small n is the exact
permutation p of the tied-rank statistic — checked against brute-force enumeration of every
assignment (n <= 10) and against scipy.stats.permutation_test — and every compare row's
interval agrees with its verdict after the multiplicity correction (property test)."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from iolab.stats import MetricInput, compare
from iolab.stats.shift import mwu_p, signed_rank_p


def brute_mwu(x: list[float], y: list[float]) -> float:
    pooled = np.array([*x, *y])
    ranks = stats.rankdata(pooled)
    observed = ranks[len(x) :].sum()
    sums = [ranks[list(idx)].sum() for idx in itertools.combinations(range(pooled.size), len(y))]
    arr = np.array(sums)
    lower = np.mean(arr <= observed + 1e-9)
    upper = np.mean(arr >= observed - 1e-9)
    return float(min(1.0, 2 * min(lower, upper)))


def brute_signed_rank(d: list[float]) -> float:
    nz = np.array([v for v in d if v != 0])
    if nz.size == 0:
        return 1.0
    ranks = stats.rankdata(np.abs(nz))
    observed = ranks[nz > 0].sum()
    sums = np.array(
        [
            sum(r for r, s in zip(ranks, signs, strict=True) if s)
            for signs in itertools.product([False, True], repeat=nz.size)
        ]
    )
    lower = np.mean(sums <= observed + 1e-9)
    upper = np.mean(sums >= observed - 1e-9)
    return float(min(1.0, 2 * min(lower, upper)))


# values on a coarse grid, so that ties within and across the sides are common
tied = st.lists(st.integers(0, 6).map(float), min_size=1, max_size=8)


@settings(max_examples=150, deadline=None)
@given(tied, tied)
def test_mann_whitney_with_ties_is_the_exact_permutation_p(x: list[float], y: list[float]) -> None:
    assert mwu_p(np.array(x), np.array(y)) == pytest.approx(brute_mwu(x, y), abs=1e-12)


@settings(max_examples=150, deadline=None)
@given(st.lists(st.integers(-4, 4).map(float), min_size=1, max_size=10))
def test_signed_rank_with_ties_is_the_exact_permutation_p(d: list[float]) -> None:
    assert signed_rank_p(np.array(d)) == pytest.approx(brute_signed_rank(d), abs=1e-12)


def test_ten_per_side_with_ties() -> None:
    x = [3.0, 1, 4, 1, 5, 9, 2, 6, 5, 3]
    y = [5.0, 8, 9, 7, 9, 3, 2, 3, 8, 4]
    assert mwu_p(np.array(x), np.array(y)) == pytest.approx(brute_mwu(x, y), abs=1e-12)
    d = [v - w for v, w in zip(x, y, strict=True)]
    assert signed_rank_p(np.array(d)) == pytest.approx(brute_signed_rank(d), abs=1e-12)


def test_agrees_with_scipy_permutation_test() -> None:
    """scipy's mannwhitneyu(method="exact") ignores ties; its permutation_test is exact."""
    a = np.array([10.0, 12, 12, 13, 15, 15, 16, 18])
    b = np.array([12.0, 14, 15, 15, 17, 18, 18, 19])

    def rank_sum(x: np.ndarray, y: np.ndarray, axis: int) -> np.ndarray:
        ranks = stats.rankdata(np.concatenate([x, y], axis=axis), axis=axis)
        return np.asarray(ranks[..., x.shape[axis] :].sum(axis=axis))

    ref = stats.permutation_test(
        (a, b),
        rank_sum,
        permutation_type="independent",
        n_resamples=math.inf,
        alternative="two-sided",
    ).pvalue
    assert mwu_p(a, b) == pytest.approx(ref, rel=1e-9)
    approx = stats.mannwhitneyu(b, a, method="asymptotic").pvalue
    assert abs(mwu_p(a, b) - approx) > 1e-4  # the old answer was the approximation


def _row_agrees(lo: float | None, hi: float | None, p_adj: float, alpha: float) -> bool:
    excludes = lo is not None and hi is not None and (lo > 0 or hi < 0)
    return excludes == (p_adj <= alpha)


samples = st.lists(st.integers(90, 110).map(float), min_size=3, max_size=12)


@settings(max_examples=120, deadline=None)
@given(
    st.lists(st.tuples(samples, samples, st.booleans()), min_size=1, max_size=4),
    st.sampled_from(["holm", "bh"]),
    st.integers(0, 1),
)
def test_every_row_interval_agrees_with_its_verdict(
    columns: list[tuple[list[float], list[float], bool]], correction: str, paired: int
) -> None:
    inputs = []
    for k, (a, b, kpi) in enumerate(columns):
        if paired:
            n = min(len(a), len(b))
            a, b = a[:n], b[:n]
        blocks = list(range(len(a))) if paired else None
        blocks_b = list(range(len(b))) if paired else None
        inputs.append(MetricInput(f"m{k}", a, b, kpi=kpi, blocks_a=blocks, blocks_b=blocks_b))
    table = compare(inputs, correction=correction)  # type: ignore[arg-type]
    for row in table.metrics:
        assert row.p_adjusted is not None
        assert _row_agrees(row.ci_low_pct, row.ci_high_pct, row.p_adjusted, table.alpha), row
        if row.verdict in ("regression", "improvement", "changed"):
            assert row.ci_low_pct is not None and row.ci_high_pct is not None
        if row.verdict == "inconclusive" and row.ci_low_pct is not None:
            assert row.ci_low_pct <= 0 <= (row.ci_high_pct or 0) or row.p_adjusted > table.alpha


def test_proportional_kpis_are_one_hypothesis() -> None:
    """iops and bw_bytes at a fixed block size: one test, not two halves of alpha."""
    rng = np.random.default_rng(3)
    iops_a = list(rng.normal(1000, 10, 8))
    iops_b = list(rng.normal(1020, 10, 8))
    bw = [
        MetricInput(
            "write.bw_bytes", [v * 4096 for v in iops_a], [v * 4096 for v in iops_b], kpi=True
        )
    ]
    io = [MetricInput("write.iops", iops_a, iops_b, kpi=True)]
    both = compare(bw + io)
    alone = compare(bw)
    assert both.metrics[0].p_adjusted == pytest.approx(alone.metrics[0].p_adjusted)
    assert both.metrics[0].same_as == "write.iops" and both.metrics[1].same_as == "write.bw_bytes"
    assert both.metrics[0].verdict == both.metrics[1].verdict
    other = MetricInput("read.iops", iops_a, list(rng.normal(1000, 10, 8)), kpi=True)
    two = compare([*bw, other])  # not proportional: two hypotheses share the KPIs' alpha
    assert two.metrics[0].same_as is None
