"""Known-answer tests of iolab.stats: exact nulls, summaries, shifts, verdicts, multiplicity."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from scipy import stats

from iolab.model.metrics import Direction
from iolab.stats import (
    MetricInput,
    benjamini_hochberg,
    compare,
    compare_metric,
    graphical_holm,
    holm,
    summarize,
)
from iolab.stats._nulls import (
    _mwu_pmf,
    _signed_rank_pmf,
    min_p_paired,
    min_p_unpaired,
    mwu_lower_count,
    signed_rank_lower_count,
)
from iolab.stats.shift import mwu_p, paired_shift, signed_rank_p, unpaired_shift


def test_signed_rank_null_matches_enumeration() -> None:
    n = 7
    counts = np.zeros(n * (n + 1) // 2 + 1)
    for signs in itertools.product((0, 1), repeat=n):
        counts[sum(r for r, s in zip(range(1, n + 1), signs, strict=True) if s)] += 1
    assert np.allclose(_signed_rank_pmf(n), counts / 2**n)


def test_mwu_null_matches_enumeration() -> None:
    m, n = 3, 5
    counts = np.zeros(m * n + 1)
    for xs in itertools.combinations(range(m + n), m):
        ys = [v for v in range(m + n) if v not in xs]
        counts[sum(1 for x in xs for y in ys if x < y)] += 1
    assert np.allclose(_mwu_pmf(m, n), counts / math.comb(m + n, m))


def _mwu_counts(m: int, n: int) -> list[int]:
    """Exact counts of U by the textbook recurrence, in Python integers: N(m, n, u) =
    N(m - 1, n, u - n) + N(m, n - 1, u) (the largest value is in A, or in B)."""
    rows = [[1] + [0] * (m * n) for _ in range(n + 1)]  # m = 0: U = 0 once, any n
    for _ in range(m):
        new = [[1] + [0] * (m * n)]  # n = 0
        for j in range(1, n + 1):
            new.append(
                [(rows[j][u - j] if u >= j else 0) + new[j - 1][u] for u in range(m * n + 1)]
            )
        rows = new
    return rows[n][: m * n + 1]


@pytest.mark.parametrize("m, n", [(1, 1), (2, 7), (9, 4), (12, 12), (25, 30), (50, 50)])
def test_mwu_null_is_each_exact_count_over_the_total_to_the_bit(m: int, n: int) -> None:
    """The counts reach 2^96 at 50 per side; the modular computation must give the very
    integers, so every probability is the correctly rounded count / C(m + n, m)."""
    total = math.comb(m + n, m)
    wanted = [c / total for c in _mwu_counts(m, n)]
    assert _mwu_pmf(m, n).tolist() == wanted


def test_critical_values_match_published_tables() -> None:
    # Two-sided 5% critical values: Wilcoxon n=10 -> T=8, Mann–Whitney 10/10 -> U=23.
    assert signed_rank_lower_count(10, 0.05) == 9
    assert mwu_lower_count(10, 10, 0.05) == 24
    assert mwu_lower_count(3, 3, 0.05) == 0
    assert min_p_unpaired(3, 3) == pytest.approx(0.1)
    assert min_p_paired(5) == pytest.approx(0.0625)


@pytest.mark.parametrize("alternative", ["two-sided", "greater", "less"])
def test_p_values_agree_with_scipy(alternative: str) -> None:
    rng = np.random.default_rng(5)
    for n in (6, 12, 30):
        d = rng.normal(0.2, 1.0, n)
        a, b = rng.normal(0, 1, n), rng.normal(0.4, 1, n + 3)
        want_sr = stats.wilcoxon(d, alternative=alternative, method="exact").pvalue
        want_mw = stats.mannwhitneyu(b, a, alternative=alternative, method="exact").pvalue
        assert signed_rank_p(d, alternative) == pytest.approx(want_sr, rel=1e-9)
        assert mwu_p(a, b, alternative) == pytest.approx(want_mw, rel=1e-9)


def test_p_values_with_ties_fall_back_to_scipy_above_the_exact_size() -> None:
    """Small samples with ties are exact (tests/test_stats_exact.py); above 60 values in all
    the normal approximation with tie correction is scipy's."""
    a = np.repeat(np.array([1.0, 2, 2, 3, 4, 5, 5, 6]), 8)
    b = a + 1.0
    want = stats.mannwhitneyu(b, a, alternative="two-sided", method="asymptotic").pvalue
    assert mwu_p(a, b) == pytest.approx(want)


