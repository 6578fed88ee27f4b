"""Run-to-run statistics of one series of samples, in run order."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass
class SeriesStats:
    n: int
    median: float
    mean: float
    cv: float  # sample standard deviation / mean
    lo: float
    hi: float
    lag1: float  # lag-1 autocorrelation: does a run predict the next one (drift)?
    robust_cv: float  # 1.4826 * MAD / median: the spread without the outliers' weight


def lag1_autocorrelation(x: np.ndarray) -> float:
    d = x - x.mean()
    denom = float(np.dot(d, d))
    return float(np.dot(d[1:], d[:-1]) / denom) if denom > 0 else 0.0


def describe(values: list[float]) -> SeriesStats:
    x = np.asarray(values, dtype=float)
    med = float(np.median(x))
    return SeriesStats(
        n=len(x),
        median=med,
        mean=float(x.mean()),
        cv=float(x.std(ddof=1) / x.mean()) if len(x) > 1 else 0.0,
        lo=float(x.min()),
        hi=float(x.max()),
        lag1=lag1_autocorrelation(x),
        robust_cv=float(1.4826 * np.median(np.abs(x - med)) / med),
    )


def row(name: str, s: SeriesStats) -> str:
    """One markdown table row: name | n | median | CV | robust CV | range | lag-1."""
    return (
        f"| {name} | {s.n} | {s.median:,.0f} | {100 * s.cv:.1f}% | {100 * s.robust_cv:.1f}% "
        f"| {s.lo:,.0f}–{s.hi:,.0f} | {s.lag1:+.2f} |"
    )


HEADER = (
    "| series | n | median IOPS | CV | robust CV | range | lag-1 autocorr |\n"
    "|---|---|---|---|---|---|---|"
)


def round_adjusted_sd(series: dict[str, list[float]]) -> dict[str, float]:
    """Each series' SD of log values after removing the effect every series shared per round.

    In interleaved rounds, load from other users moves all strategies of a round together;
    subtracting each round's mean log (over all series) leaves each strategy's own noise.
    """
    names = list(series)
    logs = np.log(np.array([series[n] for n in names], dtype=float))
    shared = logs.mean(axis=0) - logs.mean()
    return {n: float((logs[i] - shared).std(ddof=1)) for i, n in enumerate(names)}
