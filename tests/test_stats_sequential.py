"""Sequential A/B decisions, including a fast seeded A/A simulation of the false-alarm rate."""

from __future__ import annotations

import math

import numpy as np
import pytest

from iolab.stats import MetricInput, SequentialDecision, compare_metric
from iolab.stats.sequential import (
    MAX_STAKE,
    SIGN_BETS_UP_TO,
    STAKE_RATIO,
    _Bettors,
    sign_bets_for,
    stake_grid,
)

ALPHA = 0.05


def drifting_series(rng: np.random.Generator, n: int) -> np.ndarray:
    """Noise like the lab's: AR(1) slow part (lag-1 ~0.5), white part, CV ~9%."""
    slow = np.zeros(n)
    for t in range(1, n):
        slow[t] = 0.9 * slow[t - 1] + rng.normal(0, math.sqrt(1 - 0.81))
    return 36000 * np.exp(0.065 * slow + 0.06 * rng.normal(0, 1, n))


def randomized_blocks(
    rng: np.random.Generator, n: int, shift: float
) -> tuple[np.ndarray, np.ndarray]:
    x = drifting_series(rng, 2 * n)
    first, second = x[0::2], x[1::2]
    coin = rng.random(n) < 0.5
    return np.where(coin, first, second), np.where(coin, second, first) * (1 - shift)


def tolerance(reps: int) -> float:
    return ALPHA + 3 * math.sqrt(ALPHA * (1 - ALPHA) / reps)


def test_fixed_n_paired_compare_holds_alpha_in_aa() -> None:
    rng = np.random.default_rng(20240601)
    reps, n = 400, 10
    alarms = 0
    for _ in range(reps):
        a, b = randomized_blocks(rng, n, 0.0)
        m = compare_metric(
            MetricInput(
                "write.iops",
                list(a),
                list(b),
                kpi=True,
                blocks_a=list(range(n)),
                blocks_b=list(range(n)),
            )
        )
        alarms += m.verdict in ("regression", "improvement")
    assert alarms / reps <= tolerance(reps)


def test_sequential_holds_alpha_despite_looking_after_every_block() -> None:
    rng = np.random.default_rng(7)
    reps, budget = 250, 60
    alarms = 0
    for _ in range(reps):
        a, b = randomized_blocks(rng, budget, 0.0)
        seq = SequentialDecision("write.iops", max_blocks=budget, track_interval=False)
        state = seq.update(zip(a.tolist(), b.tolist(), strict=True))
        assert state.done
        alarms += state.verdict in ("regression", "improvement")
    assert alarms / reps <= tolerance(reps)


def test_sequential_finds_a_clear_regression_early() -> None:
    rng = np.random.default_rng(3)
    a, b = randomized_blocks(rng, 200, 0.10)
    seq = SequentialDecision("write.iops", max_blocks=200)
    state = None
    for pair in zip(a.tolist(), b.tolist(), strict=True):
        state = seq.update([pair])
        assert state.ci_low_pct is None or state.ci_low_pct <= state.ci_high_pct  # type: ignore[operator]
        if state.done:
            break
    assert state is not None and state.verdict == "regression" and state.n_blocks < 60
    assert state.e_value >= 1 / ALPHA
    assert state.ci_high_pct is not None and state.ci_high_pct < 0
    # the verdict is final: more blocks change nothing
    assert seq.update([(1.0, 2.0)]).n_blocks == state.n_blocks


def test_sequential_shows_no_change_within_margin() -> None:
    rng = np.random.default_rng(4)
    seq = SequentialDecision("write.iops", margin_pct=5.0, max_blocks=300)
    state = None
    for _ in range(300):
        v = float(np.exp(rng.normal(0, 0.05)))
        state = seq.update([(v, v * float(np.exp(rng.normal(0, 0.01))))])
        if state.done:
            break
    assert state is not None and state.verdict == "no change"
    assert state.e_value_equivalence >= 1 / ALPHA


def test_budget_ends_inconclusive_with_runs_needed() -> None:
    rng = np.random.default_rng(5)
    a, b = randomized_blocks(rng, 12, 0.01)
    state = SequentialDecision("write.iops", max_blocks=12).update(
        zip(a.tolist(), b.tolist(), strict=True)
    )
    assert state.done and state.verdict == "inconclusive"
    assert state.runs_needed is not None and state.runs_needed > 0
    assert "budget" in state.reason


def test_rejects_non_positive_values() -> None:
    with pytest.raises(ValueError):
        SequentialDecision("write.iops").update([(0.0, 1.0)])


