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
