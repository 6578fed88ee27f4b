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
    m = arr.size
    if m == 1:
        return [float(arr[0])]
    # scipy's false_discovery_control(method="bh"), without importing scipy.stats: sorted p
    # times m / rank, made monotone from the largest down, capped at 1
    order = np.argsort(arr)
    scaled = arr[order] * (m / np.arange(1, m + 1, dtype=float))
    np.minimum.accumulate(scaled[::-1], out=scaled[::-1])
    out = np.empty(m)
    out[order] = scaled
    return [float(v) for v in np.clip(out, 0.0, 1.0)]


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
    fam = np.array([0] * len(primary) + [1] * len(secondary))
    p = np.array([float(v) for v in (*primary, *secondary)])
    k = p.size
    if k == 0:
        return [], []
    n_fam = [len(primary), len(secondary)]
    share = [1.0 - secondary_share, secondary_share]
    if n_fam[0] == 0:
        share = [0.0, 1.0]
    elif n_fam[1] == 0:
        share = [1.0, 0.0]
    # Members of a family are exchangeable, so every weight and every edge of the graph is
    # one number per family (w[f]) or per pair of families (g[f][h], between two distinct
    # active members): Bretz et al.'s update is done on those (the same arithmetic, so the
    # same results, as on the whole k x k matrix; that was cubic in k, 22 ms at 100 metrics).
    w = [share[f] / n_fam[f] if n_fam[f] else 0.0 for f in (0, 1)]
    g = [[0.0, 0.0], [0.0, 0.0]]
    for f, o in ((0, 1), (1, 0)):
        if n_fam[f] > 1:
            g[f][f] = 1.0 / (n_fam[f] - 1)
        elif n_fam[o]:
            g[f][o] = 1.0 / n_fam[o]
    active = np.ones(k, dtype=bool)
    left = list(n_fam)
    adjusted = [1.0] * k
    running = 0.0
    for _ in range(k):
        idx = np.flatnonzero(active)
        weights = np.where(fam[idx] == 0, w[0], w[1])
        positive = weights > 0
        ratios = np.full(idx.size, math.inf)
        ratios[positive] = p[idx[positive]] / weights[positive]
        pos = int(np.argmin(ratios))  # the first of equal ratios, as in index order
        i = int(idx[pos])
        running = max(running, float(ratios[pos]))
        adjusted[i] = float(min(1.0, running))
        active[i] = False
        f = int(fam[i])
        o = 1 - f
        left[f] -= 1
        wi, g_ff, g_fo, g_of, g_oo = w[f], g[f][f], g[f][o], g[o][f], g[o][o]
        new_w = [0.0, 0.0]
        new_w[f] = w[f] + wi * g_ff
        new_w[o] = w[o] + wi * g_fo
        new_g = [[0.0, 0.0], [0.0, 0.0]]
        denom_f = 1.0 - g_ff * g_ff
        if denom_f > 1e-12:
            new_g[f][f] = (g_ff + g_ff * g_ff) / denom_f
            new_g[f][o] = (g_fo + g_ff * g_fo) / denom_f
        denom_o = 1.0 - g_of * g_fo
        if denom_o > 1e-12:
            new_g[o][o] = (g_oo + g_of * g_fo) / denom_o
            new_g[o][f] = (g_of + g_of * g_ff) / denom_o
        w, g = new_w, new_g
    return adjusted[: len(primary)], adjusted[len(primary) :]
