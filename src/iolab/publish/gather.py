"""Store → `HtmlReport`: the comparison `iolab compare` builds, plus what only the HTML
report shows — each KPI's samples by block, the sequential test's path for `ab` runs, and
the provenance of each side.

The sequential path is not stored: it is recomputed by replaying the run's blocks, in block
order, through the same `SequentialDecision` the ab run used, with the alpha, margin and
stakes recorded in the run's meta — so the figure shows exactly what the run decided.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

from iolab.analysis.build import (
    Options,
    SequentialKey,
    by_report,
    pair_report,
    sequential_key,
    with_sequential,
)
from iolab.analysis.select import Selector, resolve
from iolab.errors import IolabError
from iolab.model.metrics import metric_info
from iolab.model.sample import RunInfo, Sample
from iolab.report import fmt
from iolab.report.html_model import (
    GroupDetail,
    HtmlReport,
    KpiSamples,
    RunSummary,
    SampleRow,
    SequentialPoint,
    SequentialTrace,
    SideProvenance,
)
from iolab.report.model import Group, Report
from iolab.runs.meta import ab_outcome, ab_settings, recorded_kpis
from iolab.stats import SequentialDecision
from iolab.stats.types import SequentialState
from iolab.store.reader import StoreReader

FACTS = (
    "host",
    "kernel",
    "tool",
    "filesystem",
    "mkfs options",
    "mount options",
    "device",
    "cpu",
    "profile / vars",
)


@dataclass(frozen=True)
class Side:
    """Which samples of a selection belong to one side of a group."""

    name: str
    samples: list[Sample]


def pair_html(
    store: StoreReader, a: Selector, b: Selector, options: Options, title: str | None = None
) -> HtmlReport:
    """`compare A B` as an HTML report."""
    report = pair_report(store, a, b, options)
    kpis = _kpi_names(report)
    samples_a = resolve(store, a, histograms=False, only=kpis)
    samples_b = resolve(store, b, histograms=False, only=kpis)
    sides = [
        (
            Side(g.a_name, [s for s in samples_a if _in_cell(s, g.cell, None)]),
            Side(g.b_name, [s for s in samples_b if _in_cell(s, g.cell, None)]),
        )
        for g in report.groups
    ]
    return _assemble(store, report, sides, title or f"{b.text} vs {a.text}", sequential=False)


def by_html(
    store: StoreReader,
    sel: Selector,
    by: str,
    baseline: str | None,
    options: Options,
    title: str | None = None,
    sequential: bool = False,
) -> HtmlReport:
    """`compare RUN --by DIM` as an HTML report; `sequential`: for an ab run, take the KPI
    verdicts from the replayed sequential test, as `iolab ab` reported them."""
    report = by_report(store, sel, by, baseline, options)
    samples = resolve(store, sel, histograms=False, only=_kpi_names(report))

    def value(s: Sample) -> str | None:
        v = s.variant if by == "variant" else s.cell.get(by)
        return None if v is None else str(v)

    sides = [
        (
            Side(
                g.a_name, [s for s in samples if value(s) == g.a_name and _in_cell(s, g.cell, by)]
            ),
            Side(
                g.b_name, [s for s in samples if value(s) == g.b_name and _in_cell(s, g.cell, by)]
            ),
        )
        for g in report.groups
    ]
    label = store.run(sel.run_id).label if sel.run_id is not None else None
    what = f"run {sel.run_id}" + (f" ({label})" if label else "")
    name = title or f"{what}: each {by} against {report.a.rsplit('=', 1)[-1]}"
    return _assemble(store, report, sides, name, sequential=sequential)


def _kpi_names(report: Report) -> list[str]:
    return sorted({m.name for _, m in report.kpis()})


def _in_cell(s: Sample, cell: Mapping[str, str], by: str | None) -> bool:
    for k, v in cell.items():
        if k == "variant" and by not in (None, "variant"):
            if s.variant != v:
                return False
        elif str(s.cell.get(k)) != v:
            return False
    return True


def _assemble(
    store: StoreReader,
    report: Report,
    sides: Sequence[tuple[Side, Side]],
    title: str,
    sequential: bool,
) -> HtmlReport:
    runs = {
        rid: store.run(rid) for rid in {s.run_id for pair in sides for x in pair for s in x.samples}
    }
    details: list[GroupDetail] = []
    states: dict[SequentialKey, list[SequentialState]] = {}
    for group, (side_a, side_b) in zip(report.groups, sides, strict=True):
        traces, finals = _sequential(group, side_a.samples, side_b.samples, runs)
        if finals:
            states[sequential_key(group.cell, group.a_name, group.b_name)] = finals
        details.append(
            GroupDetail(samples=_kpi_samples(group, side_a.samples, side_b.samples), traces=traces)
        )
    if sequential and states:
        report = with_sequential(report, states)
    provenance: tuple[SideProvenance, ...] = ()
    if sides:
        first_a = Side(report.a, [s for pair in sides for s in pair[0].samples])
        first_b = Side(report.b, [s for pair in sides for s in pair[1].samples])
        provenance = (_provenance(first_a, runs), _provenance(first_b, runs))
    return HtmlReport(title=title, report=report, details=tuple(details), sides=provenance)


def _kpi_samples(
    group: Group, samples_a: Sequence[Sample], samples_b: Sequence[Sample]
) -> tuple[KpiSamples, ...]:
    paired = group.paired_blocks is not None
    out = []
    for m in group.comparison.kpis:

        def values(
            samples: Sequence[Sample], name: str = m.name
        ) -> tuple[tuple[int | None, float], ...]:
            return tuple(
                (s.block if paired else None, float(s.metrics[name]))
                for s in samples
                if name in s.metrics
            )

        out.append(KpiSamples(m.name, m.unit, values(samples_a), values(samples_b)))
    return tuple(out)


def _sequential(
    group: Group,
    samples_a: Sequence[Sample],
    samples_b: Sequence[Sample],
    runs: Mapping[int, RunInfo],
) -> tuple[tuple[SequentialTrace, ...], list[SequentialState]]:
    """Replay an ab run's blocks through the sequential decisions it made (one per KPI)."""
    run_ids = {s.run_id for s in (*samples_a, *samples_b)}
    if len(run_ids) != 1 or group.paired_blocks is None:
        return (), []
    info = runs[next(iter(run_ids))]
    if info.kind != "ab":
        return (), []
    try:
        settings = ab_settings(info)
    except IolabError:
        return (), []
    directions = {k.metric: k.direction for k in recorded_kpis(info)}
    outcome = ab_outcome(info)
    stopped = outcome.stopped if outcome is not None else None
    a_by_block = {s.block: s for s in samples_a if s.block is not None}
    b_by_block = {s.block: s for s in samples_b if s.block is not None}
    traces, finals = [], []
    for m in group.comparison.kpis:
        decision = SequentialDecision(
            m.name,
            direction=directions.get(m.name),
            alpha=settings.alpha,
            margin_pct=settings.margin_pct,
            max_blocks=settings.max_blocks,
            stake_blocks=settings.stake_blocks,
            sign_bets=settings.sign_bets,
            one_sided=settings.one_sided,
        )
        points: list[SequentialPoint] = []
        stopped_at: int | None = None
        for block in sorted(set(a_by_block) & set(b_by_block)):
            va = a_by_block[block].metrics.get(m.name)
            vb = b_by_block[block].metrics.get(m.name)
            if va is None or vb is None or not (va > 0 and vb > 0):
                continue
            state = decision.update([(va, vb)])
            points.append(
                SequentialPoint(block, state.estimate_pct, state.ci_low_pct, state.ci_high_pct)
            )
            if state.done:
                if state.verdict != "inconclusive":
                    stopped_at = block
                break
        final = decision.state
        if final is None or not final.done:
            final = decision.finish(str(stopped) if stopped else "stopped")
        finals.append(final)
        traces.append(
            SequentialTrace(m.name, settings.margin_pct, tuple(points), final.verdict, stopped_at)
        )
    return tuple(traces), finals


