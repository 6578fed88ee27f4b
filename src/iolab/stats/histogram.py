"""Did a distribution of kernel events move?  (pages per ext4_writepages call, request sizes...)

Input: one histogram per run on each side (bucket label -> count).  Output: pooled counts and
each side's share per bucket, the total variation distance (how much of the mass moved), and
a test of homogeneity.

Why not a plain chi-square on pooled counts: one run holds thousands of events, and events of
one run are not independent draws — runs differ from each other (page cache state, journal
timing).  A pooled chi-square then calls every A/A pair "different".  The test here is a
quasi-likelihood chi-square: the between-side statistic is divided by the overdispersion phi
measured between runs of the same side (chi-square of homogeneity among A's runs and among
B's runs, per degree of freedom, at least 1), and judged with an F distribution on
(K-1, within-side degrees of freedom).  With a single run per side phi cannot be measured;
the plain chi-square is used and a warning says so.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from iolab.stats.types import HistogramBucket, HistogramShift

_NUM = re.compile(r"^\s*(-?\d+(?:\.\d+)?)(?:\s*(?:-|\.\.)\s*(-?\d+(?:\.\d+)?))?\s*$")


@dataclass(frozen=True)
class HistogramInput:
    """Per-run histograms of one event distribution on both sides."""

    name: str
    runs_a: Sequence[Mapping[str, int]]
    runs_b: Sequence[Mapping[str, int]]


def _bucket_value(label: str) -> float | None:
    m = _NUM.match(label)
    if not m:
        return None
    lo = float(m.group(1))
    return (lo + float(m.group(2))) / 2 if m.group(2) else lo


def _ordered_labels(runs: Sequence[Mapping[str, int]]) -> list[str]:
    seen: dict[str, None] = {}
    for run in runs:
        for k in run:
            seen.setdefault(str(k), None)
    labels = list(seen)
    values = [_bucket_value(k) for k in labels]
    if all(v is not None for v in values):
        labels = [k for _, k in sorted(zip(values, labels, strict=True), key=lambda t: t[0] or 0.0)]
    return labels


def _pearson_chi2(observed: NDArray[np.float64]) -> float:
    """Pearson's chi-square of homogeneity of a table without empty rows or columns (what
    scipy's chi2_contingency(correction=False) computes, without importing scipy.stats)."""
    expected = observed.sum(axis=1, keepdims=True) * observed.sum(axis=0, keepdims=True)
    expected = expected / observed.sum()
    return float(np.sum((observed - expected) ** 2 / expected))


def _within_chi2(table: NDArray[np.float64]) -> tuple[float, int]:
    """Chi-square of homogeneity among the runs (rows) of one side, on non-empty columns."""
    table = table[:, table.sum(axis=0) > 0]
    table = table[table.sum(axis=1) > 0]
    if table.shape[0] < 2 or table.shape[1] < 2:
        return 0.0, 0
    stat = _pearson_chi2(table)
    return stat, (table.shape[0] - 1) * (table.shape[1] - 1)


def histogram_shift(h: HistogramInput, *, alpha: float = 0.05) -> HistogramShift:
    if not h.runs_a or not h.runs_b:
        raise ValueError(f"{h.name}: both sides need at least one histogram")
    labels = _ordered_labels([*h.runs_a, *h.runs_b])
    ta = np.array([[float(r.get(k, 0)) for k in labels] for r in h.runs_a])
    tb = np.array([[float(r.get(k, 0)) for k in labels] for r in h.runs_b])
    if np.any(ta < 0) or np.any(tb < 0):
        raise ValueError(f"{h.name}: histogram counts must not be negative")
    ca, cb = ta.sum(axis=0), tb.sum(axis=0)
    total_a, total_b = float(ca.sum()), float(cb.sum())
    share_a = ca / total_a if total_a else np.zeros_like(ca)
    share_b = cb / total_b if total_b else np.zeros_like(cb)
    buckets = tuple(
        HistogramBucket(k, int(x), int(y), float(sa), float(sb))
        for k, x, y, sa, sb in zip(labels, ca, cb, share_a, share_b, strict=True)
    )
    values = [_bucket_value(k) for k in labels]
    numeric = all(v is not None for v in values)
    vals = np.array([v if v is not None else 0.0 for v in values])
    mean_a = float(np.dot(share_a, vals)) if numeric and total_a else None
    mean_b = float(np.dot(share_b, vals)) if numeric and total_b else None
    tv = float(0.5 * np.abs(share_b - share_a).sum())

    warnings: list[str] = []
    statistic: float | None = None
    dof: int | None = None
    p_value: float | None = None
    dispersion = 1.0
    keep = (ca + cb) > 0
    if total_a == 0 or total_b == 0 or int(keep.sum()) < 2:
        warnings.append("fewer than two non-empty buckets or an empty side: nothing to test")
    else:
        pooled = np.vstack([ca[keep], cb[keep]])
        chi2 = _pearson_chi2(pooled)
        dof = int(keep.sum()) - 1
        wa, da = _within_chi2(ta)
        wb, db = _within_chi2(tb)
        within_df = da + db
        if within_df > 0:
            dispersion = max(1.0, (wa + wb) / within_df)
            statistic = chi2 / dispersion
            from scipy.special import fdtrc  # F's survival function (scipy.stats.f.sf)

            p_value = float(fdtrc(dof, within_df, statistic / dof))
            test = "chi-square of homogeneity, overdispersion-corrected (F test)"
        else:
            statistic = chi2
            from scipy.special import chdtrc  # chi-square's survival function

            p_value = float(chdtrc(dof, chi2))
            test = "chi-square of homogeneity (pooled events)"
            warnings.append(
                "one run per side: run-to-run variation cannot be measured, so the test treats "
                "every event as independent and overstates significance"
            )
        if dispersion > 1.0:
            warnings.append(f"runs of the same side differ {dispersion:.1f}x more than chance")
    return HistogramShift(
        name=h.name,
        buckets=buckets,
        total_a=int(total_a),
        total_b=int(total_b),
        runs_a=len(h.runs_a),
        runs_b=len(h.runs_b),
        statistic=statistic,
        dof=dof,
        dispersion=dispersion,
        p_value=p_value,
        p_adjusted=p_value,
        test=test if p_value is not None else "none",
        total_variation=tv,
        mean_a=mean_a,
        mean_b=mean_b,
        verdict="changed" if p_value is not None and p_value <= alpha else "inconclusive",
        warnings=tuple(warnings),
    )
