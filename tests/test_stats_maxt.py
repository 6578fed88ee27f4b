"""The joint correction of secondary metrics (stats.maxt): step-down max-T over the design's
relabellings, checked against brute force on small cases, for its family-wise error on
independent nulls, and for the promise that a metric said twice costs nothing."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from iolab.stats.comparison import compare
from iolab.stats.histogram import HistogramInput
from iolab.stats.maxt import joint_maxt, sign_flips
from iolab.stats.multiple import graphical, graphical_holm
from iolab.stats.types import MetricInput

# as the other property tests: CI=true loads Hypothesis' "ci" profile (derandomized), while
# `make test` and `make fuzz` draw fresh examples (docs/testing.md)
PROPERTY = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _t_paired(d: np.ndarray, axis: int = 0) -> np.ndarray:
    """|one-sample t| per column, by the textbook formula (NaN-free input); `axis=1` for a
    stack of tables along the first axis, each table's in one pass."""
    n = d.shape[axis]
    sd = d.std(axis=axis, ddof=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        t = np.abs(d.mean(axis=axis)) / (sd / math.sqrt(n))
    return np.where(np.isnan(t), 0.0, t)


def _t_student(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """|two-sample t| with the pooled variance, by the textbook formula."""
    pooled = ((len(a) - 1) * a.var(axis=0, ddof=1) + (len(b) - 1) * b.var(axis=0, ddof=1)) / (
        len(a) + len(b) - 2
    )
    se = np.sqrt(pooled * (1 / len(a) + 1 / len(b)))
    with np.errstate(divide="ignore", invalid="ignore"):
        t = np.abs(b.mean(axis=0) - a.mean(axis=0)) / se
    return np.where(np.isnan(t), 0.0, t)


def _brute_stepdown(observed: np.ndarray, null: list[np.ndarray]) -> list[float]:
    """Westfall & Young's algorithm 2.8 written out: for the metric ranked k-th, the share
    of relabellings whose largest |t| over the metrics ranked k-th or lower reaches its |t|;
    then the running maximum down the ranking."""
    order = sorted(range(len(observed)), key=lambda j: -observed[j])
    out = [0.0] * len(observed)
    running = 0.0
    for k, j in enumerate(order):
        rest = order[k:]
        hits = sum(max(t[i] for i in rest) >= observed[j] * (1 - 1e-9) for t in null)
        running = max(running, hits / len(null))
        out[j] = running
    return out


def test_paired_matches_brute_force_over_every_flip() -> None:
    rng = np.random.default_rng(3)
    a = rng.lognormal(3, 0.2, size=(6, 4))
    b = a * rng.lognormal(0.0, 0.1, size=(6, 4))
    b[:, 0] *= 1.5  # one metric moved
    b[:, 1] = b[:, 0] * 2.0  # and another: an exact multiple of it
    d = np.log(b) - np.log(a)
    null = [_t_paired(d * np.array(s)[:, None]) for s in itertools.product((1, -1), repeat=6)]
    want = _brute_stepdown(_t_paired(d), null)
    got = joint_maxt(a, b, paired=True)
    assert got.exact and got.relabellings == 64
    assert list(got.adjusted) == pytest.approx(want)
    # the moved pair: every block the same sign, so 2 of the 64 flips (and its twin) match
    assert got.adjusted[0] == got.adjusted[1] == pytest.approx(2 / 64)


def test_unpaired_matches_brute_force_over_every_labelling() -> None:
    rng = np.random.default_rng(4)
    a = rng.lognormal(2, 0.3, size=(5, 3))
    b = rng.lognormal(2, 0.3, size=(4, 3))
    b[:, 2] *= 3.0
    x = np.log(np.vstack([a, b]))
    null = []
    for chosen in itertools.combinations(range(9), 4):
        is_b = np.zeros(9, dtype=bool)
        is_b[list(chosen)] = True
        null.append(_t_student(x[~is_b], x[is_b]))
    want = _brute_stepdown(_t_student(x[:5], x[5:]), null)
    got = joint_maxt(a, b, paired=False)
    assert got.exact and got.relabellings == math.comb(9, 4)
    assert list(got.adjusted) == pytest.approx(want)
    assert got.adjusted[2] < 0.05 < min(got.adjusted[:2])


def test_counts_with_zeros_use_log1p_and_missing_values_are_left_out() -> None:
    a = np.array([[0.0, 10.0], [1.0, 11.0], [0.0, np.nan], [2.0, 12.0], [1.0, 9.0], [0.0, 10.0]])
    b = a + np.array([[5.0, 0.5]])
    b[2, 1] = np.nan
    got = joint_maxt(a, b, paired=True)
    d0 = np.log1p(b[:, 0]) - np.log1p(a[:, 0])  # zeros: log1p
    keep = ~np.isnan(a[:, 1])
    d1 = np.log(b[keep, 1]) - np.log(a[keep, 1])  # the block without a value left out

    def t(flip: tuple[int, ...]) -> np.ndarray:
        s = np.array(flip, dtype=float)
        return np.array([_t_paired((d0 * s)[:, None])[0], _t_paired((d1 * s[keep])[:, None])[0]])

    null = [t(f) for f in itertools.product((1, -1), repeat=6)]
    assert list(got.adjusted) == pytest.approx(_brute_stepdown(t((1,) * 6), null))
    assert all(math.isfinite(p) for p in got.adjusted)


def test_flips_are_all_of_them_up_to_16_blocks_then_a_fixed_sample() -> None:
    assert sign_flips(3).shape == (8, 3) and np.all(sign_flips(3)[0] == 1)
    assert len({tuple(r) for r in sign_flips(10)}) == 1024
    big = sign_flips(20)
    assert big.shape == (2_000, 20) and np.all(big[0] == 1)
    assert np.array_equal(big, sign_flips.__wrapped__(20))  # the same draws every time


def test_family_wise_error_on_independent_nulls() -> None:
    """400 tables of 12 independent null metrics, 8 pairs: tables with any rejection stay
    at or below 5% within the sampling error (an uncorrected table rejects in ~35%)."""
    rng = np.random.default_rng(11)
    any_joint = any_raw = 0
    reps = 400
    for _ in range(reps):
        a = rng.lognormal(5, 0.1, size=(8, 12))
        b = rng.lognormal(5, 0.1, size=(8, 12))
        adjusted = joint_maxt(a, b, paired=True).adjusted
        any_joint += min(adjusted) <= 0.05
        d = np.log(b) - np.log(a)
        null = _t_paired(sign_flips(8)[:, :, None] * d, axis=1)
        raw = np.mean(null >= _t_paired(d) * (1 - 1e-9), axis=0)  # each metric on its own
        any_raw += raw.min() <= 0.05
    se = math.sqrt(0.05 * 0.95 / reps)
    assert any_joint / reps <= 0.05 + 2.5 * se
    assert any_raw / reps > 0.25


def test_correlated_metrics_cost_nothing() -> None:
    """Ten copies of one moved metric (scaled, with a little noise) pass as one would; Holm
    over the same table does not."""
    blocks: list[str | int] = list(range(9))
    rng = np.random.default_rng(5)
    base = 100 + rng.normal(0, 1, 9)
    kpi = MetricInput("write.iops", list(base), list(base * 0.6), True, None, None, blocks, blocks)
    moved = [
        MetricInput(
            f"write.clat_ns.p{j}",
            list(1000.0 * (1 + j) * (1 + rng.normal(0, 0.01, 9))),
            list(3000.0 * (1 + j) * (1 + rng.normal(0, 0.01, 9))),
            blocks_a=blocks,
            blocks_b=blocks,
        )
        for j in range(10)
    ]
    noise = [
        MetricInput(
            f"vmstat.n{j}",
            list(rng.lognormal(3, 0.3, 9)),
            list(rng.lognormal(3, 0.3, 9)),
            blocks_a=blocks,
            blocks_b=blocks,
        )
        for j in range(40)
    ]
    joint = compare([kpi, *moved, *noise])
    holm = compare([kpi, *moved, *noise], correction="holm-marginal")
    names = {m.name for m in moved}
    assert all(m.verdict == "regression" for m in joint.secondary if m.name in names)
    assert not any(m.verdict == "regression" for m in holm.secondary)
    assert joint.procedure.startswith("Westfall–Young step-down max-T over all 512 joint")


def test_graphical_with_a_joint_node_reduces_to_graphical_holm() -> None:
    """A joint node of one member is a single secondary hypothesis; a joint node that
    rejects everything passes its weight on exactly as the last of Holm's members would."""
    kpi, sec, joint = graphical([0.01], [0.3, 0.002], 0.2, [0.004])
    want_kpi, want_sec = graphical_holm([0.01], [0.3, 0.002, 0.004], 0.2)
    assert kpi == pytest.approx(want_kpi) and sec + joint == pytest.approx(want_sec)
    # two KPIs and a joint node of three: its members step down at the node's weight
    kpi, sec, joint = graphical([0.001, 0.2], [], 0.2, [0.001, 0.001, 0.03])
    assert kpi == pytest.approx([0.0025, 0.2])
    assert joint == pytest.approx([0.005, 0.005, 0.15])


def _table(values: list[list[float]], dup: int | None, factor: float) -> list[MetricInput]:
    blocks: list[str | int] = list(range(len(values[0]) // 2))
    n = len(blocks)

    def item(name: str, v: list[float], kpi: bool = False) -> MetricInput:
        return MetricInput(name, v[:n], v[n:], kpi=kpi, blocks_a=blocks, blocks_b=blocks)

    items = [item("write.iops", values[0], True)]
    items += [item(f"jbd2.m{j}", v) for j, v in enumerate(values[1:])]
    if dup is not None:
        items.append(item("zz.copy", [factor * x for x in values[1 + dup]]))
    return items


@PROPERTY
@given(
    st.integers(6, 10).flatmap(
        lambda n: st.lists(
            st.lists(st.floats(1.0, 1e4, allow_subnormal=False), min_size=2 * n, max_size=2 * n),
            min_size=2,
            max_size=7,
        )
    ),
    st.data(),
    st.sampled_from([1.0, 2.0, 3.0, 0.1, 4096.0]),
    st.booleans(),
)
def test_duplicating_a_metric_never_changes_any_adjusted_p(
    values: list[list[float]], data: st.DataObject, factor: float, with_hist: bool
) -> None:
    """A metric said twice (the same numbers, or an exact multiple, under another name) is
    one measurement: every adjusted p of the table stays exactly as it was, histograms and
    KPI included, and the copy gets its original's."""
    dup = data.draw(st.integers(0, len(values) - 2))
    hist = (
        [HistogramInput("hist.pages", [{"1": 5, "2": 9}] * 3, [{"1": 9, "2": 4}] * 3)]
        if with_hist
        else []
    )
    before = compare(_table(values, None, factor), hist)
    after = compare(_table(values, dup, factor), hist)
    for m in before.metrics:
        twin = next(x for x in after.metrics if x.name == m.name)
        assert twin.p_adjusted == m.p_adjusted and twin.verdict == m.verdict
    for s, t in zip(before.histogram_shifts, after.histogram_shifts, strict=True):
        assert s.p_adjusted == t.p_adjusted
    copy = next(x for x in after.metrics if x.name == "zz.copy")
    original = next(x for x in after.metrics if x.name == f"jbd2.m{dup}")
    assert copy.p_adjusted == original.p_adjusted


@PROPERTY
@given(
    st.integers(5, 9).flatmap(
        lambda n: st.lists(
            st.lists(st.floats(-50.0, 50.0, allow_subnormal=False), min_size=n, max_size=n),
            min_size=1,
            max_size=6,
        )
    ),
    st.data(),
)
def test_a_repeated_column_leaves_the_joint_p_values_alone(
    columns: list[list[float]], data: st.DataObject
) -> None:
    """The procedure itself, before any folding: max-T over a set with a column repeated is
    the max-T over the set, for every relabelling."""
    d = np.array(columns).T
    a = np.full_like(d, 100.0)
    b = a * np.exp(d / 100.0)
    j = data.draw(st.integers(0, d.shape[1] - 1))
    once = joint_maxt(a, b, paired=True).adjusted
    twice = joint_maxt(np.hstack([a, a[:, [j]]]), np.hstack([b, b[:, [j]]]), paired=True).adjusted
    assert list(twice[:-1]) == list(once) and twice[-1] == once[j]
