"""The bisection as a pure state machine: it says what to measure, takes the measured
values, and ends with a typed `Outcome`.  Every bisect's session (`iolab.bisect.session`) and
the simulation (`bench/sim_bisect.py`) run this same code.

Order: (1) the ends — good against bad in two-arm randomized blocks with the ab test
(`SequentialDecision`, at alpha, one-sided: a bisect asks whether bad is worse, so the side
not asked about costs no evidence); anything but "regression" ends here, never with a culprit;
(2) the search — each queried candidate graded against the ends, the error budget spread over
the steps: by default classified between the ends as the ends' test measured them, the good
end beside it in each block (`ClassifyStep`, `grade="classify"`), or in blocks of good, candidate
and bad by a randomization test (`StepTest`, `grade="randomized"`); (3) the verification —
the newest good commit against the
oldest bad one (a commit and its parent, or the ends of a range of unbuildable commits) in a
fresh two-arm A/B at alpha; a culprit that does not reproduce is not reported as found.

Error budget.  With K = ceil(log2 n) (the queries binary search needs), steps 1..K are
graded at alpha/(K+1) each and step K+j at alpha/(K+1)·2^-j, so all steps together spend at
most alpha; a wrong culprit needs a wrongly graded step AND a verification that reproduces a
difference that is not there, so its probability is below alpha (in practice far below).
The probabilistic search (the default, chosen by bench/sim_bisect.py: docs/bisect.md) grades
each query at `query_alpha` (alpha/5) and tolerates wrong grades instead: its posterior treats
every grade as wrong with that probability, and it stops when one commit (or one group of
unbuildable commits and the buildable one after them) holds 1 - alpha/2 of the mass.  Either
way a named culprit must then reproduce in the verification, itself at alpha.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import cast

import numpy as np
from numpy.typing import NDArray

from iolab.bisect.search import BinarySearch, ProbabilisticSearch
from iolab.bisect.step import ClassifyStep, StepTest, median_pct
from iolab.model.bisect import (
    GOOD,
    GradeKind,
    Measure,
    Outcome,
    OutcomeKind,
    SearchKind,
    StepRecord,
    TestSummary,
)
from iolab.model.metrics import Direction
from iolab.stats.sequential import SequentialDecision


@dataclass(frozen=True)
class Settings:
    n: int  # candidates (commits after good, up to and including bad)
    direction: Direction  # of the KPI: which way is worse
    alpha: float = 0.05
    margin_pct: float = 1.0  # ends: "no change" means within ±margin
    max_blocks: int = 300  # per test (ends, each step, verification)
    search: SearchKind = "probabilistic"
    query_alpha: float | None = None  # probabilistic search only; default alpha / 5
    grade: GradeKind = "classify"
    sign_bets: bool = False  # the ends' and the verification's tests bet on signs too
    # the ends' and the verification's tests ask one-sided whether bad is worse (a run
    # stored before this existed resumes two-sided)
    one_sided: bool = True


# the classified steps learn the noise from the ends' blocks: ends shown to differ sooner
# are measured on to this many blocks (a spread from 3 blocks is a guess)
ENDS_TO_FIT = 6


def step_end(step: int) -> int:
    """The end a classified step measures its candidate beside (0 good, 1 bad): the good
    end, in every step.  One end for all of a step's blocks lets a host that boots per
    switch run a pair of blocks with one boot per kernel, and the same end from step to
    step spares the first block's boot half the time (bench/sim_step_ends.py: 47.5 boots a
    simulated 17-commit bisect against 52.2 alternating the ends, the same share found)."""
    del step
    return 0


def step_alpha(alpha: float, n: int, step: int) -> float:
    """The error budget of search step `step` (1-based): see the module docstring."""
    k = max(1, math.ceil(math.log2(max(n, 2))))
    share = alpha / (k + 1)
    return share if step <= k else share * 0.5 ** (step - k)


def _summary(a: int, b: int, decision: SequentialDecision) -> TestSummary:
    s = decision.state if decision.state is not None else decision.finish()
    return TestSummary(
        a=a,
        b=b,
        blocks=s.n_blocks,
        verdict=s.verdict,
        estimate_pct=s.estimate_pct,
        ci_low_pct=s.ci_low_pct,
        ci_high_pct=s.ci_high_pct,
        e_value=s.e_value,
        runs_needed=s.runs_needed,
        alpha=s.alpha,
    )


class Bisection:
    def __init__(self, settings: Settings, *, track_interval: bool = True, kpi: str = "kpi"):
        if settings.n < 1:
            raise ValueError("a bisection needs at least one commit after good")
        self.s = settings
        self.worse = -1.0 if settings.direction is Direction.HIGHER else 1.0
        self.query_alpha = (
            settings.query_alpha if settings.query_alpha is not None else settings.alpha / 5
        )
        self._track = track_interval
        self._kpi = kpi
        self.search: BinarySearch | ProbabilisticSearch = (
            BinarySearch(settings.n)
            if settings.search == "binary"
            else ProbabilisticSearch(settings.n, self.query_alpha, settings.alpha / 2)
        )
        self.phase: str = "ends"
        self.ends = self._decision(settings.alpha)
        self.ends_summary: TestSummary | None = None
        self.step: StepTest | ClassifyStep | None = None
        self.ends_gaps: list[float] = []  # log good - log bad, per block of the ends' test
        self.query: int | None = None
        self.records: list[StepRecord] = []
        self.verify: SequentialDecision | None = None
        self.verify_arms: tuple[int, int] | None = None
        self.blocks = 0
        self.samples = 0
        self._outcome: Outcome | None = None
        self._warnings: list[str] = []

    def _decision(self, alpha: float) -> SequentialDecision:
        return SequentialDecision(
            self._kpi,
            direction=self.s.direction,
            alpha=alpha,
            margin_pct=self.s.margin_pct,
            max_blocks=self.s.max_blocks,
            track_interval=self._track,
            sign_bets=self.s.sign_bets,
            one_sided=self.s.one_sided,
        )

    # -- what next ------------------------------------------------------------------------

    @property
    def done(self) -> bool:
        return self._outcome is not None

    @property
    def outcome(self) -> Outcome:
        if self._outcome is None:
            raise RuntimeError("the bisection has not ended")
        # the counts include the block whose values ended it
        return replace(self._outcome, blocks=self.blocks, samples=self.samples)

    def action(self) -> Measure | None:
        if self._outcome is not None:
            return None
        n = self.s.n
        if self.phase == "ends":
            return Measure("ends", (GOOD, n - 1), 0)
        if self.phase == "step":
            if self.step is None:
                self._next_query()
                if self._outcome is not None or self.phase != "step":
                    return self.action()
            assert self.query is not None
            if isinstance(self.step, ClassifyStep):
                end = (GOOD, n - 1)[self.step.end_for(self.step.blocks)]
                return Measure("step", (end, self.query), len(self.records) + 1)
            return Measure("step", (GOOD, self.query, n - 1), len(self.records) + 1)
        assert self.verify_arms is not None
        return Measure("verify", self.verify_arms, len(self.records) + 1)

    def _next_query(self) -> None:
        q = self.search.query()
        if q is not None and len(self.records) >= 4 * math.ceil(math.log2(max(self.s.n, 2))):
            first, last = self._range()
            self._end("range", f"no answer after {len(self.records)} steps", first, last)
            return
        if q is None:
            self._start_verify()
            return
        self.query = q
        step_no = len(self.records) + 1
        alpha = (
            step_alpha(self.s.alpha, self.s.n, step_no)
            if self.s.search == "binary"
            else self.query_alpha
        )
        self.step = (
            ClassifyStep(alpha, self.s.max_blocks, np.array(self.ends_gaps), step_end(step_no))
            if self.s.grade == "classify"
            else StepTest(alpha, self.s.max_blocks, self.worse)
        )

    def _start_verify(self) -> None:
        first, last = self.search.answer()
        self.phase = "verify"
        self.verify_arms = (first - 1, last)
        self.verify = self._decision(self.s.alpha)

    # -- events from the lab --------------------------------------------------------------

    def unbuildable(self, index: int) -> None:
        """`index` cannot be built: a search skips it (like `git bisect skip`); an end or the
        verification's commit that cannot be built ends the bisection."""
        if self._outcome is not None:
            return
        if index in (GOOD, self.s.n - 1):
            which = "good" if index == GOOD else "bad"
            self._end("not known", f"the {which} end cannot be built")
            return
        self.search.unbuildable.add(index)
        if self.phase == "step" and self.query == index and self.step is not None:
            if self.step.blocks:
                raise ValueError("a commit measured already cannot become unbuildable")
            self.step = None
            self.query = None

    def feed(self, values: NDArray[np.float64]) -> int:
        """Measured blocks: rows of KPI values in the order of `action().arms`; returns how
        many were used (a decision may come before the last row)."""
        rows = np.log(np.asarray(values, dtype=np.float64))
        measure = self.action()
        if measure is None or rows.ndim != 2 or rows.shape[1] != len(measure.arms):
            return 0
        took = self._feed_phase(rows)
        self.blocks += took
        self.samples += took * len(measure.arms)
        return took

    def _feed_phase(self, rows: NDArray[np.float64]) -> int:
        if self.phase == "ends":
            if self.ends_summary is None:
                used = self._feed_pairs(self.ends, rows, self._ends_done)
            else:  # shown to differ: measured on to fit the noise the classified steps use
                used = min(rows.shape[0], ENDS_TO_FIT - len(self.ends_gaps))
            self.ends_gaps.extend(float(a - b) for a, b in rows[:used])
            regression = self.ends_summary is not None and self.ends_summary.verdict == "regression"
            if self.phase == "ends" and regression and self._noise_known():
                self.phase = "step"
                if self.s.n == 1:
                    self._start_verify()
            return used
        if self.phase == "step":
            assert self.step is not None and self.query is not None
            if isinstance(self.step, ClassifyStep):
                beside_good = self.step.end_for(self.step.blocks) == 0
                self.step.feed_one(float(rows[0, 0]), float(rows[0, 1]), beside_good)
                took = 1
            else:
                took = self.step.feed(rows)
            if self.step.verdict is not None:
                self._step_done()
            return took
        assert self.verify is not None
        return self._feed_pairs(self.verify, rows, self._verify_done)

    @staticmethod
    def _feed_pairs(decision: SequentialDecision, rows: NDArray[np.float64], then: object) -> int:
        used = 0
        for a, b in rows:
            state = decision.update([(math.exp(a), math.exp(b))])
            used += 1
            if state.done:
                assert callable(then)
                then()
                break
        return used

    def _ends_done(self) -> None:
        summary = _summary(GOOD, self.s.n - 1, self.ends)
        self.ends_summary = summary
        if summary.verdict == "regression":
            return  # the search starts once the noise is known (_feed_phase)
        if summary.verdict == "inconclusive":
            more = (
                f" — about {summary.runs_needed} more runs per end" if summary.runs_needed else ""
            )
            self._end("not known", f"the ends did not differ within the budget{more}")
        elif summary.verdict == "no change":
            self._end(
                "no regression",
                f"no regression between the ends: good and bad are within ±{self.s.margin_pct:g}%",
            )
        else:
            self._end("no regression", "no regression between the ends: bad is better than good")

    def _noise_known(self) -> bool:
        """Only classified steps need the ends' noise, and only when there is a step."""
        return self.s.grade != "classify" or self.s.n == 1 or len(self.ends_gaps) >= ENDS_TO_FIT

    def _step_done(self) -> None:
        step, q = self.step, self.query
        assert step is not None and q is not None and step.verdict is not None
        self.records.append(
            StepRecord(
                step=len(self.records) + 1,
                index=q,
                blocks=step.blocks,
                verdict=step.verdict,
                alpha=step.alpha,
                vs_good_pct=median_pct(step.d_good),
                vs_bad_pct=median_pct(step.d_bad),
                e_like_bad=math.exp(step.log_like_bad),
                e_like_good=math.exp(step.log_like_good),
            )
        )
        self.step, self.query = None, None
        if step.verdict in ("good", "bad"):
            self.search.record(q, step.verdict == "bad")
            return
        if (
            step.verdict == "undecided"
            and isinstance(step, ClassifyStep)
            and isinstance(self.search, ProbabilisticSearch)
        ):  # what the step saw still counts; another query follows
            self.search.record_ratio(q, step.llr)
            return
        first, last = self._range()
        why = (
            f"commit {q} behaves like neither end (more than one change in the range?)"
            if step.verdict == "both"
            else f"commit {q} could not be graded within {step.max_blocks} blocks"
        )
        self._end("range", why, first, last)

    def _range(self) -> tuple[int, int]:
        """Where the culprit is, as far as known: binary search's (lo, hi]; for the
        probabilistic search the span of the most probable commits holding 1 - alpha."""
        if isinstance(self.search, BinarySearch):
            return self.search.answer()
        post = np.exp(self.search.log_post)
        order = np.argsort(-post)
        mass, chosen = 0.0, []
        for i in order:
            chosen.append(int(i))
            mass += float(post[i])
            if mass >= 1 - self.s.alpha:
                break
        return min(chosen), max(chosen)

    def _verify_done(self) -> None:
        assert self.verify_arms is not None and self.verify is not None
        parent, child = self.verify_arms
        summary = _summary(parent, child, self.verify)
        first = parent + 1
        if summary.verdict == "regression":
            kind = "found" if first == child else "range"
            why = (
                "the culprit reproduces against its parent"
                if kind == "found"
                else "the regression reproduces across commits that cannot be built"
            )
            self._end(kind, why, first, child, verify=summary)
        else:
            self._end(
                "not known",
                f"commit {child} did not reproduce against {parent} ({summary.verdict}): "
                "a step was probably graded wrongly",
                first,
                child,
                verify=summary,
            )

    def stop(self, reason: str) -> None:
        """The time or run budget ran out: end with what is known."""
        if self._outcome is not None:
            return
        if self.phase == "ends" and self.ends_summary is None:
            self.ends.finish(reason)
            self.ends_summary = _summary(GOOD, self.s.n - 1, self.ends)
            self._end("not known", f"{reason} before the ends were shown to differ")
            return
        if self.step is not None:
            self.step.give_up()
        first, last = self._range()
        verify = None
        if self.verify is not None and self.verify_arms is not None:
            self.verify.finish(reason)
            verify = _summary(*self.verify_arms, self.verify)
        self._end("range", f"{reason} before the search ended", first, last, verify=verify)

    def _end(
        self,
        kind: str,
        reason: str,
        first: int | None = None,
        last: int | None = None,
        *,
        verify: TestSummary | None = None,
    ) -> None:
        self.phase = "done"
        self._outcome = Outcome(
            kind=cast(OutcomeKind, kind),
            reason=reason,
            first=first,
            last=last,
            ends=self.ends_summary,
            verify=verify,
            steps=tuple(self.records),
            unbuildable=tuple(sorted(self.search.unbuildable)),
            blocks=self.blocks,
            samples=self.samples,
            warnings=tuple(self._warnings),
        )
