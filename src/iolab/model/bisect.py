"""Typed results of a bisection: plain data that `iolab.bisect` fills and `iolab.report`'s
bisect formats render (here, one floor below both)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

Phase = Literal["ends", "step", "verify"]
StepVerdict = Literal["good", "bad", "undecided", "both"]
OutcomeKind = Literal["found", "range", "no regression", "not known"]
SearchKind = Literal["binary", "probabilistic"]
# how a search step grades its candidate: `classify` (one end beside the candidate per block,
# a sequential likelihood ratio between the two ends' measured behaviour) or `randomized`
# (good, candidate and bad in every block, a randomization test: iolab.bisect.step)
GradeKind = Literal["classify", "randomized"]

GOOD = -1  # the index of the good end; candidates are 0 .. n-1, the bad end is n-1


@dataclass(frozen=True)
class Measure:
    """What the lab should measure next: blocks of these commit indexes, in a random order
    per block (`arms` is the order the values are fed back in)."""

    phase: Phase
    arms: tuple[int, ...]
    step: int  # 0 for the ends, 1.. for search steps, the next number for the verification


@dataclass(frozen=True)
class StepRecord:
    """One graded candidate: how many blocks, where it sits, and the decision."""

    step: int
    index: int  # candidate index
    blocks: int
    verdict: StepVerdict
    alpha: float  # the error budget this step spent
    vs_good_pct: float | None  # median change of candidate against good (descriptive)
    vs_bad_pct: float | None  # median change of candidate against bad (descriptive)
    e_like_bad: float  # evidence against "candidate behaves like good"
    e_like_good: float  # evidence against "candidate behaves like bad"


@dataclass(frozen=True)
class TestSummary:
    """A two-arm sequential A/B inside the bisection (ends, or culprit against parent)."""

    a: int
    b: int
    blocks: int
    verdict: str  # regression | improvement | no change | inconclusive
    estimate_pct: float | None
    ci_low_pct: float | None
    ci_high_pct: float | None
    e_value: float
    runs_needed: int | None
    alpha: float


@dataclass(frozen=True)
class Outcome:
    """The answer.  `first`..`last` (candidate indexes, inclusive) hold the first bad commit:
    one commit when found; several for a range (unbuildable or undecided neighbours)."""

    kind: OutcomeKind
    reason: str
    first: int | None = None
    last: int | None = None
    ends: TestSummary | None = None
    verify: TestSummary | None = None
    steps: tuple[StepRecord, ...] = ()
    unbuildable: tuple[int, ...] = ()
    blocks: int = 0
    samples: int = 0
    warnings: tuple[str, ...] = field(default_factory=tuple)

    @property
    def culprit(self) -> int | None:
        return self.first if self.kind == "found" else None


@dataclass(frozen=True)
class Commit:
    sha: str
    subject: str
    author: str
    author_date: str  # ISO 8601, as git prints it
