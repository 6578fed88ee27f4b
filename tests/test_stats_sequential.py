"""Sequential A/B decisions, including a fast seeded A/A simulation of the false-alarm rate."""

from __future__ import annotations

import math

import numpy as np
import pytest

from iolab.stats import MetricInput, SequentialDecision, compare_metric

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
