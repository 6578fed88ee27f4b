"""Opening and marking regression registry entries — the few calls every finder shares.

History opens an entry for a KPI change point in the bad direction; compare and ab for a
KPI "regression" verdict (`record_report`); bisect (when it lands) calls `open_regression`
with the culprit or range.  The same regression is entered once: its dedup key is the
metric, the case and the first point that shows it, and a history change point also
matches entries keyed on its neighbouring points (the search may place a step one point
earlier or later as data accumulate).

`fixed` needs evidence: a run (or selector) whose samples of the metric show "no change"
(or an improvement) against the pre-regression level, by iolab.stats.  The level is what
the finder recorded: the values before a history change point, or the A selector of a
compare/ab verdict.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from iolab.errors import IolabError
from iolab.model.metrics import Direction, metric_info
from iolab.model.regression import STATUSES, NewRegression, Origin, Regression
from iolab.store import registry as table
from iolab.store.store import Store

if TYPE_CHECKING:
    from iolab.history.series import RawSeries
    from iolab.history.types import ChangePoint, Point
    from iolab.report.model import Group, Report


def open_regression(store: Store, entry: NewRegression) -> tuple[int, bool]:
    """(id, created): a new open entry, or the one this regression already has."""
    return table.add(store, entry)


def _point_key(metric: str, case_key: str, point: Point) -> str:
    where = f"run={point.run_id}" + (f",sample={point.sample_id}" if point.sample_id else "")
    return f"{metric}|{case_key}|{where}"


def open_from_history(store: Store, raw: RawSeries, cp: ChangePoint, min_segment: int) -> int:
    pts = raw.points
    lo, hi = max(cp.index - min_segment // 2, 0), min(cp.index + min_segment // 2 + 1, len(pts))
    aliases = tuple(_point_key(raw.metric, raw.case.key, pts[i]) for i in range(lo, hi))
    before = pts[max(cp.index - cp.n_before, 0) : cp.index]
    rid, _ = open_regression(
        store,
        NewRegression(
            metric=raw.metric,
            case_key=raw.case.key,
            case=raw.case.to_json(),
            dedup_key=_point_key(raw.metric, raw.case.key, cp.after),
            origin="history",
            introduced_run_id=cp.after.run_id,
            last_good_run_id=cp.before.run_id,
            introduced_at=cp.time,
            commit_range=_range(cp.before, cp.after),
            change_pct=cp.change_pct,
            ci_low_pct=cp.ci_low_pct,
            ci_high_pct=cp.ci_high_pct,
            p_value=cp.p_value,
            details={
                "before_values": [p.value for p in before],
                "introduced": cp.after.ref,
                "last_good": cp.before.ref,
            },
            aliases=aliases,
        ),
    )
    return rid


def _range(before: Point, after: Point) -> str | None:
    """`A..B` from the points' `commit` tags (else their kernel tags), when both carry one."""
    for key in ("commit", "kernel"):
        a, b = before.tags.get(key), after.tags.get(key)
        if a and b:
            return f"{a}..{b}"
    return None


def record_report(
    store: Store,
    report: Report,
    origin: Origin,
    a_selector: str,
    b_selector: str | None = None,
    run_id: int | None = None,
) -> list[int]:
    """Open an entry for every KPI verdict "regression" of a compare or ab report; an ab
    run of an imported entry's base and commit answers that entry instead
    (`iolab.history.answers`).

    `a_selector` (with `b_selector` for a pair) is what the user selected: the A side of each
    group, narrowed to its cell, is kept as the pre-regression level that `mark fixed` will
    measure evidence against.  `run_id`: the run the regression shows in, when one is known.
    """
    from iolab.analysis.select import parse_selector
    from iolab.history.answers import answer_imported

    if run_id is None and b_selector is not None:
        run_id = parse_selector(b_selector).run_id
    # an ab run of an imported entry's two commits answers that entry (docs/history.md)
    # rather than opening a second one for the same regression
    answered = set()
    if origin == "ab" and run_id is not None:
        answered = {
            frozenset((base, bad)) for _, base, bad in answer_imported(store, report, run_id)
        }
    ids = []
    for group in report.groups:
        if frozenset((group.a_name, group.b_name)) in answered:
            continue
        cell = ",".join(f"{k}={group.cell[k]}" for k in sorted(group.cell))
        for m in group.comparison.kpis:
            if m.verdict != "regression":
                continue
            case = {"a": group.a_name, "b": group.b_name, "cell": dict(group.cell)}
            sides = f"{a_selector}|{b_selector or ''}|{group.a_name}|{group.b_name}|{cell}"
            rid, _ = open_regression(
                store,
                NewRegression(
                    metric=m.name,
                    case_key=f"{origin}|{sides}",
                    case=case,
                    dedup_key=f"{m.name}|{origin}|{sides}",
                    origin=origin,
                    introduced_run_id=run_id,
                    change_pct=m.change_pct,
                    ci_low_pct=m.ci_low_pct,
                    ci_high_pct=m.ci_high_pct,
                    p_value=m.p_value,
                    details={"before_selector": _side(report, group, a_selector)},
                ),
            )
            ids.append(rid)
    return ids