@pytest.mark.parametrize("sign_bets", [False, True])
def test_wealth_is_a_fair_game_over_every_sign_pattern(sign_bets: bool) -> None:
    """The validity argument, checked exactly: with the block magnitudes fixed and the signs
    fair coins (what the lab's random order guarantees under no difference), the mean final
    wealth over all 2^n sign patterns is 1 for every null and both directions — with the
    bettors on the sign beside the signed-rank ones too."""
    rng = np.random.default_rng(11)
    n = 10
    magnitudes = np.abs(rng.normal(0, 0.05, n))
    nulls = np.array([0.0])
    total_up = total_down = 0.0
    for pattern in range(2**n):
        signs = np.array([1.0 if pattern >> i & 1 else -1.0 for i in range(n)])
        bettors = _Bettors(nulls, stake_grid(40, ALPHA), sign_bets)
        for d in signs * magnitudes:
            bettors.update(float(d))
        total_up += float(np.exp(bettors.log_up[0]))
        total_down += float(np.exp(bettors.log_down[0]))
    assert total_up / 2**n == pytest.approx(1.0, rel=1e-9)
    assert total_down / 2**n == pytest.approx(1.0, rel=1e-9)


def test_a_small_budget_bets_on_signs_and_decides_a_large_change_sooner() -> None:
    """Ten blocks of a -50% change, all the same way, magnitudes scattered as under TCG: the
    signed-rank bettors alone pass 1/alpha at the 8th block on this draw (their score is a
    block's rank among those so far); with the sign bettors beside them (what a budget of
    10 gets) the 7th decides.  A large budget keeps the signed-rank bettors alone."""
    rng = np.random.default_rng(30)
    pairs = []
    for _ in range(10):
        a = 250.0 * float(np.exp(rng.normal(0, 0.17)))
        pairs.append((a, 0.5 * a * float(np.exp(rng.normal(0, 0.17)))))
    assert sign_bets_for(10) and sign_bets_for(SIGN_BETS_UP_TO)
    assert not sign_bets_for(SIGN_BETS_UP_TO + 1) and not sign_bets_for(None)

    def decided_at(**kw: object) -> int:
        seq = SequentialDecision("write.iops", max_blocks=10, **kw)  # type: ignore[arg-type]
        for pair in pairs:
            state = seq.update([pair])
            if state.done:
                assert state.verdict == "regression"
                return state.n_blocks
        return 11

    assert decided_at() == 7  # a budget of 10 bets on signs by itself
    assert decided_at(sign_bets=False) == 8
    assert not SequentialDecision("write.iops", max_blocks=200).sign_bets


@pytest.mark.parametrize("budget", [1, 12, 40, 200, 1000, None])
def test_stake_grid_spans_what_the_budget_can_decide(budget: int | None) -> None:
    stakes = stake_grid(budget, ALPHA)
    assert stakes[-1] == pytest.approx(MAX_STAKE) and np.all(stakes > 0)
    assert np.all(np.diff(stakes) > 0) and np.all(stakes[1:] / stakes[:-1] <= STAKE_RATIO + 1e-9)
    if stakes.size > 1:
        # its smallest stake can just reach 2/alpha within the budget: ~lambda^2/6 per block
        blocks = 2000 if budget is None else budget
        assert stakes[0] ** 2 / 6 * blocks == pytest.approx(math.log(2 / ALPHA), rel=1e-6)


def test_larger_budget_adds_smaller_stakes() -> None:
    assert stake_grid(400, ALPHA)[0] < stake_grid(100, ALPHA)[0] < stake_grid(20, ALPHA)[0]


def test_progress_shows_an_unbounded_side_as_such() -> None:
    """Early on the interval sits at the searched range's edge; the progress line must not
    print that edge as if it were a measured bound."""
    from iolab.cli.progress import interval_text
    from iolab.report.fmt import ci

    seq = SequentialDecision("write.iops", max_blocks=200)
    early = seq.update([(100.0, 104.0)])
    assert interval_text(early) == "[≤-75.0%, ≥+300.0%]"
    assert any("not yet bounded" in w for w in early.warnings)
    rng = np.random.default_rng(8)
    a, b = randomized_blocks(rng, 60, 0.0)
    later = seq.update(zip(a.tolist(), b.tolist(), strict=True))
    assert later.ci_low_pct is not None and later.ci_high_pct is not None
    assert "≤" not in interval_text(later) and "≥" not in interval_text(later)
    assert interval_text(later) == ci(later.ci_low_pct, later.ci_high_pct)


