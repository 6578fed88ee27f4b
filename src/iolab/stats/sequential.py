"""Adaptive A/B: decide after every block without inflating the false-alarm rate.

Design.  `iolab ab` runs randomized complete blocks: each block runs A and B once, in an order
drawn at random.  For block i let d_i = log(B_i) - log(A_i).  If B differs from A by a constant
factor exp(delta), then d_i - delta = s_i * D_i, where D_i is the difference of the machine's
noise between the block's two positions and s_i = +-1 is the coin that chose the order.  So,
given everything before block i and the magnitude |d_i - delta|, the sign of d_i - delta is a
fair coin — whatever the drift, autocorrelation or distribution of the noise.  That symmetry
is all the test needs; it is guaranteed by the randomization, not assumed.

Test by betting.  To test "the shift is delta0", a gambler starts with wealth 1 and at block i
stakes a fraction lambda_i (chosen from the past only) on
    g_i = sign(x_i) * R_i / i,      x_i = d_i - delta0,
where R_i is the rank of |x_i| among |x_1|..|x_i| (a sequential signed-rank score: robust to
outlier runs, scale-free).  Wealth W_i = W_{i-1} * (1 + lambda_i g_i).  Under the null, g_i has
conditional mean 0, so W is a non-negative martingale and, by Ville's inequality,
P(W ever reaches 1/alpha) <= alpha: the rule may look after every block, forever.
Each gambler splits its wealth equally over a few constant stakes lambda and keeps the
average: a mixture of martingales is a martingale, and the mixture is never more than
log(#stakes) behind the best constant stake in hindsight.  The stakes are fixed before the
first block from the budget alone (`stake_grid`): a constant stake lambda grows wealth by at
most about lambda^2 / 6 per block (E g^2 ~ 1/3), so a stake too small to reach 2/alpha within
the budget can never decide and only dilutes the mixture; the grid runs geometrically from the
smallest stake that can still win in time up to 0.9.  (Measured on the recorded data set at a
3% shift and a 300-block budget: ten stakes spread over [0.02, 0.8] used 145 runs per side
for 90.7% power, the budget-aware grid 132 for 93.1%; the ten stakes had in turn replaced a
plug-in Kelly bet, which ramped up slowly — docs/statistics.md.)  One gambler bets that B is
larger, one that it is smaller, and the two-sided wealth is their average.  Because g is a
non-decreasing function of x_i, a gambler betting against "delta >= m" is a supermartingale
for every delta >= m, so composite one-sided nulls are handled by their boundary.

Decisions (each an error of at most alpha):
- regression / improvement: two-sided wealth at delta0 = 0 reaches 1/alpha; or, for a question
  that has a direction (`one_sided`: a bisect's ends and verification ask "is bad worse?"),
  the gambler that the KPI got worse alone reaches 1/alpha for "regression", the other
  alone for "improvement" — each claim a one-sided test at alpha, without the factor 2 the
  two-sided average pays for the side not asked about (one block sooner when every block
  falls the same way and the sign bettors stake 0.9);
- no change within ±m: the gambler against "delta >= log(1+m)" AND the gambler against
  "delta <= log(1-m)" have both reached 1/alpha (two one-sided tests, each at alpha);
- inconclusive: the block budget ran out first.
The interval shown is the confidence sequence {delta0 : two-sided wealth(delta0) < 1/alpha} on
a grid, intersected over time — valid at every block simultaneously; a one-sided test shows
its side's bound instead (how much worse at least), unbounded on the other side.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

import numpy as np
from numpy.typing import NDArray

from iolab.model.metrics import Direction, metric_info
from iolab.stats.shift import from_pct, paired_shift, to_pct
from iolab.stats.types import SequentialState, SequentialVerdict
from iolab.stats.verdict import runs_needed

# the largest stake (|g| <= 1, so any stake < 1 keeps wealth > 0)
MAX_STAKE = 0.9
# neighbouring stakes differ by at most this factor
STAKE_RATIO = 1.6
# a budget of None (the caller stops on time) is planned as this many blocks
OPEN_BUDGET_BLOCKS = 2000
# budgets up to this many blocks also bet on the signs alone (`sign_bets`)
SIGN_BETS_UP_TO = 30


def sign_bets_for(stake_blocks: int | None) -> bool:
    """Whether a test sized for `stake_blocks` also bets on signs.  A budget this small can
    decide only large changes, and a large change puts every block on one side: there a
    bettor on the sign alone grows x1.9 a block at stake 0.9, where the signed-rank bettor
    averages about x1.45 (its score is the block's rank among those so far, half of the
    maximum on average).  A -50% kernel change in a TCG guest, every block the same way:
    the signed-rank bettors reached 20 at the 10th block (23.8); with the sign bettors
    beside them the same blocks pass 20 at the 7th (27.1).  Larger budgets keep the
    signed-rank bettor alone:
    for the small changes only they can decide, the sign ignores magnitudes and halving the
    rank bettor's wealth would cost blocks."""
    return stake_blocks is not None and stake_blocks <= SIGN_BETS_UP_TO


