"""The bisect's report data, for every mode: the engine's outcome with each arm named (a
commit from the repository, a release, a kernel commit with the release it built), and the
compare machinery's table of parent against culprit (the evidence that moved).  Reads the
repository and the store; formats live in `iolab.report.bisect_*`."""

from __future__ import annotations

from dataclasses import replace

from iolab.analysis.build import Options, pair_report
from iolab.analysis.select import Selector
from iolab.bisect.session import Session
from iolab.errors import IolabError
from iolab.model.bisect import GOOD, Outcome
from iolab.report import bisect_json
from iolab.report.bisect_model import BisectReport
from iolab.report.model import Report


def evidence(session: Session, outcome: Outcome) -> Report | None:
    """`iolab compare` of the verification's two arms inside this run (paired by block)."""
    if outcome.verify is None:
        return None
    run = session.run_id

    def sel(index: int) -> Selector:
        name = session.name(index)
        return Selector(f"run:{run}/variant={session.label(name)}", run_id=run, variant=name)

    s = session.settings
    try:
        return pair_report(
            session.store,
            sel(outcome.verify.a),
            sel(outcome.verify.b),
            Options(alpha=s.alpha, margin_pct=s.margin_pct),
        )
    except IolabError:
        return None


def record_in_registry(
    session: Session, outcome: Outcome, *, stopped: bool = False
) -> tuple[int, ...]:
    """A bisect over a git range answers the registry (`history.answers`): the
    entry `--regression ID` named, else every open or confirmed entry whose base and commit
    are its good and bad ends (an entry imported from a robot mail).  "found" records the
    culprit, "range" the range from the last good commit to the last candidate.  A bisect
    `stopped` by its time budget records the range its search had narrowed to (its reason
    and the resume in the note) — the steps graded so far are what the lab knows, however
    few — or "not known" when it stopped before the ends were shown to differ; a `--resume`
    of the same run replaces that answer with its own."""
    from iolab.history.answers import record_bisect

    s = session.settings
    if s.mode == "releases":
        return ()
    culprit = commit_range = note = None
    if stopped:
        note = f"{outcome.reason}; `iolab bisect --resume {session.run_id}` goes on"
    if outcome.kind == "found" and outcome.first is not None and not stopped:
        culprit = session.name(outcome.first)
    elif outcome.kind == "range" and outcome.first is not None and outcome.last is not None:
        commit_range = f"{session.name(outcome.first - 1)}..{session.name(outcome.last)}"
    kind = "range" if stopped and commit_range else outcome.kind
    if (kind == "found" and culprit is None) or (kind == "range" and commit_range is None):
        kind = "not known"
    return tuple(
        record_bisect(
            session.store,
            s.arms[0],
            s.arms[-1],
            kind,
            run_id=session.run_id,
            culprit=culprit,
            commit_range=commit_range,
            regression_id=s.regression,
            note=note,
        )
    )


def build_report(session: Session, outcome: Outcome, status: str) -> BisectReport:
    n = len(session.settings.arms) - 1
    wanted = {GOOD, n - 1, *(r.index for r in outcome.steps), *outcome.unbuildable}
    if outcome.first is not None and outcome.last is not None:
        wanted |= set(range(outcome.first - 1, outcome.last + 1))
    commits = {
        i: session.source.describe(session.name(i), session.builds.get(session.name(i)))
        for i in sorted(wanted)
    }
    s = session.settings
    return BisectReport(
        run_id=session.run_id,
        status=status,
        kpi=s.kpi,
        direction=s.direction.value,
        alpha=s.alpha,
        margin_pct=s.margin_pct,
        good=commits[GOOD],
        bad=commits[n - 1],
        candidates=n,
        outcome=outcome,
        commits=commits,
        builds={name: b.state for name, b in session.builds.items()},
        evidence=evidence(session, outcome),
        cache=s.cache or "",
        search=s.search,
        grade=s.grade,
    )


def conclude(session: Session, outcome: Outcome, status: str) -> BisectReport:
    """The report of a finished (or stopped) bisect, also kept in its run's meta so that
    `iolab report` and the site can show it later without measuring again."""
    report = build_report(session, outcome, status)
    if status in ("finished", "interrupted"):  # interrupted: its time budget ran out
        stopped = status == "interrupted"
        report = replace(report, registry=record_in_registry(session, outcome, stopped=stopped))
    session.store.update_run_meta(session.run_id, {"bisect_result": bisect_json.to_json(report)})
    return report
