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
    kpi, sec, _ = graphical(primary, secondary, secondary_share)
    return kpi, sec


def graphical(
    primary: Sequence[float],
    secondary: Sequence[float],
    secondary_share: float,
    joint: Sequence[float] = (),
) -> tuple[list[float], list[float], list[float]]:
    """`graphical_holm` with one more kind of secondary member: a joint family tested by a
    step-down procedure of its own (max-T over the design's relabellings, stats.maxt).

    `joint` holds that family's step-down p-values in its rejection order (the metric with
    the largest statistic first), before any running maximum.  The joint family is one node
    of the graph: it starts with the secondary share of its members (share x nJ / (nJ + nS)
    of alpha), rejects its members one by one in that order — each step compared with the
    node's current weight, the step-down doing inside the node what Holm's passing of weight
    does between single hypotheses — and passes its weight on only when its last member is
    rejected: to the other secondary hypotheses in proportion to their number, or to the
    KPIs when none is left.  The other edges are graphical Holm's.  Every intersection of
    hypotheses is then tested by weighted Bonferroni across the nodes with max-T inside the
    joint node; the node weights only grow as hypotheses are rejected, and a max-T
    threshold only shrinks as the set it maximizes over does, so this sequential procedure
    is the closed test of those intersection tests and keeps the table-wide family-wise
    error rate at alpha (docs/statistics.md).  Returns the adjusted p-values of primary,
    secondary and joint (the latter in the order given).
    """
    if not 0.0 <= secondary_share < 1.0:
        raise ValueError("secondary_share must be in [0, 1)")
    n_k, n_s, n_j = len(primary), len(secondary), len(joint)
    if n_k + n_s + n_j == 0:
        return [], [], []
    K, S, J = 0, 1, 2  # the three families
    p = [
        np.array([float(v) for v in primary]),
        np.array([float(v) for v in secondary]),
        np.array([float(v) for v in joint]),
    ]
    share_sec = secondary_share if n_k and (n_s or n_j) else (0.0 if n_k else 1.0)
    size_sec = n_s + n_j
    # weight of ONE member of each family (the joint family is one member: its node)
    w = [
        (1.0 - share_sec) / n_k if n_k else 0.0,
        share_sec / size_sec if n_s else 0.0,
        share_sec * n_j / size_sec if n_j else 0.0,
    ]
    # g[f][h]: edge from one member of f to ONE other member of h.  Members of K and S are
    # exchangeable, so one number per pair of families holds the whole graph (Bretz et
    # al.'s update on these is the same arithmetic as on the k x k matrix, in O(1)).
    g = [[0.0] * 3 for _ in range(3)]
    if n_k > 1:
        g[K][K] = 1.0 / (n_k - 1)
    elif n_k == 1 and size_sec:
        g[K][S] = 1.0 / size_sec
        g[K][J] = n_j / size_sec
    if n_s > 1 or (n_s == 1 and n_j):
        g[S][S] = 1.0 / (size_sec - 1) if n_s > 1 else 0.0
        g[S][J] = n_j / (size_sec - 1)
    elif n_s == 1 and n_k:
        g[S][K] = 1.0 / n_k
    if n_j and n_s:
        g[J][S] = 1.0 / n_s
    elif n_j and n_k:
        g[J][K] = 1.0 / n_k
    # members in the order each family offers them: smallest p first (first index on ties)
    queues = [
        [int(i) for i in np.argsort(p[K], kind="stable")],
        [int(i) for i in np.argsort(p[S], kind="stable")],
        list(range(n_j)),
    ]
    nxt = [0, 0, 0]
    adjusted = [[1.0] * n_k, [1.0] * n_s, [1.0] * n_j]
    running = 0.0
    for _ in range(n_k + n_s + n_j):
        best, best_ratio = -1, math.inf
        for f in (K, S, J):
            if nxt[f] >= len(queues[f]):
                continue
            value = p[f][queues[f][nxt[f]]]
            ratio = value / w[f] if w[f] > 0 else math.inf
            if best < 0 or ratio < best_ratio:
                best, best_ratio = f, ratio
        f = best
        i = queues[f][nxt[f]]
        nxt[f] += 1
        running = max(running, best_ratio)
        adjusted[f][i] = float(min(1.0, running))
        if f == J and nxt[J] < n_j:
            continue  # the joint node stays, with its weight, until its last member goes
        wi = w[f]
        new_w = list(w)
        new_g = [[0.0] * 3 for _ in range(3)]
        for h in (K, S, J):
            new_w[h] = w[h] + wi * g[f][h]
        for lf in (K, S, J):
            back = g[lf][f] * g[f][lf]
            denom = 1.0 - back
            if denom <= 1e-12:
                continue
            for h in (K, S, J):
                new_g[lf][h] = (g[lf][h] + g[lf][f] * g[f][h]) / denom
        w, g = new_w, new_g
    return adjusted[K], adjusted[S], adjusted[J]