def stake_grid(max_blocks: int | None, alpha: float) -> NDArray[np.float64]:
    """Constant stakes for a budget: from the smallest that can reach 2/alpha in time to 0.9.

    A stake lambda on the signed-rank score (E g^2 ~ 1/3) grows log-wealth by about
    lambda^2 / 6 per block at its best, so it needs 6 log(2/alpha) / lambda^2 blocks.
    """
    blocks = OPEN_BUDGET_BLOCKS if max_blocks is None else max(1, max_blocks)
    smallest = min(MAX_STAKE, math.sqrt(6.0 * math.log(2.0 / alpha) / blocks))
    if smallest >= MAX_STAKE:
        return np.array([MAX_STAKE])
    count = math.ceil(math.log(MAX_STAKE / smallest) / math.log(STAKE_RATIO)) + 1
    return np.asarray(np.geomspace(smallest, MAX_STAKE, count), dtype=np.float64)


# the interval is searched over log shifts in [-EDGE, +EDGE]: -75% to +300%, so that a
# 2-3x change (data=journal, a nodelalloc writeback collapse) is bounded inside the range;
# the grid's steepness keeps the spacing near 0 as fine as the earlier ±log(2) grid had it
INTERVAL_EDGE_LOG = math.log(4.0)
_GRID_POINTS = 1001
_GRID_STEEPNESS = 4.88


def edge_pct() -> tuple[float, float]:
    """The searched range's ends as % changes: (-75.0, +300.0)."""
    return 100 * math.expm1(-INTERVAL_EDGE_LOG), 100 * math.expm1(INTERVAL_EDGE_LOG)


def edge_text() -> str:
    """The searched range as a reader sees it: "-75% to +300%"."""
    low, high = edge_pct()
    return f"{low:+.0f}% to {high:+.0f}%"


def _grid(down: float, up: float) -> NDArray[np.float64]:
    """Shifts tested for the displayed interval: dense near 0, always holding 0 and ±margin."""
    u = np.linspace(-1.0, 1.0, _GRID_POINTS)
    g = INTERVAL_EDGE_LOG * np.sinh(_GRID_STEEPNESS * u) / math.sinh(_GRID_STEEPNESS)
    return np.unique(np.concatenate([g, [0.0, down, up]]))


class _Bettors:
    """Two one-sided betting martingales for each null shift in `nulls` (vectorised), each a
    mixture over the constant `stakes` — on the signed-rank score, and with `signs` as many
    again on the sign alone (under the null the sign of x_i is a fair coin given the past and
    |x_i|, so each member is a martingale, and so is their average)."""

    def __init__(
        self, nulls: NDArray[np.float64], stakes: NDArray[np.float64], signs: bool = False
    ) -> None:
        self.nulls = nulls
        self.stakes = stakes
        self.signs = signs
        self.abs_hist: list[NDArray[np.float64]] = []
        members = stakes.size * (2 if signs else 1)
        self._log_up_by_stake = np.zeros((nulls.size, members))
        self._log_down_by_stake = np.zeros((nulls.size, members))
        self.log_up = np.zeros(nulls.size)  # bets that the true shift is above the null
        self.log_down = np.zeros(nulls.size)
        self.max_log_up = np.full(nulls.size, -np.inf)
        self.max_log_down = np.full(nulls.size, -np.inf)
        self.max_log_two = np.full(nulls.size, -np.inf)

    def update(self, d: float) -> None:
        x = d - self.nulls
        ax = np.abs(x)
        self.abs_hist.append(ax)
        k = len(self.abs_hist)
        hist = np.vstack(self.abs_hist)  # (k, G)
        rank = (hist < ax).sum(axis=0) + 0.5 * ((hist == ax).sum(axis=0) + 1)
        g = (np.sign(x) * rank / k)[:, None]
        bets = self.stakes[None, :] * g
        if self.signs:
            bets = np.concatenate([bets, self.stakes[None, :] * np.sign(x)[:, None]], axis=1)
        self._log_up_by_stake += np.log1p(bets)
        self._log_down_by_stake += np.log1p(-bets)
        mixture = math.log(bets.shape[1])
        self.log_up = np.logaddexp.reduce(self._log_up_by_stake, axis=1) - mixture
        self.log_down = np.logaddexp.reduce(self._log_down_by_stake, axis=1) - mixture
        two = np.logaddexp(self.log_up, self.log_down) - math.log(2.0)
        self.max_log_up = np.maximum(self.max_log_up, self.log_up)
        self.max_log_down = np.maximum(self.max_log_down, self.log_down)
        self.max_log_two = np.maximum(self.max_log_two, two)


