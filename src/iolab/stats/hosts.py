"""Per-host effects and the host × variant interaction: is a change the same on every host?

On a fleet a block runs wholly on one host, so each block gives one paired effect (B's value
over A's, as a log ratio) measured on one machine.  Per host: the median of its blocks' log
ratios as a percent change, with the blocks' count.  The interaction test asks whether those
effects differ between hosts more than block-to-block noise explains: a Kruskal–Wallis test of
the per-block log ratios grouped by host (rank-based, like the rest of iolab's tests; no
normality assumed).  A small p-value is flagged: "regressed on host X only" is then a reading
the data allow, and the pooled verdict does not describe every host.  Pure: no I/O.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class HostEffect:
    host: str
    blocks: int  # paired blocks on this host with usable (positive) values
    change_pct: float | None  # 100 * (exp(median log(b/a)) - 1); None without a block


@dataclass(frozen=True)
class HostStrata:
    """One metric's effect per host, and the test of the host × variant interaction."""

    metric: str
    effects: tuple[HostEffect, ...]
    p_interaction: float | None  # Kruskal–Wallis over hosts; None with < 2 hosts of ≥ 2 blocks
    flagged: bool  # p_interaction < alpha: the effect differs between hosts
    test: str = "Kruskal-Wallis on per-block log ratios by host"


def host_strata(
    metric: str, pairs: Mapping[str, Sequence[tuple[float, float]]], alpha: float
) -> HostStrata:
    """`pairs`: host → its blocks' (a, b) values of `metric`."""
    from statistics import median  # ~5 ms of imports every compare would pay; fleets only

    ratios = {
        host: [math.log(b / a) for a, b in values if a > 0 and b > 0]
        for host, values in sorted(pairs.items())
    }
    effects = tuple(
        HostEffect(host, len(r), 100 * math.expm1(median(r)) if r else None)
        for host, r in ratios.items()
    )
    usable = [r for r in ratios.values() if len(r) >= 2]
    p: float | None = None
    if len(usable) >= 2:
        every = [x for r in usable for x in r]
        if len(set(every)) > 1:
            from scipy.stats import kruskal

            p = float(kruskal(*usable).pvalue)
        else:
            p = 1.0
    return HostStrata(metric, effects, p, p is not None and p < alpha)