def test_median_interval_uses_order_statistics() -> None:
    s = summarize([5.0, 1.0, 3.0, 2.0, 6.0, 4.0])
    assert (s.median, s.median_ci_low, s.median_ci_high) == (3.5, 1.0, 6.0)
    assert s.ci_level == pytest.approx(1 - 2 / 64)
    assert s.stddev == pytest.approx(np.std([1, 2, 3, 4, 5, 6], ddof=1))
    small = summarize([1.0, 2.0, 3.0, 4.0, 5.0])
    assert small.median_ci_low is None
    assert any("need >= 6 samples" in w for w in small.warnings)


def test_hodges_lehmann_known_values() -> None:
    est = unpaired_shift(np.array([1.0, 2.0, 3.0]), np.array([4.0, 5.0, 7.0]), 0.05)
    # differences b - a: 3,2,1,4,3,2,6,5,4 -> median 3
    assert est.estimate == 3.0
    assert est.ci_low is None  # 3 vs 3 cannot give a 95% interval
    w = paired_shift(np.array([1.0, 2.0, 4.0]), 0.05)
    # Walsh averages: 1, 1.5, 2.5, 2, 3, 4 -> median 2.25
    assert w.estimate == pytest.approx(2.25)


def test_hodges_lehmann_interval_covers() -> None:
    rng = np.random.default_rng(11)
    covered = 0
    reps = 300
    for _ in range(reps):
        d = 0.03 + rng.standard_t(4, 15) * 0.05
        est = paired_shift(d, 0.05)
        assert est.ci_low is not None and est.ci_high is not None
        covered += est.ci_low <= 0.03 <= est.ci_high
    assert covered / reps >= 0.95 - 3 * math.sqrt(0.05 * 0.95 / reps)


def blocks(n: int) -> list[int]:
    return list(range(n))


def test_paired_regression_verdict_and_interval() -> None:
    rng = np.random.default_rng(2)
    drift = np.cumsum(rng.normal(0, 0.1, 20))
    a = 36000 * np.exp(drift + rng.normal(0, 0.01, 20))
    b = 36000 * 0.95 * np.exp(drift + rng.normal(0, 0.01, 20))
    m = compare_metric(
        MetricInput(
            "write.iops", list(a), list(b), kpi=True, blocks_a=blocks(20), blocks_b=blocks(20)
        )
    )
    assert m.paired and m.n_pairs == 20 and m.n_a == 20
    assert m.verdict == "regression"
    assert m.ci_low_pct is not None and m.ci_high_pct is not None
    assert m.ci_low_pct < -5 + 1.5 and m.ci_high_pct > -5 - 1.5
    assert m.ci_low_pct <= m.change_pct <= m.ci_high_pct  # type: ignore[operator]
    # unpaired, the drift counts as noise: a wider interval and a weaker p-value
    u = compare_metric(MetricInput("write.iops", list(a), list(b), kpi=True))
    assert not u.paired and u.n_pairs is None
    assert u.ci_low_pct is not None and u.ci_high_pct is not None
    assert u.ci_high_pct - u.ci_low_pct > 3 * (m.ci_high_pct - m.ci_low_pct)
    assert u.p_value is not None and m.p_value is not None and u.p_value > m.p_value


def test_direction_lower_is_better() -> None:
    a = [100.0, 101, 99, 100.5, 99.5, 100.2, 99.8, 100.1]
    b = [v * 1.2 for v in a]
    m = compare_metric(MetricInput("write.clat_ns.p99", a, b, kpi=True))
    assert m.direction is Direction.LOWER
    assert m.verdict == "regression"
    assert m.change_pct == pytest.approx(20.0, abs=0.5)
    n = compare_metric(MetricInput("jbd2.handles_per_txn", a, b))
    assert n.verdict == "changed"


def test_equivalence_within_margin() -> None:
    rng = np.random.default_rng(4)
    a = 1000 * np.exp(rng.normal(0, 0.005, 40))
    b = a * np.exp(rng.normal(0.001, 0.002, 40))
    m = compare_metric(
        MetricInput(
            "write.iops", list(a), list(b), kpi=True, blocks_a=blocks(40), blocks_b=blocks(40)
        ),
        margin_pct=1.0,
    )
    assert m.verdict == "no change"
    assert m.tost_p_value is not None and m.tost_p_value <= 0.05
    assert -1 < m.ci_low_pct < m.ci_high_pct < 1  # type: ignore[operator]


