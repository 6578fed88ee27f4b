"""Multiple-testing adjustments for the secondary metrics of a comparison table.

Holm (default) controls the family-wise error rate: the chance that a table shows even one
false "changed" among its secondary metrics stays at or below alpha, whatever the dependence
between metrics.  Benjamini–Hochberg controls the expected share of false discoveries instead
(more power on wide tables, weaker promise).  KPIs are the primary hypotheses and are not
adjusted: each is judged at alpha (see docs/statistics.md).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from scipy import stats

from iolab.stats.types import Correction


def holm(p: Sequence[float]) -> list[float]:
    """Holm step-down adjusted p-values (monotone, capped at 1)."""
    arr = np.asarray(p, dtype=float)
    m = arr.size
    if m == 0:
        return []
    order = np.argsort(arr, kind="stable")
    scaled = (m - np.arange(m)) * arr[order]
    adjusted_sorted = np.minimum(1.0, np.maximum.accumulate(scaled))
    out = np.empty(m)
    out[order] = adjusted_sorted
    return [float(v) for v in out]


def benjamini_hochberg(p: Sequence[float]) -> list[float]:
    arr = np.asarray(p, dtype=float)
    if arr.size == 0:
        return []
    return [float(v) for v in stats.false_discovery_control(arr, method="bh")]


def adjust(p: Sequence[float], correction: Correction) -> list[float]:
    if correction == "holm":
        return holm(p)
    if correction == "bh":
        return benjamini_hochberg(p)
    raise ValueError(f"unknown correction {correction!r}")
