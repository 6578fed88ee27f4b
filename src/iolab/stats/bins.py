"""Binned latency data: merging the histograms of several runs or jobs, and percentiles of
the merged bins.  Pure Python (no numpy), so ingest can combine fio jobs without loading
the statistics' heavy libraries.  Merging bins is the honest way to a percentile of many
runs: an average of percentiles is not a percentile.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from iolab.model.metrics import PERCENTILES, percentile_name
from iolab.model.result import Histogram


def merge_histograms(histograms: Iterable[Histogram]) -> Histogram:
    merged: Histogram = {}
    for hist in histograms:
        for value, count in hist.items():
            merged[value] = merged.get(value, 0) + count
    return merged


def histogram_percentiles(
    hist: Histogram, percentiles: Sequence[float] = PERCENTILES
) -> dict[str, float]:
    """Percentiles of binned data the way fio computes them: the first bucket whose
    cumulative count reaches p% of the total (nearest-rank on bucket values)."""
    total = sum(hist.values())
    if total <= 0:
        return {}
    items = sorted(hist.items())
    out: dict[str, float] = {}
    for p in percentiles:
        rank = p / 100.0 * total
        cumulative = 0
        for value, count in items:
            cumulative += count
            if cumulative >= rank:
                out[percentile_name(p)] = value
                break
    return out