def _side(report: Report, group: Group, a_selector: str) -> str:
    """A selector for the A side of a group, to measure "fixed" against later."""
    parts = [a_selector]
    if report.mode == "by" and report.by:
        parts.append(f"{report.by}={group.a_name}")
    parts += [f"{k}={v}" for k, v in group.cell.items()]
    return "/".join(parts)


def regressions(store: Store, status: Sequence[str] | None = None) -> list[Regression]:
    for s in status or ():
        if s not in STATUSES:
            raise IolabError(f"--status {s!r}: expected one of {', '.join(STATUSES)}")
    return table.entries(store, status)


def mark(
    store: Store,
    regression_id: int,
    status: str,
    note: str | None = None,
    evidence: str | None = None,
) -> Regression:
    """Change an entry's status (logged); `fixed` only with evidence of the old level."""
    if status not in STATUSES:
        raise IolabError(f"status {status!r}: expected one of {', '.join(STATUSES)}")
    entry = table.get(store, regression_id)
    evidence_run: int | None = None
    if status == "fixed":
        if evidence is None:
            raise IolabError(
                f"regression {regression_id}: 'fixed' needs --evidence RUN (a run showing "
                f"{entry.metric} back at its pre-regression level)"
            )
        evidence_run = _check_fixed(store, entry, evidence)
    elif evidence is not None:
        evidence_run = _evidence_run(store, evidence)
    table.set_status(store, regression_id, status, note, evidence_run)
    return table.get(store, regression_id)


def _evidence_run(store: Store, evidence: str) -> int | None:
    from iolab.analysis.select import parse_selector, resolve

    samples = resolve(store, parse_selector(evidence), histograms=False)
    runs = {s.run_id for s in samples}
    return runs.pop() if len(runs) == 1 else None


def _check_fixed(store: Store, entry: Regression, evidence: str) -> int | None:
    """The evidence's run id if its samples show no change against the old level."""
    from iolab.analysis.select import parse_selector, resolve
    from iolab.stats import MetricInput, compare_metric

    sel = parse_selector(evidence)
    after = [
        s.metrics[entry.metric]
        for s in resolve(store, sel, histograms=False)
        if entry.metric in s.metrics
    ]
    before: list[float] = [float(v) for v in entry.details.get("before_values", [])]
    if not before and isinstance(entry.details.get("before_selector"), str):
        old = resolve(store, parse_selector(entry.details["before_selector"]), histograms=False)
        before = [s.metrics[entry.metric] for s in old if entry.metric in s.metrics]
    if not after:
        raise IolabError(f"--evidence {evidence!r}: holds no {entry.metric} samples")
    if not before:
        raise IolabError(f"regression {entry.id}: its pre-regression level is not recorded")
    info = metric_info(entry.metric)
    # back "at the old level": within half the regression's size (at least 1%) of it, shown
    # by the two one-sided tests of iolab.stats — the loss is (at least mostly) gone
    margin = min(max(abs(entry.change_pct or 0.0) / 2.0, 1.0), 50.0)
    cmp = compare_metric(
        MetricInput(
            entry.metric,
            a=before,
            b=after,
            kpi=True,
            direction=info.direction
            if info.direction is not Direction.NEUTRAL
            else Direction.HIGHER,
        ),
        margin_pct=margin,
    )
    if cmp.verdict not in ("no change", "improvement"):
        shown = "n/a" if cmp.change_pct is None else f"{cmp.change_pct:+.1f}%"
        raise IolabError(
            f"regression {entry.id}: {evidence} does not show {entry.metric} at its "
            f"pre-regression level ({cmp.verdict}, {shown} against {len(before)} earlier "
            f"values); not marked fixed"
        )
    return _evidence_run(store, evidence)
