"""Multiple-testing adjustments for the secondary metrics of a comparison table.

Holm (default) controls the family-wise error rate: the chance that a table shows even one
false "changed" among its secondary metrics stays at or below alpha, whatever the dependence
between metrics.  Benjamini–Hochberg controls the expected share of false discoveries instead
(more power on wide tables, weaker promise).  KPIs are the primary hypotheses and are not
adjusted: each is judged at alpha (see docs/statistics.md).
"""

from __future__ import annotations

import math
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


def graphical_holm(
    primary: Sequence[float], secondary: Sequence[float], secondary_share: float
) -> tuple[list[float], list[float]]:
    """Adjusted p-values of a two-family graphical Holm procedure (Bretz et al., 2009).

    Primary hypotheses (KPIs) start with weight (1 - share), split equally; secondary ones
    with `share`, split equally.  A rejected hypothesis passes its weight equally to the
    unrejected members of its own family, or, when it was the last one, to the other family.
    The whole table's family-wise error rate is at most alpha (strong control), and once every
    KPI is rejected the secondary family is tested at the full alpha.  With share 0 this is
    serial gatekeeping: secondary metrics can only be judged after every KPI was.
    """
    if not 0.0 <= secondary_share < 1.0:
        raise ValueError("secondary_share must be in [0, 1)")
    fam = [0] * len(primary) + [1] * len(secondary)
    p = [float(v) for v in (*primary, *secondary)]
    k = len(p)
    if k == 0:
        return [], []
    n_fam = [len(primary), len(secondary)]
    share = [1.0 - secondary_share, secondary_share]
    if n_fam[0] == 0:
        share = [0.0, 1.0]
    elif n_fam[1] == 0:
        share = [1.0, 0.0]
    w = np.array([share[f] / n_fam[f] for f in fam])
    g = np.zeros((k, k))
    for i in range(k):
        same = [j for j in range(k) if j != i and fam[j] == fam[i]]
        other = [j for j in range(k) if fam[j] != fam[i]]
        targets = same or other
        for j in targets:
            g[i, j] = 1.0 / len(targets)
    active = list(range(k))
    adjusted = [1.0] * k
    running = 0.0
    while active:
        ratios = [p[i] / w[i] if w[i] > 0 else math.inf for i in active]
        pos = int(np.argmin(ratios))
        i = active[pos]
        running = max(running, ratios[pos])
        adjusted[i] = float(min(1.0, running))
        active.remove(i)
        # Bretz et al.'s update for the hypotheses still active, as array operations (the
        # loop over pairs was cubic in Python and dominated wide tables)
        act = np.asarray(active, dtype=int)
        new_w = w.copy()
        new_g = np.zeros_like(g)
        if act.size:
            new_w[act] = w[act] + w[i] * g[i, act]
            denom = 1.0 - g[act, i] * g[i, act]
            safe = denom > 1e-12
            sub = (g[np.ix_(act, act)] + np.outer(g[act, i], g[i, act])) / np.where(
                safe, denom, 1.0
            )[:, None]
            sub[~safe, :] = 0.0
            np.fill_diagonal(sub, 0.0)
            new_g[np.ix_(act, act)] = sub
        new_w[i] = 0.0
        w, g = new_w, new_g
    return adjusted[: len(primary)], adjusted[len(primary) :]
