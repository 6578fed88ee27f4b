"""The bisect's report data: the engine's outcome with commit names, and the compare
machinery's table of parent against culprit (the kernel evidence that moved).  Reads the
repository and the store; formats live in `iolab.report.bisect_*`."""

from __future__ import annotations

from iolab.analysis.build import Options, pair_report
from iolab.analysis.select import Selector
from iolab.bisect import git
from iolab.bisect.driver import Setup
from iolab.errors import SelectorError
from iolab.model.bisect import GOOD, Outcome
from iolab.report import bisect_json
from iolab.report.bisect_model import BisectReport
from iolab.report.model import Report
from iolab.store.store import Store


def build_report(
    store_report: Report | None, setup: Setup, outcome: Outcome, status: str
) -> BisectReport:
    n = len(setup.shas) - 1
    wanted = {GOOD, n - 1}
    wanted |= {r.index for r in outcome.steps}
    wanted |= set(outcome.unbuildable)
    if outcome.first is not None and outcome.last is not None:
        wanted |= set(range(outcome.first - 1, outcome.last + 1))
    commits = {i: git.describe(setup.repo, setup.sha(i)) for i in sorted(wanted)}
    engine = setup.engine.s
    return BisectReport(
        run_id=setup.run_id,
        status=status,
        kpi=setup.kpi,
        direction=setup.direction.value,
        alpha=engine.alpha,
        margin_pct=engine.margin_pct,
        good=commits[GOOD],
        bad=commits[n - 1],
        candidates=n,
        outcome=outcome,
        commits=commits,
        builds=dict(setup.builds),
        evidence=store_report,
        cache=str(setup.cache),
    )


def evidence(store: Store, setup: Setup, outcome: Outcome) -> Report | None:
    """`iolab compare` of the verification's two commits inside this run (paired by block)."""
    if outcome.verify is None:
        return None
    parent, child = setup.sha(outcome.verify.a), setup.sha(outcome.verify.b)
    run = setup.run_id

    def sel(sha: str) -> Selector:
        return Selector(f"run:{run}/variant={sha[:12]}", run_id=run, variant=sha)

    engine = setup.engine.s
    try:
        return pair_report(
            store,
            sel(parent),
            sel(child),
            Options(alpha=engine.alpha, margin_pct=engine.margin_pct),
        )
    except SelectorError:
        return None


def conclude(setup: Setup, outcome: Outcome, status: str) -> BisectReport:
    """The report of a finished (or stopped) bisect, also kept in its run's meta so that
    `iolab report` and the site can show it later without measuring again."""
    report = build_report(evidence(setup.store, setup, outcome), setup, outcome, status)
    setup.store.update_run_meta(setup.run_id, {"bisect_result": bisect_json.to_json(report)})
    return report
