"""Grading one candidate: does it behave like the good end or like the bad end?

Every block measures good, candidate and bad once, in a random order.  Write d_g = log c -
log g and d_b = log c - log b per block, and w = -1 when the regression lowers the KPI
(+1 when it raises it, e.g. latency).  If the candidate behaves like good, the lab's coin
that chose which of the block's positions candidate and good took makes the sign of d_g a
fair coin, whatever the drift — the argument of `iolab.stats.sequential`, with a 3-way
permutation in place of the 2-way one.  So a bettor on "w·d_g is shifted up" is a
non-negative martingale under "like good" and reaches 1/alpha with probability <= alpha;
when it does, the candidate is graded "bad".  Symmetrically a bettor on "-w·d_b is shifted
up" grades it "good".  Each grade is wrong with probability <= alpha (only one of the two
nulls can be true for a commit that is either good or bad).  Both bettors winning means the
candidate differs from both ends (two changes in the range): graded "both", and the
bisection ends with a range.  The bettors use iolab.stats's signed-rank score and stake
mixture (`one_sided_log_wealth`), with stakes sized for the step's block budget.
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import NDArray

from iolab.model.bisect import StepVerdict
from iolab.stats.sequential import one_sided_log_wealth, stake_grid


class StepTest:
    """Sequential grade of one candidate; feed rows (good, candidate, bad)."""

    def __init__(self, alpha: float, max_blocks: int, worse: float) -> None:
        self.alpha = alpha
        self.max_blocks = max_blocks
        self.worse = worse
        self.stakes = stake_grid(max_blocks, 2 * alpha)  # one-sided: log(1/alpha) to win
        self.threshold = math.log(1.0 / alpha)
        self.d_good = np.zeros(0)
        self.d_bad = np.zeros(0)
        self.verdict: StepVerdict | None = None
        self.log_like_bad = 0.0
        self.log_like_good = 0.0

    @property
    def blocks(self) -> int:
        return int(self.d_good.size)

    def feed(self, rows: NDArray[np.float64]) -> int:
        """Add blocks (rows of log values: good, candidate, bad) until a grade or the budget;
        returns how many rows were used (the rest are not part of this step)."""
        if self.verdict is not None or rows.shape[0] == 0:
            return 0
        room = self.max_blocks - self.blocks
        rows = rows[:room]
        n0 = self.blocks
        d_good = np.concatenate([self.d_good, rows[:, 1] - rows[:, 0]])
        d_bad = np.concatenate([self.d_bad, rows[:, 1] - rows[:, 2]])
        like_bad = one_sided_log_wealth(self.worse * d_good, self.stakes)
        like_good = one_sided_log_wealth(-self.worse * d_bad, self.stakes)
        hit = (like_bad[n0:] >= self.threshold) | (like_good[n0:] >= self.threshold)
        used = int(np.argmax(hit)) + 1 if hit.any() else rows.shape[0]
        end = n0 + used
        self.d_good, self.d_bad = d_good[:end], d_bad[:end]
        self.log_like_bad = float(like_bad[:end].max())
        self.log_like_good = float(like_good[:end].max())
        bad = self.log_like_bad >= self.threshold
        good = self.log_like_good >= self.threshold
        if bad and good:
            self.verdict = "both"
        elif bad or good:
            self.verdict = "bad" if bad else "good"
        elif end >= self.max_blocks:
            self.verdict = "undecided"
        return used

    def give_up(self) -> None:
        """Stop now (time budget): undecided unless a grade was reached."""
        if self.verdict is None:
            self.verdict = "undecided"


def median_pct(d: NDArray[np.float64]) -> float | None:
    return 100.0 * math.expm1(float(np.median(d))) if d.size else None


BOTH_BLOCKS = 4  # blocks before "both": one wild block among them cannot move the median far


class ClassifyStep:
    """Sequential classification of one candidate between the two ends as measured.

    The ends' test already measured good and bad side by side in randomized blocks; their
    log differences g - b estimate how far apart the ends sit (D) and how much a block's
    difference scatters (s).  A step then measures the candidate beside ONE end per block
    (the same end in every block of the step, `end`: the engine's `step_end`), so each block
    costs two samples instead of three and the drift between blocks cancels as in any
    paired design.
    For x = log c - log end, "like good" predicts x near 0 beside good and near D beside bad;
    "like bad" predicts -D and 0.  Both predictions are Student t with the ends' n - 1
    degrees of freedom and scale s·sqrt(1 + 1/n) (the spread of a new block's difference,
    with D's own uncertainty), so one wild sample moves the ratio little: the t's heavy tails
    bound its weight.  Wald's sequential probability ratio test adds the blocks' log
    likelihood ratios and grades at log(1/alpha) either way.

    The price: the grade's error rate is alpha only as far as the ends' blocks describe the
    noise (a model, not a randomization argument).  The bisection pays for that twice: its
    probabilistic search treats every grade as wrong with probability alpha, and a named
    culprit must still reproduce against its parent in a randomized A/B at the bisect's alpha
    (the verification) before it is reported as found.  A candidate whose measured position
    sits away from the chosen end's prediction (a t test of its median residual at alpha/10:
    at alpha itself, recorded noise with drift raised it in 1 of 25 bisects of a single
    change) is graded "both": it differs from both ends.  That grade ends a bisect, so it
    needs BOTH_BLOCKS blocks: a step that reaches its grade sooner with a residual off the
    prediction measures on, and the median keeps one wild block among them from deciding
    (a mean did: one slow block on a loaded machine ended a bisect with a range).
    """

    def __init__(
        self, alpha: float, max_blocks: int, ends: NDArray[np.float64], end: int = 0
    ) -> None:
        self.alpha = alpha
        self.end = end  # which end sits beside the candidate: 0 good, 1 bad
        self.threshold = math.log(1.0 / alpha)
        d = np.asarray(ends, dtype=np.float64)  # per ends block: log good - log bad
        self.n_ends = int(d.size)
        self.gap = float(np.mean(d)) if d.size else 0.0
        spread = float(np.std(d, ddof=1)) if d.size >= 2 else 0.0
        # floor: a tenth of the gap (two ends that agreed to the digit are not that precise)
        self.spread = max(spread, abs(self.gap) / 10, 1e-6)
        self.scale = self.spread * math.sqrt(1 + 1 / max(d.size, 1))
        self.df = max(self.n_ends - 1, 1)
        # Wald's expected sample size: the threshold over a block's mean log ratio (gap²/2s²
        # for normal noise); three times that, at least 8 blocks, before "undecided"
        per_block = self.gap**2 / (2 * self.scale**2)
        self.expected_blocks = math.ceil(self.threshold / per_block) if per_block > 0 else 0
        self.max_blocks = min(max_blocks, max(8, 3 * self.expected_blocks))
        self.x = np.zeros(0)
        self.beside = np.zeros(0, dtype=bool)  # True: the block's end was good
        self.verdict: StepVerdict | None = None
        self.llr = 0.0  # log likelihood ratio, "like bad" over "like good"

    def end_for(self, block_in_step: int) -> int:
        """Which end sits beside the candidate in this block of the step: 0 good, 1 bad —
        the same end in every block, so that a pair of blocks (one order, then its reverse)
        boots each kernel once on a host that switches kernels (see the class docstring)."""
        del block_in_step
        return self.end

    @property
    def blocks(self) -> int:
        return int(self.x.size)

    @property
    def d_good(self) -> NDArray[np.float64]:
        return self.x[self.beside]

    @property
    def d_bad(self) -> NDArray[np.float64]:
        return self.x[~self.beside]

    @property
    def log_like_bad(self) -> float:
        return max(self.llr, 0.0)

    @property
    def log_like_good(self) -> float:
        return max(-self.llr, 0.0)

    def _centres(self, beside_good: NDArray[np.bool_]) -> tuple[NDArray[np.float64], ...]:
        """Where x sits under "like good" and under "like bad", block by block."""
        like_good = np.where(beside_good, 0.0, self.gap)
        like_bad = np.where(beside_good, -self.gap, 0.0)
        return like_good, like_bad

    def feed_one(self, end: float, candidate: float, beside_good: bool) -> None:
        """One block: the log values of the end beside the candidate, and the candidate's."""
        from scipy import stats

        if self.verdict is not None:
            return
        self.x = np.append(self.x, candidate - end)
        self.beside = np.append(self.beside, beside_good)
        like_good, like_bad = self._centres(self.beside[-1:])
        x = self.x[-1]
        # one call on the unfrozen distribution: a frozen `stats.t(...)` per block spends
        # most of a simulated bisect formatting its docstrings
        bad, good = stats.t.logpdf([x - like_bad[0], x - like_good[0]], self.df, scale=self.scale)
        self.llr += float(bad - good)
        if abs(self.llr) >= self.threshold:
            grade: StepVerdict = "bad" if self.llr > 0 else "good"
            if not self._off_prediction(grade):
                self.verdict = grade
            elif self.blocks >= min(BOTH_BLOCKS, self.max_blocks):
                self.verdict = "both"
            # else: off the prediction in too few blocks to tell a second change from a
            # wild block; measure on
        if self.verdict is None and self.blocks >= self.max_blocks:
            self.verdict = "undecided"

    def _off_prediction(self, grade: StepVerdict) -> bool:
        """Whether the candidate's median residual from the grade's prediction is itself
        significant at alpha/10 (two-sided, the ends' degrees of freedom).  The median's
        standard error is taken as sqrt(pi/2) times the mean's (its large-sample value, an
        overstatement for the few blocks a step has: conservative), plus the gap's own
        uncertainty, which every block of the step shares."""
        from scipy import stats

        like_good, like_bad = self._centres(self.beside)
        centre = like_bad if grade == "bad" else like_good
        resid = float(np.median(self.x - centre))
        se = self.spread * math.sqrt(math.pi / 2 / self.blocks + 1 / max(self.n_ends, 1))
        limit = float(stats.t.ppf(1 - self.alpha / 20, self.df))
        return abs(resid) / se > limit

    def give_up(self) -> None:
        if self.verdict is None:
            self.verdict = "undecided"
