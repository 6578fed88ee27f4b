"""Where to query next: plain binary search, or probabilistic bisection (Horstein; Waeber,
Frazier and Henderson 2013).  Pure; indexes only.

Positions: candidates 0 .. n-1 in history order, n-1 being the bad end; "the culprit is k"
means k is the first bad commit (k-1, or the good end for k = 0, is good).  A query at q asks
"is q bad?", i.e. "culprit <= q".  Unbuildable commits cannot be queried; a culprit inside an
unbuildable run is indistinguishable from the first buildable commit after it, so both
searches work on *groups*: an unbuildable run plus the buildable commit that ends it.
"""

from __future__ import annotations

import math

import numpy as np

from iolab.model.bisect import GOOD


def groups(n: int, unbuildable: set[int]) -> list[tuple[int, int]]:
    """(first, last) of each distinguishable group, in order; the last index is always n-1."""
    out: list[tuple[int, int]] = []
    start = 0
    for i in range(n):
        if i in unbuildable and i != n - 1:
            continue
        out.append((start, i))
        start = i + 1
    return out


class BinarySearch:
    """lo: newest commit known good (GOOD = the good end); hi: oldest known bad."""

    def __init__(self, n: int) -> None:
        self.n = n
        self.lo = GOOD
        self.hi = n - 1
        self.unbuildable: set[int] = set()

    def record(self, query: int, bad: bool) -> None:
        if bad:
            self.hi = min(self.hi, query)
        else:
            self.lo = max(self.lo, query)

    def query(self) -> int | None:
        """The buildable commit nearest the middle of (lo, hi), or None when the range is
        down to one group."""
        inside = [i for i in range(self.lo + 1, self.hi) if i not in self.unbuildable]
        if not inside:
            return None
        mid = (self.lo + self.hi) / 2
        return min(inside, key=lambda i: (abs(i - mid), i))

    def answer(self) -> tuple[int, int]:
        return self.lo + 1, self.hi


class ProbabilisticSearch:
    """A posterior over the culprit's position, updated from every graded query as if each
    grade were wrong with probability `p` (a bound on the step test's error), queried at the
    posterior median; done when one group holds `1 - stop` of the mass."""

    def __init__(self, n: int, p: float, stop: float) -> None:
        self.n = n
        self.p = p
        self.stop = stop
        self.log_post = np.full(n, -math.log(n))
        self.unbuildable: set[int] = set()

    @property
    def _cap(self) -> float:
        """A grade's weight: the log odds of a grade being right, log((1-p)/p)."""
        return math.log1p(-self.p) - math.log(self.p)

    def record(self, query: int, bad: bool) -> None:
        self.record_ratio(query, self._cap if bad else -self._cap)

    def record_ratio(self, query: int, log_ratio: float) -> None:
        """An ungraded query's evidence: the log likelihood ratio of "q is bad" over "q is
        good", trusted no further than a grade (clipped at log((1-p)/p)), so a step that
        ran out of blocks still moves the posterior by what it saw."""
        lr = min(max(log_ratio, -self._cap), self._cap)
        bad = -math.log1p(math.exp(-lr))  # log of the probability "bad" given a flat prior
        good = -math.log1p(math.exp(lr))
        self.log_post += np.where(np.arange(self.n) <= query, bad, good)
        self.log_post -= np.logaddexp.reduce(self.log_post)

    def _group_mass(self) -> list[tuple[tuple[int, int], float]]:
        post = np.exp(self.log_post)
        return [((a, b), float(post[a : b + 1].sum())) for a, b in groups(self.n, self.unbuildable)]

    def query(self) -> int | None:
        masses = self._group_mass()
        best = max(masses, key=lambda gm: gm[1])
        if best[1] >= 1 - self.stop:
            return None
        # the posterior median, as the group boundary that splits the mass most evenly
        # (querying q asks "culprit <= q", so only a group's last commit is a boundary)
        cum, best_q, best_gap = 0.0, None, 2.0
        for (_, last), mass in masses[:-1]:
            cum += mass
            if abs(cum - 0.5) < best_gap:
                best_q, best_gap = last, abs(cum - 0.5)
        return best_q

    def answer(self) -> tuple[int, int]:
        return max(self._group_mass(), key=lambda gm: gm[1])[0]
