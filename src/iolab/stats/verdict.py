"""Direction-aware verdicts and the "how many more runs" estimate.

Rules (alpha = significance level, m = equivalence margin in %):
- "no change": the two one-sided tests against ±m both reject at alpha (TOST), i.e. the
  change is shown to lie inside ±m.  This wins over significance: a real but tiny change
  inside the margin is reported as "no change" with a warning that names it.
- "regression"/"improvement" (or "changed" for neutral metrics): the (adjusted) p-value is
  <= alpha and the (1 - alpha) interval excludes 0; the sign and the metric's direction
  decide which.
- otherwise "inconclusive", with `runs_needed`.
"""

from __future__ import annotations

import math

from iolab.model.metrics import Direction
from iolab.stats.normal import ppf
from iolab.stats.types import Verdict


def decide(
    *,
    direction: Direction,
    change_pct: float | None,
    ci_low_pct: float | None,
    ci_high_pct: float | None,
    p_value: float | None,
    tost_p_value: float | None,
    alpha: float,
) -> Verdict:
    if tost_p_value is not None and tost_p_value <= alpha:
        return "no change"
    if (
        p_value is not None
        and p_value <= alpha
        and change_pct is not None
        and ci_low_pct is not None
        and ci_high_pct is not None
        and (ci_low_pct > 0 or ci_high_pct < 0)
    ):
        if direction is Direction.NEUTRAL:
            return "changed"
        worse = change_pct < 0 if direction is Direction.HIGHER else change_pct > 0
        return "regression" if worse else "improvement"
    return "inconclusive"


def runs_needed(
    *,
    n_now: int,
    log_sd: float | None,
    log_shift: float,
    margin_log: float,
    alpha: float,
    paired: bool,
    power: float = 0.8,
    cap: int = 100_000,
) -> int | None:
    """Extra runs per side so that, if the true change equals today's estimate, the next
    comparison settles (significant, or inside the margin) with probability `power`.

    Normal planning formula on the log scale with the rank test's efficiency (3/pi) folded in:
    n = ((z_a + z_power) * sd / distance)^2, unpaired sd counts twice (two samples).
    None when the spread is unknown; `cap` when it would take more than `cap` runs.
    """
    if log_sd is None or not math.isfinite(log_sd) or log_sd <= 0:
        return None
    z_pow = ppf(power)
    var = log_sd**2 * (1.0 if paired else 2.0) * math.pi / 3.0
    candidates: list[float] = []
    if log_shift != 0:
        z = ppf(1 - alpha / 2)
        candidates.append(var * ((z + z_pow) / abs(log_shift)) ** 2)
    distance = margin_log - abs(log_shift)
    if distance > 0:
        z = ppf(1 - alpha)
        candidates.append(var * ((z + z_pow) / distance) ** 2)
    if not candidates:
        return cap
    total = max(min(candidates), min_reachable_n(alpha, paired))
    if not math.isfinite(total) or total > cap:
        return cap
    return max(1, math.ceil(total) - n_now)


def min_reachable_n(alpha: float, paired: bool) -> int:
    """Smallest n (pairs, or runs per side) at which the exact two-sided rank test can reach
    p <= alpha at all: 2 / 2^n for the signed-rank test, 2 / C(2n, n) for Mann-Whitney.
    Below it no amount of signal gives a verdict, so no estimate may promise fewer runs."""
    n = 1
    while True:
        smallest_p = 2.0 / 2**n if paired else 2.0 / math.comb(2 * n, n)
        if smallest_p <= alpha:
            return n
        n += 1