def _joined(values: Iterable[object]) -> str:
    seen = [str(v) for v in dict.fromkeys(v for v in values if v not in (None, "", [], {}))]
    return " | ".join(seen) if seen else "—"


def _words(value: object) -> str:
    if isinstance(value, list | tuple):
        return " ".join(str(v) for v in value)
    return str(value) if value is not None else ""


def _fact(samples: Sequence[Sample], get: Callable[[Sample], object]) -> str:
    return _joined(get(s) for s in samples)


def _device(p: Mapping[str, object]) -> str:
    devices = p.get("devices")
    if not isinstance(devices, list):
        return ""
    parts = []
    for d in devices:
        if isinstance(d, dict):
            extra = f" on {d['backing_fs']}" if d.get("backing_fs") else ""
            parts.append(
                f"{d.get('name')} ({d.get('model') or '?'}, scheduler {d.get('scheduler')}{extra})"
            )
    return ", ".join(parts)


def _provenance(side: Side, runs: Mapping[int, RunInfo]) -> SideProvenance:
    samples = side.samples
    getters: dict[str, Callable[[Sample], object]] = {
        "host": lambda s: s.provenance.get("host") or runs[s.run_id].host,
        "kernel": lambda s: s.provenance.get("kernel"),
        "tool": lambda s: (
            " ".join(x for x in (s.tool, s.tool_version) if x)
            or (f"fio {s.provenance['fio_version']}" if s.provenance.get("fio_version") else None)
        ),
        "filesystem": lambda s: s.provenance.get("filesystem"),
        "mkfs options": lambda s: _words(s.provenance.get("mkfs_options")),
        "mount options": lambda s: _words(s.provenance.get("mount_options")),
        "device": lambda s: _device(s.provenance),
        "cpu": lambda s: " × ".join(
            str(x) for x in (s.provenance.get("cpu_count"), s.provenance.get("cpu_model")) if x
        ),
        "profile / vars": lambda s: " ".join(
            [str(s.provenance.get("profile") or "")]
            + [f"{k}={v}" for k, v in sorted((s.provenance.get("vars") or {}).items())]
        ).strip(),
    }
    facts = tuple((name, _fact(samples, getters[name])) for name in FACTS)
    settings: dict[str, str] = {}
    for name in sorted({k for s in samples for k in (s.provenance.get("settings") or {})}):
        settings[name] = _joined((s.provenance.get("settings") or {}).get(name) for s in samples)
    described = []
    for rid in dict.fromkeys(s.run_id for s in samples):
        info = runs[rid]
        extra = [f"label {info.label}"] if info.label else []
        extra += [f"{k}={v}" for k, v in sorted(info.tags.items())]
        when = info.created_at.strftime("%Y-%m-%d %H:%M")
        about = f": {', '.join(extra)}" if extra else ""
        described.append(f"run {rid} ({info.kind}, {info.status}, {when}){about}")
    return SideProvenance(side.name, tuple(described), facts, settings)


