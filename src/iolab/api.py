"""iolab from Python: the calls the commands make, with typed results (docs/api.md).

Each call opens the store it is given (a path, a SQLAlchemy URL, a `StoreLocation`, or None
for $IOLAB_DB / the default file), does one job through the services (`iolab.runs`,
`iolab.ab`, `iolab.bisect`, `iolab.analysis`) and closes the store again.  Errors are
`IolabError`s with one line and an exit code (docs/exit-codes.md); nothing is printed.  Lab
calls need root, as `iolab run` does, and restore the machine whatever happens.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from iolab.store.location import StoreLocation

if TYPE_CHECKING:
    from iolab.ab.loop import BlockReporter
    from iolab.ab.run import AbResult
    from iolab.bisect.session import Progress as BisectProgress
    from iolab.lab.runner import Reporter
    from iolab.model.history import History
    from iolab.model.regression import Regression
    from iolab.model.result import Result
    from iolab.model.sample import RunInfo, Sample
    from iolab.report.bisect_model import BisectReport
    from iolab.report.model import Report
    from iolab.runs.plan_run import RunOutcome
    from iolab.stats.types import Correction

Db = str | StoreLocation | None


def parse(path: str) -> list[Result]:
    """Every result found in a file (fio JSON / normal / terse, xfs_io, dd; `-` = stdin)."""
    from iolab.ingest.detect import parse_source

    return parse_source(path)


def import_files(
    paths: Sequence[str], label: str, *, tags: Mapping[str, str] | None = None, db: Db = None
) -> int:
    """`iolab import`: every file's results stored as one import run (all or nothing); its
    id.  Many files are parsed by a second process while the first stores them."""
    from iolab.runs.imports import import_files as run_import

    return run_import(paths, label, tags, db).run_id


def run_plan(
    plan_path: str,
    *,
    db: Db = None,
    profile: str | None = None,
    label: str | None = None,
    tags: Mapping[str, str] | None = None,
    destroy_data: bool = False,
    reporter: Reporter | None = None,
) -> RunOutcome:
    """`iolab run PLAN`: every block of the plan, every sample stored; the run's outcome."""
    from iolab.plan import load_plan
    from iolab.runs import lifecycle, plan_run
    from iolab.store import open_store

    checked = lifecycle.check(load_plan(plan_path, profile), destroy_data=destroy_data)
    with open_store(db) as store:
        run = lifecycle.start(store, checked, label=label, tags=tags)
        return plan_run.execute(run, destroy_data=destroy_data, reporter=reporter)


def run_ab(
    plan_path: str,
    *,
    db: Db = None,
    profile: str | None = None,
    alpha: float = 0.05,
    margin_pct: float = 1.0,
    max_blocks: int | None = None,
    max_time_s: float | None = None,
    label: str | None = None,
    tags: Mapping[str, str] | None = None,
    destroy_data: bool = False,
    reporter: BlockReporter | None = None,
) -> AbResult:
    """`iolab ab PLAN`: randomized blocks until every KPI has a sequential verdict or the
    budget is spent; the stop reason, every KPI's state and the report."""
    from iolab import ab
    from iolab.ab.loop import SilentBlockReporter
    from iolab.plan import load_plan
    from iolab.store import open_store

    checked = ab.run.check(load_plan(plan_path, profile), destroy_data=destroy_data)
    request = ab.run.NewAb(checked, alpha, margin_pct, max_blocks, max_time_s, label, tags)
    with open_store(db) as store:
        reporting = reporter or SilentBlockReporter()
        return ab.run.execute(store, request, reporting, destroy_data=destroy_data)[1]


def resume_ab(
    run_id: int,
    *,
    db: Db = None,
    max_blocks: int | None = None,
    max_time_s: float | None = None,
    destroy_data: bool = False,
    reporter: BlockReporter | None = None,
) -> AbResult:
    """`iolab ab --resume RUN`: the same test, replayed from the stored blocks, continued."""
    from iolab import ab
    from iolab.ab.loop import SilentBlockReporter
    from iolab.store import open_store

    request = ab.run.ResumedAb(run_id, max_blocks, max_time_s, destroy_data)
    with open_store(db, must_exist=True) as store:
        reporting = reporter or SilentBlockReporter()
        return ab.run.execute(store, request, reporting, destroy_data=destroy_data)[1]