@pytest.mark.parametrize("factor", [0.38, 0.1, 12.0])
def test_a_decided_change_has_an_interval_on_its_side_even_beyond_the_range(
    factor: float,
) -> None:
    """A 2.6x drop sits inside the searched range; a 10x drop or a 12x rise lies beyond it,
    where the signed ranks saturate and every searched shift is rejected in the same block.
    Either way the decided interval must lie on the verdict's side of 0 (it once stayed the
    whole range, "[≤-50.3%, ≥+101.4%]: regression"), and beyond the range it is the edge,
    shown unbounded outward."""
    from iolab.cli.progress import interval_text
    from iolab.stats.sequential import INTERVAL_EDGE_LOG

    rng = np.random.default_rng(26)
    seq = SequentialDecision("write.iops", max_blocks=30)
    state = None
    for _ in range(30):
        a = 50000.0 * rng.uniform(0.8, 1.2)
        state = seq.update([(a, a * factor * rng.uniform(0.9, 1.1))])
        if state.done:
            break
    assert state is not None and state.done
    assert state.verdict == ("regression" if factor < 1 else "improvement")
    lo, hi = state.ci_low_pct, state.ci_high_pct
    assert lo is not None and hi is not None
    edge_lo, edge_hi = 100 * math.expm1(-INTERVAL_EDGE_LOG), 100 * math.expm1(INTERVAL_EDGE_LOG)
    if factor < 1:
        assert hi < 0
    else:
        assert lo > 0
    if factor == 0.1:
        assert (lo, hi) == pytest.approx((edge_lo, edge_lo))
        assert interval_text(state) == "[≤-75.0%, -75.0%]"
    elif factor == 12.0:
        assert (lo, hi) == pytest.approx((edge_hi, edge_hi))
    else:
        assert edge_lo <= lo < 100 * (factor - 1) < hi < 0


def test_one_sided_claims_each_hold_alpha_despite_looking_after_every_block() -> None:
    """A bisect's ends and verification ask one-sided: each claim ("regression", and
    "improvement" by the other side's gambler) must stay within alpha under no difference,
    on drifting noise, with a look after every block."""
    rng = np.random.default_rng(17)
    reps, budget = 250, 60
    worse = better = 0
    for _ in range(reps):
        a, b = randomized_blocks(rng, budget, 0.0)
        seq = SequentialDecision(
            "write.iops", max_blocks=budget, track_interval=False, one_sided=True
        )
        state = seq.update(zip(a.tolist(), b.tolist(), strict=True))
        worse += state.verdict == "regression"
        better += state.verdict == "improvement"
    assert worse / reps <= tolerance(reps)
    assert better / reps <= tolerance(reps)


def test_one_sided_decides_a_large_change_a_block_sooner_with_a_bound_on_its_side() -> None:
    """The pairs of the sign-bets test (-50%, every block the same way): two-sided the 7th
    block decides; one-sided, without the factor 2 for the side not asked about, the 6th.
    The interval is the worse side's bound: "at least this much worse", unbounded below."""
    from iolab.cli.progress import interval_text

    rng = np.random.default_rng(30)
    pairs = []
    for _ in range(10):
        a = 250.0 * float(np.exp(rng.normal(0, 0.17)))
        pairs.append((a, 0.5 * a * float(np.exp(rng.normal(0, 0.17)))))

    def decide(one_sided: bool) -> tuple[int, str, float | None, float | None, str]:
        seq = SequentialDecision("write.iops", max_blocks=10, one_sided=one_sided)
        for pair in pairs:
            state = seq.update([pair])
            if state.done:
                break
        return (
            state.n_blocks,
            state.verdict,
            state.ci_low_pct,
            state.ci_high_pct,
            interval_text(state),
        )

    two, one = decide(False), decide(True)
    assert two[:2] == (7, "regression")
    assert one[:2] == (6, "regression")
    assert one[3] is not None and -75.0 < one[3] < 0
    assert one[2] == pytest.approx(100 * math.expm1(-math.log(4.0)))
    assert one[4].startswith("[≤-75.0%, -")


def test_a_one_sided_test_needs_a_direction() -> None:
    from iolab.model.metrics import Direction

    with pytest.raises(ValueError, match="direction"):
        SequentialDecision("x", direction=Direction.NEUTRAL, one_sided=True)


def test_a_one_sided_bound_of_a_lower_is_better_kpi_lies_above_zero() -> None:
    """For a latency (lower is better) the worse side is up: a one-sided regression's bound
    is "at least this much higher", unbounded above."""
    from iolab.model.metrics import Direction

    seq = SequentialDecision("lat", direction=Direction.LOWER, max_blocks=10, one_sided=True)
    rng = np.random.default_rng(3)
    state = None
    for _ in range(10):
        a = 100.0 * float(np.exp(rng.normal(0, 0.05)))
        state = seq.update([(a, 1.5 * a * float(np.exp(rng.normal(0, 0.05))))])
        if state.done:
            break
    assert state is not None and state.verdict == "regression" and state.n_blocks <= 6
    assert state.ci_low_pct is not None and 0 < state.ci_low_pct < 50
    assert state.ci_high_pct == pytest.approx(300.0)