class SequentialDecision:
    """Sequential verdict for one KPI; feed it (a, b) pairs, one per finished block.

    Pure: no I/O.  Requires that the lab randomizes the order of A and B inside each block
    (the validity argument above rests on that coin).  `max_blocks` is the budget; None means
    the caller stops it (e.g. on a time budget) with `finish()`.  `stake_blocks` is the budget
    the stakes are sized for (default: `max_blocks`); a resumed run keeps its first budget's
    stakes while its block budget grows — the stakes must not depend on the data seen.
    `sign_bets`: bettors on the sign beside the signed-rank ones (default: as
    `sign_bets_for` the stakes' budget; a stored run passes what it was started with).
    `one_sided`: "regression" and "improvement" are each decided by their own one-sided
    gambler at alpha (module docstring), and the interval is that side's one-sided bound
    (`_one_sided_bound`): unbounded on the other side, shown as the searched range's edge.
    """

    def __init__(
        self,
        name: str,
        *,
        direction: Direction | None = None,
        alpha: float = 0.05,
        margin_pct: float = 1.0,
        max_blocks: int | None = None,
        stake_blocks: int | None = None,
        track_interval: bool = True,
        sign_bets: bool | None = None,
        one_sided: bool = False,
    ) -> None:
        if not 0 < alpha < 0.5:
            raise ValueError("alpha must be in (0, 0.5)")
        if not 0 < margin_pct < 100:
            raise ValueError("margin_pct must be in (0, 100)")
        self.name = name
        self.direction = direction if direction is not None else metric_info(name).direction
        if one_sided and self.direction is Direction.NEUTRAL:
            raise ValueError(f"{name}: a one-sided test needs a KPI with a direction")
        self.one_sided = one_sided
        self.alpha = alpha
        self.margin_pct = margin_pct
        self.max_blocks = max_blocks
        self.track_interval = track_interval
        self._down, self._up = from_pct(-margin_pct), from_pct(margin_pct)
        nulls = (
            _grid(self._down, self._up) if track_interval else np.array([self._down, 0.0, self._up])
        )
        self._nulls = nulls
        self._i0 = int(np.nonzero(nulls == 0.0)[0][0])
        self._iup = int(np.nonzero(nulls == self._up)[0][0])
        self._idown = int(np.nonzero(nulls == self._down)[0][0])
        sized_for = stake_blocks if stake_blocks is not None else max_blocks
        signs = sign_bets_for(sized_for) if sign_bets is None else sign_bets
        self.sign_bets = signs
        self._bettors = _Bettors(nulls, stake_grid(sized_for, alpha), signs)
        self._d: list[float] = []
        self._cs: tuple[float, float] | None = None
        self._state: SequentialState | None = None
        self._threshold = math.log(1.0 / alpha)

    @property
    def state(self) -> SequentialState | None:
        return self._state

    def update(self, pairs: Iterable[tuple[float, float]]) -> SequentialState:
        """Add finished blocks (value of A, value of B) and return the new state.

        Once done, further pairs are ignored: the verdict is final.
        """
        for a, b in pairs:
            if self._state is not None and self._state.done:
                break
            if not (a > 0 and b > 0) or not (math.isfinite(a) and math.isfinite(b)):
                raise ValueError(
                    f"{self.name}: sequential decisions need positive values, got {a}, {b}"
                )
            d = math.log(b) - math.log(a)
            self._d.append(d)
            self._bettors.update(d)
            self._state = self._evaluate()
        if self._state is None:
            self._state = self._evaluate()
        return self._state

    def finish(self, reason: str = "budget spent") -> SequentialState:
        """Stop now (time budget, Ctrl-C): the verdict stays whatever was reached."""
        state = self._evaluate(force_done=reason)
        self._state = state
        return state

    def _one_sided_bound(self, *, improvement: bool) -> tuple[float, float]:
        """The one-sided confidence sequence of the side a one-sided test asks about: the
        nulls its gambler has not rejected.  The gambler that the shift lies below a null
        rejects the nulls above the truth, so its set runs from the lower edge up to a
        bound ("at least this much lower"); the other's from a bound to the upper edge.
        A regression verdict is the bound passing 0 on the worse side."""
        down = (self.direction is Direction.HIGHER) != improvement
        wealth = self._bettors.max_log_down if down else self._bettors.max_log_up
        inside = np.nonzero(wealth < self._threshold)[0]
        first, last = float(self._nulls[0]), float(self._nulls[-1])
        if inside.size == 0:  # every null rejected: the shift lies beyond the edge
            return (first, first) if down else (last, last)
        if down:
            return first, float(self._nulls[inside[-1]])
        return float(self._nulls[inside[0]]), last

    def _evaluate(self, force_done: str | None = None) -> SequentialState:
        bet = self._bettors
        n = len(self._d)
        log_e0 = log_two0 = float(bet.max_log_two[self._i0])
        reject0 = n > 0 and log_two0 >= self._threshold
        if self.one_sided:
            log_worse, log_better = (
                (float(bet.max_log_down[self._i0]), float(bet.max_log_up[self._i0]))
                if self.direction is Direction.HIGHER
                else (float(bet.max_log_up[self._i0]), float(bet.max_log_down[self._i0]))
            )
            reject0 = n > 0 and max(log_worse, log_better) >= self._threshold
            worse_won = log_worse >= self._threshold
            log_e0 = log_worse if worse_won or log_better < self._threshold else log_better
        reject_up = n > 0 and float(bet.max_log_down[self._iup]) >= self._threshold
        reject_down = n > 0 and float(bet.max_log_up[self._idown]) >= self._threshold
        e_equiv = (
            math.exp(min(float(bet.max_log_down[self._iup]), float(bet.max_log_up[self._idown])))
            if n
            else 1.0
        )

        verdict: SequentialVerdict = "inconclusive"
        reason = "waiting for evidence"
        if reject_up and reject_down:
            verdict = "no change"
            reason = f"change shown to lie within ±{self.margin_pct:g}%"
        elif reject0 and self.one_sided:
            verdict = "regression" if worse_won else "improvement"
            which = "worse" if worse_won else "better"
            reason = (
                f"evidence that it got {which} reached 1/alpha = {1 / self.alpha:g} (one-sided)"
            )
        elif reject0:
            up_side = float(bet.max_log_up[self._i0]) >= float(bet.max_log_down[self._i0])
            worse = (not up_side) if self.direction is Direction.HIGHER else up_side
            if self.direction is Direction.NEUTRAL:
                verdict = (
                    "regression" if worse else "improvement"
                )  # neutral KPIs: read as "changed"
            else:
                verdict = "regression" if worse else "improvement"
            reason = f"evidence against no difference reached 1/alpha = {1 / self.alpha:g}"
        done = verdict != "inconclusive"
        if not done and self.max_blocks is not None and n >= self.max_blocks:
            done, reason = True, f"budget of {self.max_blocks} blocks spent"
        if force_done is not None and not done:
            done, reason = True, force_done

        estimate = lo = hi = None
        warnings: list[str] = []
        if n and (self.track_interval or done):
            d = np.asarray(self._d)
            estimate = to_pct(paired_shift(d, self.alpha).estimate) if n >= 1 else None
        if self.track_interval and n and self.one_sided:
            self._cs = self._one_sided_bound(improvement=verdict == "improvement")
            lo, hi = to_pct(self._cs[0]), to_pct(self._cs[1])
            open_low = self._cs[0] <= self._nulls[0]
            if (open_low and self._cs[1] <= self._nulls[0]) or (
                not open_low and self._cs[0] >= self._nulls[-1]
            ):
                warnings.append(
                    f"the bound reaches the edge of the tested range ({edge_text()}): "
                    "the change lies beyond it"
                )
        elif self.track_interval and n:
            inside = bet.max_log_two < self._threshold
            if inside.any():
                idx = np.nonzero(inside)[0]
                cs = (float(self._nulls[idx[0]]), float(self._nulls[idx[-1]]))
                if self._cs is not None:
                    merged = (max(cs[0], self._cs[0]), min(cs[1], self._cs[1]))
                    cs = merged if merged[0] <= merged[1] else cs
                self._cs = cs
            else:
                # every shift searched is rejected: the change lies beyond an edge, on the
                # data's side (ranks saturate there, so the whole grid falls in one block);
                # the interval is that edge, shown unbounded outward, never the whole range
                middle = float(np.median(np.asarray(self._d)))
                if middle < self._nulls[0]:
                    self._cs = (float(self._nulls[0]), float(self._nulls[0]))
                elif middle > self._nulls[-1]:
                    self._cs = (float(self._nulls[-1]), float(self._nulls[-1]))
            if self._cs is not None:
                lo, hi = to_pct(self._cs[0]), to_pct(self._cs[1])
                if self._cs[0] <= self._nulls[0] or self._cs[1] >= self._nulls[-1]:
                    warnings.append(
                        f"the interval reaches the edge of the tested range ({edge_text()}): "
                        "not yet bounded on that side"
                    )
        needed = None
        if done and verdict == "inconclusive" and n >= 2:
            d = np.asarray(self._d)
            needed = runs_needed(
                n_now=n,
                log_sd=float(np.std(d, ddof=1)),
                log_shift=float(np.median(d)),
                margin_log=self._up,
                alpha=self.alpha,
                paired=True,
            )
            if needed is not None:
                # a sequential test pays for looking often: plan with a 1.5x allowance
                needed = math.ceil(needed * 1.5)
        if n < 6 and not done:
            warnings.append("too few blocks for any verdict yet")
        return SequentialState(
            name=self.name,
            direction=self.direction,
            n_blocks=n,
            verdict=verdict,
            done=done,
            estimate_pct=estimate,
            ci_low_pct=lo,
            ci_high_pct=hi,
            e_value=math.exp(log_e0) if n else 1.0,
            e_value_equivalence=e_equiv,
            alpha=self.alpha,
            margin_pct=self.margin_pct,
            runs_needed=needed,
            reason=reason,
            warnings=tuple(warnings),
        )


