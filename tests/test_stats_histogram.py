"""Histogram shift test: overdispersion-aware homogeneity of per-run event histograms."""

from __future__ import annotations

import numpy as np
import pytest

from iolab.stats import HistogramInput, histogram_shift


def runs(
    rng: np.random.Generator, probs: list[float], n_runs: int, events: int, jitter: float
) -> list[dict[str, int]]:
    labels = ["1", "2-3", "4-7", "8-15", "16-31"]
    out = []
    for _ in range(n_runs):
        p = np.array(probs) * np.exp(rng.normal(0, jitter, len(probs)))
        counts = rng.multinomial(events, p / p.sum())
        out.append({k: int(c) for k, c in zip(labels, counts, strict=True)})
    return out


def test_shares_totals_and_means() -> None:
    h = histogram_shift(
        HistogramInput("hist.writepages_pages", [{"1": 10, "4-7": 30}], [{"1": 30, "2-3": 10}])
    )
    assert [b.bucket for b in h.buckets] == ["1", "2-3", "4-7"]
    assert (h.total_a, h.total_b) == (40, 40)
    assert h.buckets[0].share_a == pytest.approx(0.25)
    assert h.mean_a == pytest.approx(0.25 * 1 + 0.75 * 5.5)
    assert h.total_variation == pytest.approx(0.75)
    assert any("one run per side" in w for w in h.warnings)


def test_run_to_run_variation_is_not_a_shift() -> None:
    rng = np.random.default_rng(1)
    probs = [0.4, 0.3, 0.2, 0.08, 0.02]
    false = 0
    for _ in range(40):
        h = histogram_shift(
            HistogramInput("x", runs(rng, probs, 5, 20000, 0.1), runs(rng, probs, 5, 20000, 0.1))
        )
        assert h.dispersion > 1
        false += h.verdict == "changed"
    assert false <= 6  # nominal 5% of 40 = 2; binomial slack


def test_real_shift_is_found() -> None:
    rng = np.random.default_rng(2)
    a = runs(rng, [0.4, 0.3, 0.2, 0.08, 0.02], 5, 20000, 0.05)
    b = runs(rng, [0.2, 0.2, 0.3, 0.2, 0.1], 5, 20000, 0.05)
    h = histogram_shift(HistogramInput("x", a, b))
    assert h.verdict == "changed" and h.p_value is not None and h.p_value < 1e-4
    assert h.mean_b is not None and h.mean_a is not None and h.mean_b > h.mean_a


@pytest.mark.parametrize("correction", ["holm", "bh"])
def test_underflowed_p_value_stays_the_strongest_evidence(correction: str) -> None:
    """Regression (seen on example (a)): jbd2 handles per transaction went from ~1,200
    one-handle transactions per run to one ~980-handle transaction; the F test's p underflowed
    to 0.0, which the table's adjustment read as "no p-value" and turned into 1.0."""
    from iolab.stats import MetricInput, compare

    runs_a = [{"1": 1200 + i, "2": 3} for i in range(20)]
    runs_b = [{str(915 + 3 * i): 1} for i in range(20)]
    assert histogram_shift(HistogramInput("hist.h", runs_a, runs_b)).p_value == 0.0
    blocks = list(range(20))
    kpi = MetricInput(
        "write.iops",
        [100.0 + i for i in range(20)],
        [110.0 + i for i in range(20)],
        kpi=True,
        blocks_a=blocks,
        blocks_b=blocks,
    )
    table = compare(
        [kpi],
        histograms=[HistogramInput("hist.h", runs_a, runs_b)],
        correction=correction,  # type: ignore[arg-type]
    )
    (shift,) = table.histogram_shifts
    assert shift.p_adjusted == 0.0 and shift.verdict == "changed"
