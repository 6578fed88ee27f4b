"""The face of `iolab.history`: build a selector's history, and the registry's operations.

    history(store, "label:nightly", metrics=["write.*"], order="tag:kernel") -> History
    regressions(store, status=["open"]) -> list[Regression]
    mark(store, 3, "fixed", note="...", evidence="run:42") -> Regression

`history` opens a registry entry for every change point in a KPI's bad direction (unless
`record=False`); compare, ab and bisect open theirs through `iolab.history.registry`.
"""

from __future__ import annotations

from collections.abc import Sequence

from iolab.analysis.select import parse_selector
from iolab.errors import SelectorError
from iolab.history import registry
from iolab.history.changepoints import DetectOptions, Split, detect
from iolab.history.series import RawSeries, build, choose_metrics, order_key
from iolab.history.types import ChangePoint, History, Point, Series
from iolab.model.metrics import Direction, metric_info
from iolab.model.regression import Regression
from iolab.store.store import Store

mark = registry.mark
regressions = registry.regressions


def _change_point(raw: RawSeries, split: Split, direction: Direction) -> ChangePoint:
    from iolab.stats import MetricInput, compare_metric

    pts = raw.points
    before: list[Point] = list(pts[split.start : split.index])
    after: list[Point] = list(pts[split.index : split.stop])
    cmp = compare_metric(
        MetricInput(
            name=raw.metric,
            a=[p.value for p in before],
            b=[p.value for p in after],
            kpi=True,
            direction=direction,
        )
    )
    change = cmp.change_pct
    if direction is Direction.NEUTRAL or change is None:
        kind = "changed"
    elif (change < 0) == (direction is Direction.HIGHER):
        kind = "regression"
    else:
        kind = "improvement"
    return ChangePoint(
        index=split.index,
        time=pts[split.index].time,
        before=pts[split.index - 1],
        after=pts[split.index],
        runs_before=tuple(dict.fromkeys(p.run_id for p in before)),
        runs_after=tuple(dict.fromkeys(p.run_id for p in after)),
        n_before=len(before),
        n_after=len(after),
        median_before=cmp.a.median,
        median_after=cmp.b.median,
        change_pct=change,
        ci_low_pct=cmp.ci_low_pct,
        ci_high_pct=cmp.ci_high_pct,
        p_value=split.p_value,
        p_ab=cmp.p_value,
        kind=kind,
    )


def history(
    store: Store,
    selector: str,
    metrics: Sequence[str] = (),
    by: Sequence[str] = (),
    order: str = "time",
    options: DetectOptions | None = None,
    *,
    record: bool = True,
) -> History:
    """Series, change points and (with `record`) registry entries for a selector."""
    opts = options or DetectOptions()
    sel = parse_selector(selector)
    if sel.run_id is not None:
        runs = {sel.run_id: store.run(sel.run_id)}
    else:
        runs = {r.id: r for r in store.runs(label=sel.label, tags=sel.tags or None)}
    order_key(order)  # a bad --order fails before the store is read
    names = set(store.metric_names(run_id=sel.run_id, label=sel.label))
    wanted, kpis = choose_metrics(names, list(runs.values()), metrics) if names else (set(), set())
    samples = store.samples(
        run_id=sel.run_id,
        label=sel.label,
        variant=sel.variant,
        cell=sel.cell or None,
        tags=sel.tags or None,
        metrics=sorted(wanted),
        with_jobs=False,
        with_histograms=False,
    )
    if not samples:
        raise SelectorError(f"selector {selector!r} selects no samples")
    raws, warnings = build(samples, runs, wanted, kpis, by, order)
    out: list[Series] = []
    for raw in raws:
        info = metric_info(raw.metric)
        values = [p.value for p in raw.points]
        se = [p.se_log if p.se_log is not None else 0.0 for p in raw.points]
        found = []
        series_warnings: list[str] = []
        if any(v <= 0 for v in values):
            series_warnings.append("values <= 0: no change points searched (log scale)")
        elif len(values) < 2 * opts.min_segment:
            series_warnings.append(
                f"{len(values)} points: change points need at least {2 * opts.min_segment}"
            )
        else:
            for split in detect(values, se if any(se) else None, opts):
                cp = _change_point(raw, split, info.direction)
                if record and raw.kpi and cp.kind == "regression":
                    rid = registry.open_from_history(store, raw, cp, opts.min_segment)
                    cp = _with_id(cp, rid)
                found.append(cp)
        out.append(
            Series(
                metric=raw.metric,
                unit=info.unit,
                direction=info.direction,
                kpi=raw.kpi,
                case=raw.case,
                points=tuple(raw.points),
                change_points=tuple(found),
                warnings=tuple(series_warnings),
            )
        )
    return History(
        selector=selector,
        order=order,
        series=tuple(out),
        min_segment=opts.min_segment,
        alpha=opts.alpha,
        warnings=tuple(warnings),
    )


def _with_id(cp: ChangePoint, rid: int) -> ChangePoint:
    from dataclasses import replace

    return replace(cp, regression_id=rid)


__all__ = ["History", "Regression", "history", "mark", "regressions"]