def signed_rank_scores(x: NDArray[np.float64]) -> NDArray[np.float64]:
    """The sequential signed-rank scores g_i = sign(x_i) R_i / i of `_Bettors`, for whole paths.

    `x` has shape (..., n): the last axis is time.  R_i is the (mid-)rank of |x_i| among
    |x_1|..|x_i|, so g_i uses the past only and the path can be recomputed on any prefix
    with the same result — which lets a caller feed blocks one at a time (the lab) or many
    at once (a simulation) and stop at the same block.
    """
    ax = np.abs(x)
    n = ax.shape[-1]
    past = np.tril(np.ones((n, n), dtype=bool))  # [i, j]: j <= i
    less = (ax[..., None, :] < ax[..., :, None]) & past
    same = (ax[..., None, :] == ax[..., :, None]) & past
    rank = less.sum(axis=-1) + 0.5 * (same.sum(axis=-1) + 1)
    return np.asarray(np.sign(x) * rank / np.arange(1, n + 1), dtype=np.float64)


def one_sided_log_wealth(
    x: NDArray[np.float64], stakes: NDArray[np.float64]
) -> NDArray[np.float64]:
    """Log wealth after each block of the bettor that `x` is shifted upwards (its null: x is
    symmetric about 0, or shifted down), a mixture over the constant `stakes` as in
    `SequentialDecision`.  Shape of `x`: (..., n); result: the same.  Under the null it is a
    non-negative martingale, so P(it ever reaches log(1/alpha)) <= alpha (Ville)."""
    g = signed_rank_scores(x)
    per_stake = np.cumsum(np.log1p(g[..., None] * stakes), axis=-2)  # (..., n, S)
    out = np.logaddexp.reduce(per_stake, axis=-1) - math.log(stakes.size)
    return np.asarray(out, dtype=np.float64)