_USUAL_KPIS = ("read.iops", "write.iops", "read.bw_bytes", "write.bw_bytes", "elapsed_s")
MAX_COLUMNS = 6


def run_summary(store: StoreReader, run: RunInfo) -> RunSummary:
    """A run page without a comparison: its facts and samples with their KPI values."""
    samples = store.samples(run_id=run.id, status=None, with_jobs=False, with_histograms=False)
    recorded = [k.metric for k in recorded_kpis(run)]
    present = {n for s in samples for n in s.metrics}
    columns = tuple(n for n in (recorded or _USUAL_KPIS) if n in present)[:MAX_COLUMNS]
    rows = []
    for s in samples:
        if s.variant is not None or s.block is not None:
            cell = " ".join(f"{k}={v}" for k, v in sorted(s.cell.items()))
            where = " ".join(x for x in (s.variant or "", cell, f"block {s.block}") if x)
        else:
            where = " ".join(x for x in (s.source or "", s.caption or "") if x)
        status = s.status if s.status == "ok" else f"failed: {s.reason or '?'}"
        values = tuple(
            fmt.value(s.metrics[c], metric_info(c).unit) if c in s.metrics else "—" for c in columns
        )
        rows.append(SampleRow(s.id, where, status, values))
    facts = [
        ("kind", run.kind),
        ("status", run.status),
        ("created", run.created_at.strftime("%Y-%m-%d %H:%M:%S UTC")),
        ("samples", f"{run.n_samples} ({run.n_failed} failed)"),
        ("host", run.host or "—"),
        ("tags", " ".join(f"{k}={v}" for k, v in sorted(run.tags.items())) or "—"),
    ]
    if run.plan_path:
        facts.append(("plan", run.plan_path))
    ok = [s for s in samples if s.status == "ok"]
    side = _provenance(Side(f"run {run.id}", ok), {run.id: run}) if ok else None
    title = f"run {run.id}" + (f": {run.label}" if run.label else "")
    return RunSummary(title, tuple(facts), columns, tuple(rows), side)