def test_too_few_samples_warns() -> None:
    m = compare_metric(MetricInput("write.iops", [1.0, 2, 3], [4.0, 5, 6], kpi=True))
    assert m.verdict == "inconclusive"
    assert any("can never reach p <= 0.05" in w and "need >= 4 per side" in w for w in m.warnings)
    assert any("to bound the change" in w for w in m.warnings)
    p = compare_metric(
        MetricInput("write.iops", [1.0, 2, 3], [4.0, 5, 6], blocks_a=[1, 2, 3], blocks_b=[1, 2, 3])
    )
    assert any("need >= 6 pairs" in w for w in p.warnings)


def test_pairing_drops_unmatched_blocks() -> None:
    m = compare_metric(
        MetricInput(
            "write.iops",
            [1.0, 2, 3, 4],
            [1.0, 2, 3],
            blocks_a=["a", "b", "c", "d"],
            blocks_b=["a", "b", "c"],
        )
    )
    assert m.n_pairs == 3
    assert any("without a partner" in w for w in m.warnings)


def test_zero_values_use_raw_scale() -> None:
    m = compare_metric(MetricInput("write.short_ios", [0.0, 0, 1, 0, 0, 0], [0.0, 0, 0, 0, 1, 0]))
    assert any("raw scale" in w for w in m.warnings)
    assert m.verdict in ("inconclusive", "no change")


def test_holm_and_bh_known_values() -> None:
    p = [0.01, 0.04, 0.03, 0.005]
    assert holm(p) == pytest.approx([0.03, 0.06, 0.06, 0.02])
    assert benjamini_hochberg(p) == pytest.approx(list(stats.false_discovery_control(p)))
    # one family only: the graphical procedure is Holm
    assert graphical_holm([], p, 0.2)[1] == pytest.approx(holm(p))
    assert graphical_holm(p, [], 0.2)[0] == pytest.approx(holm(p))
    kpi, sec = graphical_holm([0.03], [0.001, 0.2, 0.5], 0.2)
    assert kpi == pytest.approx([0.0375])
    assert sec == pytest.approx([0.015, 0.4, 0.5])


def test_table_adjusts_secondary_metrics() -> None:
    rng = np.random.default_rng(9)
    items = [
        MetricInput(
            "write.iops", list(rng.normal(100, 1, 12)), list(rng.normal(100, 1, 12)), kpi=True
        )
    ]
    for j in range(10):
        items.append(
            MetricInput(f"vmstat.m{j}", list(rng.normal(50, 1, 12)), list(rng.normal(50, 1, 12)))
        )
    table = compare(items)
    assert len(table.kpis) == 1 and len(table.secondary) == 10
    for m in table.secondary:
        assert m.p_adjusted is not None and m.p_value is not None
        assert m.p_adjusted >= m.p_value
    assert table.correction == "holm"


def test_runs_needed_never_promises_fewer_runs_than_the_rank_test_needs() -> None:
    from iolab.stats.verdict import min_reachable_n, runs_needed

    # exact two-sided minima: signed-rank 2/2^n (n=6: 0.031), Mann-Whitney 2/C(2n,n) (n=4: 0.029)
    assert min_reachable_n(0.05, paired=True) == 6
    assert min_reachable_n(0.05, paired=False) == 4
    # a huge shift with 3 pairs still needs 3 more pairs before p can reach 0.05
    extra = runs_needed(
        n_now=3, log_sd=0.01, log_shift=0.5, margin_log=0.01, alpha=0.05, paired=True
    )
    assert extra == 3


def test_the_change_lies_within_its_own_interval_with_many_ties() -> None:
    """Counters that mostly tie (20 on both sides, B a few 21s more): the rank test rejects
    at 0 while the median pairwise difference is 0; the change shown is the interval's
    nearest end, never a figure outside its own interval."""
    from iolab.stats.comparison import compare_metric
    from iolab.stats.types import MetricInput

    a = [20.0] * 45 + [19.0] * 5
    b = [20.0] * 30 + [21.0] * 20
    for ids in (None, list(range(50))):  # unpaired, then paired by block
        mc = compare_metric(
            MetricInput("vmstat.pswpout_pages", a, b, blocks_a=ids, blocks_b=ids),
            alpha=0.05,
            margin_pct=1.0,
        )
        assert mc.p_value is not None and mc.p_value <= 0.05
        assert mc.change_pct is not None and mc.ci_low_pct is not None
        assert mc.ci_high_pct is not None
        assert mc.ci_low_pct <= mc.change_pct <= mc.ci_high_pct, mc
        assert mc.change_pct > 0