def bisect(
    plan_path: str,
    *,
    repo: str | Path,
    good: str,
    bad: str,
    db: Db = None,
    build: Sequence[str] = (),
    kpi: str | None = None,
    alpha: float = 0.05,
    margin_pct: float = 1.0,
    max_blocks: int = 300,
    max_time_s: float | None = None,
    search: str = "probabilistic",
    grade: str = "classify",
    cache: str | Path | None = None,
    destroy_data: bool = False,
    progress: BisectProgress | None = None,
) -> BisectReport:
    """`iolab bisect PLAN --repo R --good G --bad B`: which commit changed the KPI — found,
    a range, no regression, or not known (docs/bisect.md) — as the report the command
    renders; `report.outcome.kind` is the result.  `build` is the build command's argv."""
    from iolab.bisect import session as bisect_session
    from iolab.bisect.summary import conclude
    from iolab.plan import load_plan
    from iolab.store import open_store

    request = bisect_session.Request(
        plan=load_plan(plan_path),
        mode="commits",
        repo=Path(repo),
        good=good,
        bad=bad,
        build=tuple(build),
        kpi=kpi,
        alpha=alpha,
        margin_pct=margin_pct,
        max_blocks=max_blocks,
        cache=Path(cache) if cache is not None else None,
        search="binary" if search == "binary" else "probabilistic",
        grade="randomized" if grade == "randomized" else "classify",
    )
    checked = bisect_session.check(request, destroy_data=destroy_data)
    with open_store(db) as store:
        setup = bisect_session.start(store, checked)
        outcome, status = bisect_session.run(
            setup, max_time_s=max_time_s, destroy_data=destroy_data, progress=progress
        )
        return conclude(setup, outcome, status)


def resume_bisect(
    run_id: int,
    *,
    db: Db = None,
    max_time_s: float | None = None,
    destroy_data: bool = False,
    progress: BisectProgress | None = None,
) -> BisectReport:
    """`iolab bisect --resume RUN`: its stored blocks replayed, then measured on."""
    from iolab.bisect import session as bisect_session
    from iolab.bisect.summary import conclude
    from iolab.store import open_store

    with open_store(db, must_exist=True) as store:
        setup = bisect_session.resume(store, run_id, destroy_data=destroy_data)
        outcome, status = bisect_session.run(
            setup, max_time_s=max_time_s, destroy_data=destroy_data, progress=progress
        )
        return conclude(setup, outcome, status)


def compare(
    a: str,
    b: str | None = None,
    *,
    db: Db = None,
    by: str = "variant",
    baseline: str | None = None,
    alpha: float = 0.05,
    margin_pct: float = 1.0,
    metrics: Sequence[str] = (),
    correction: Correction = "holm",
    record: bool = False,
) -> Report:
    """`iolab compare A [B]`: B against A (selector text, docs/compare.md), or with B None
    every value of `by` in run A against `baseline`.  Render it with `iolab.report.render`.
    The store is only read unless `record` (`--record`): KPI regressions into the registry."""
    from iolab.analysis.build import Options, by_report, pair_report
    from iolab.analysis.select import parse_selector
    from iolab.store import open_reader, open_store

    options = Options(alpha, margin_pct, tuple(metrics), correction)
    sel_a = parse_selector(a)
    sel_b = parse_selector(b) if b is not None else None
    with open_reader(db) as reader:
        if sel_b is None:
            report = by_report(reader, sel_a, by, baseline, options)
        else:
            report = pair_report(reader, sel_a, sel_b, options)
    if record:
        from iolab.history.registry import record_report

        with open_store(db, must_exist=True) as store:
            record_report(store, report, "compare", a, b)  # as `iolab compare --record`
    return report


def history(
    selector: str,
    *,
    db: Db = None,
    metrics: Sequence[str] = (),
    by: Sequence[str] = (),
    order: str = "time",
    record: bool = True,
) -> History:
    """`iolab history SELECTOR`: series, change points, and (with `record`) registry entries
    for KPI regressions (docs/history.md)."""
    from iolab.history.service import history as build_history
    from iolab.store import open_store

    with open_store(db, must_exist=True) as store:
        return build_history(store, selector, metrics, by, order, record=record)


def regressions(*, db: Db = None, status: Sequence[str] = ()) -> list[Regression]:
    """`iolab regressions`: the registry's entries with their logs, oldest first."""
    from iolab.history.service import regressions as entries
    from iolab.store import open_store

    with open_store(db, must_exist=True) as store:
        return entries(store, status)


def mark_regression(
    regression_id: int,
    status: str,
    *,
    db: Db = None,
    note: str | None = None,
    evidence: str | None = None,
) -> Regression:
    """`iolab regressions mark ID STATUS`: "fixed" needs `evidence` (a selector) that shows
    the metric back at its pre-regression level."""
    from iolab.history.service import mark
    from iolab.store import open_store

    with open_store(db, must_exist=True) as store:
        return mark(store, regression_id, status, note, evidence)


def runs(*, db: Db = None, label: str | None = None) -> list[RunInfo]:
    """The stored runs (optionally those with one label), oldest first."""
    from iolab.store import open_reader

    with open_reader(db) as store:
        return store.runs(label=label)


def samples(
    run_id: int,
    *,
    db: Db = None,
    metrics: Sequence[str] | None = None,
    failed_too: bool = False,
) -> list[Sample]:
    """A run's samples with their metrics and histograms (only `metrics`, if given)."""
    from iolab.store import open_reader

    with open_reader(db) as store:
        store.run(run_id)  # StoreError (one line) for a run that is not there
        return store.samples(
            run_id=run_id,
            metrics=list(metrics) if metrics is not None else None,
            status=None if failed_too else "ok",
        )


__all__ = [
    "bisect",
    "compare",
    "history",
    "import_files",
    "mark_regression",
    "parse",
    "regressions",
    "resume_ab",
    "resume_bisect",
    "run_ab",
    "run_plan",
    "runs",
    "samples",
]
