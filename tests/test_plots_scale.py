"""The confidence-sequence plot scales its axis to the interval once it is narrow (issue 21):
a 2% effect decided after 14 blocks is read on a few-percent axis with the ±margin band on
it, not on the ±50% of the first blocks."""

from __future__ import annotations

import math
import re

from iolab.report.html_model import SequentialPoint, SequentialTrace
from iolab.report.plots import sequential_figure, sequential_limits


def narrowing(final: tuple[float, float, float], blocks: int = 14) -> list[SequentialPoint]:
    est, lo, hi = final
    points = []
    for b in range(1, blocks):
        half = max((hi - lo) / 2, 50 / b**1.37)
        e = est + 4 / b * (1 if b % 2 else -1)
        points.append(SequentialPoint(b, e, e - half, e + half))
    return [*points, SequentialPoint(blocks, est, lo, hi)]


def test_a_narrow_interval_sets_the_axis_and_the_band_stays() -> None:
    points = narrowing((1.9, 0.2, 2.9))
    lows = [p.ci_low_pct for p in points if p.ci_low_pct is not None]
    highs = [p.ci_high_pct for p in points if p.ci_high_pct is not None]
    low, high = sequential_limits(lows, highs, [p.estimate_pct for p in points], 1.0)
    assert low < -1.0 and high > 2.9  # the whole band and the last interval are on the axis
    assert high - low < 8.0  # a few percent, not the ±50% of block 1
    assert min(lows) < low and max(highs) > high  # the first intervals run off it


def test_a_sequence_that_never_narrowed_is_shown_to_the_searched_edge_and_100_percent() -> None:
    low, high = sequential_limits([-300.0, -300.0], [300.0, 400.0], [1.0, 2.0], 1.0)
    pad = 0.12 * (100.0 + 75.0)
    assert math.isclose(low, -75.0 - pad) and math.isclose(high, 100.0 + pad)
    low, high = sequential_limits([-300.0, -80.0], [300.0, 90.0], [1.0, 2.0], 1.0)
    pad = 0.12 * (90.0 + 75.0)
    assert math.isclose(low, -75.0 - pad) and math.isclose(high, 90.0 + pad)


def test_a_large_drop_at_the_edge_is_on_the_axis_whole() -> None:
    """make demo's data=journal: -65% decided after 8 blocks, the interval [≤-75%, -60%]."""
    low, high = sequential_limits([-75.0, -75.0], [300.0, -59.8], [-65.0, -65.3], 1.0)
    assert low < -75.0 and high > 1.0 and high - low < 100.0


def test_the_figure_uses_those_limits() -> None:
    """The drawn SVG: tick labels span a few percent and the x label says what ran off."""
    trace = SequentialTrace("write.iops", 1.0, tuple(narrowing((1.9, 0.2, 2.9))), "improvement", 14)
    svg = sequential_figure(trace, "t")
    ticks = [float(t) for t in re.findall(r">([+-]?\d+(?:\.\d+)?)%<", svg)]
    assert ticks and max(abs(t) for t in ticks) <= 4.0, ticks
    assert "the first intervals run off the axis" in svg
