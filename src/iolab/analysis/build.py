"""From selected samples to a `Report`: grouping by matrix cell, pairing by block, KPIs,
histograms — then `iolab.stats.comparison` does the statistics.  This is the analysis
service behind `iolab compare` and `iolab ab`'s report; the report formats only render the
`Report` it returns.

Rules (docs/compare.md):
- Two selectors (`compare A B`): samples are grouped by their matrix cell without the
  dimensions either selector fixed, and groups present on both sides are compared.  So
  `12/fs=ext4` vs `12/fs=xfs` compares ext4 with xfs in every other cell of run 12.
- One run and `--by DIM` (default `variant`): every value of DIM against the baseline
  value, in every remaining cell.
- Samples are paired by block only when both sides come from one lab/ab run (its
  randomized complete blocks); otherwise the unpaired tests are used.
- KPIs: the plan's KPIs recorded in the run's meta; for imports, iops and bw_bytes of every
  I/O direction present on both sides.  Everything else is secondary.
"""

from __future__ import annotations

import fnmatch
import math
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from iolab.analysis.select import Selector, resolve
from iolab.errors import SelectorError
from iolab.kernels.design import boot_design
from iolab.model.metrics import Direction, direction_prefixes
from iolab.model.sample import RunInfo, Sample
from iolab.report.model import Group, LatencyRow, LatencySummary, Report
from iolab.runs.meta import recorded_baseline, recorded_kpis
from iolab.stats.bins import histogram_percentiles, merge_histograms
from iolab.stats.comparison import compare
from iolab.stats.histogram import HistogramInput
from iolab.stats.hosts import HostStrata
from iolab.stats.types import (
    Comparison,
    Correction,
    MetricComparison,
    MetricInput,
    SequentialState,
)
from iolab.store.reader import StoreReader

LATENCY_PERCENTILES = (50.0, 90.0, 99.0, 99.9, 99.99)
DEFAULT_CORRECTION: Correction = "holm"


@dataclass(frozen=True)
class Options:
    alpha: float = 0.05
    margin_pct: float = 1.0
    metrics: tuple[str, ...] = ()  # glob patterns; empty = every metric
    correction: Correction = DEFAULT_CORRECTION


# ----------------------------------------------------------------------------- entry points


def pair_report(store: StoreReader, a: Selector, b: Selector, options: Options) -> Report:
    """`iolab compare A B`."""
    samples_a, samples_b = resolve(store, a), resolve(store, b)
    runs = _runs(store, [*samples_a, *samples_b])
    for sel, samples in ((a, samples_a), (b, samples_b)):
        variants = sorted({s.variant for s in samples if s.variant is not None})
        if len(variants) > 1:
            raise SelectorError(
                f"selector {sel.text!r} mixes variants {', '.join(variants)}: "
                "add variant=NAME (or compare one run with --by variant)"
            )
    fixed = set(a.cell) | set(b.cell)

    def key(s: Sample) -> tuple[tuple[str, str], ...]:
        return tuple((k, str(v)) for k, v in s.cell.items() if k not in fixed)

    groups_a, groups_b = _group_by(samples_a, key), _group_by(samples_b, key)
    if len(groups_a) == 1 and len(groups_b) == 1:
        (ka, sa), (kb, sb) = next(iter(groups_a.items())), next(iter(groups_b.items()))
        pairs = [(tuple(kv for kv in ka if kv in kb), sa, sb)]
    else:
        pairs = [(k, groups_a[k], groups_b[k]) for k in groups_a if k in groups_b]
        if not pairs:
            raise SelectorError(
                f"selectors {a.text!r} and {b.text!r} share no matrix cell "
                "(add cell filters such as writers=10 to both)"
            )
    warnings: list[str] = []
    left = (len(groups_a) - len(pairs)) + (len(groups_b) - len(pairs))
    if left > 0 and len(pairs) > 0 and not (len(groups_a) == 1 and len(groups_b) == 1):
        warnings.append(f"{left} matrix cell(s) present on one side only were left out")
    same_run = _single_lab_run([*samples_a, *samples_b], runs)
    groups = [
        _group(a.text, b.text, dict(k), sa, sb, same_run, runs, options) for k, sa, sb in pairs
    ]
    if not same_run:
        warnings.append("A and B are not from one lab run: compared unpaired")
    return Report(
        a=a.text,
        b=b.text,
        groups=tuple(groups),
        alpha=options.alpha,
        margin_pct=options.margin_pct,
        mode="pair",
        warnings=tuple(warnings),
    )


def by_report(
    store: StoreReader, sel: Selector, by: str, baseline: str | None, options: Options
) -> Report:
    """`iolab compare RUN [--by DIM] [--baseline VALUE]`: each value of DIM against the
    baseline value in every other cell of the run."""
    if sel.run_id is None:
        raise SelectorError(f"--by needs a run: {sel.text!r} names none (use run:ID)")
    samples = resolve(store, sel)
    runs = _runs(store, samples)
    info = runs[sel.run_id]

    def value_of(s: Sample) -> str | None:
        if by == "variant":
            return s.variant
        v = s.cell.get(by)
        return None if v is None else str(v)

    values = list(dict.fromkeys(v for v in map(value_of, samples) if v is not None))
    if not values:
        if by == "variant":
            raise SelectorError(
                f"run {sel.run_id} has no variants: compare it with another selector"
            )
        dims = sorted({k for s in samples for k in s.cell})
        raise SelectorError(
            f"run {sel.run_id} has no matrix dimension {by!r} "
            f"(dimensions: {', '.join(dims) or 'none'})"
        )
    if baseline is None:
        recorded = recorded_baseline(info) if by == "variant" else None
        baseline = recorded if recorded in values else values[0]
    elif baseline not in values:
        raise SelectorError(
            f"--baseline {baseline!r}: run {sel.run_id} has {by} values {', '.join(values)}"
        )
    others = [v for v in values if v != baseline]
    if not others:
        raise SelectorError(
            f"run {sel.run_id} has only one {by} value ({baseline}): nothing to compare"
        )

    def key(s: Sample) -> tuple[tuple[str, str], ...]:
        cell = [(k, str(v)) for k, v in s.cell.items() if k != by]
        if by != "variant" and s.variant is not None:
            cell.insert(0, ("variant", s.variant))
        return tuple(cell)

    paired = _single_lab_run(samples, runs)
    by_key: dict[tuple[tuple[str, str], ...], dict[str, list[Sample]]] = {}
    for s in samples:
        v = value_of(s)
        if v is not None:
            by_key.setdefault(key(s), {}).setdefault(v, []).append(s)
    groups: list[Group] = []
    warnings: list[str] = []
    for k, per_value in by_key.items():
        base = per_value.get(baseline)
        for other in others:
            new = per_value.get(other)
            if not base or not new:
                where = " ".join(f"{a}={b}" for a, b in k) or "the run"
                warnings.append(f"{where}: no samples of {baseline if not base else other}")
                continue
            groups.append(_group(baseline, other, dict(k), base, new, paired, runs, options))
    if not groups:
        raise SelectorError(f"{sel.text!r}: no cell holds samples of both {baseline} and others")
    design = boot_design(samples)
    if design is not None:
        warnings.append(design)
    label = f"run {sel.run_id}"
    return Report(
        a=f"{label} {by}={baseline}",
        b=f"{label} {by}={', '.join(others)}",
        groups=tuple(groups),
        alpha=options.alpha,
        margin_pct=options.margin_pct,
        mode="by",
        by=by,
        warnings=tuple(warnings),
    )


SequentialKey = tuple[tuple[tuple[str, str], ...], str, str]


def sequential_key(cell: Mapping[str, Any], a_name: str, b_name: str) -> SequentialKey:
    """How `with_sequential` finds a group: its cell (order-free), A and B."""
    return tuple(sorted((str(k), str(v)) for k, v in cell.items())), a_name, b_name


def with_sequential(
    report: Report, states: Mapping[SequentialKey, Sequence[SequentialState]]
) -> Report:
    """The report with each group's KPI verdicts and intervals taken from `iolab ab`'s
    sequential decisions (keyed by `sequential_key`): the fixed-n p-value stays for
    reference, but after optional stopping only the anytime-valid interval and verdict are
    honest."""
    groups = []
    for group in report.groups:
        key = sequential_key(group.cell, group.a_name, group.b_name)
        found = {s.name: s for s in states.get(key, ())}
        if not found:
            groups.append(group)
            continue
        metrics = tuple(
            _sequential_metric(m, found[m.name]) if m.kpi and m.name in found else m
            for m in group.comparison.metrics
        )
        comparison = replace(group.comparison, metrics=metrics)
        groups.append(replace(group, comparison=comparison, sequential=tuple(found.values())))
    return replace(report, groups=tuple(groups), sequential=True)


def _sequential_metric(m: MetricComparison, s: SequentialState) -> MetricComparison:
    note = (
        f"verdict and interval from the sequential test after {s.n_blocks} blocks "
        f"({s.reason}); p is the fixed-n test's, for reference"
    )
    return replace(
        m,
        verdict=s.verdict,
        change_pct=s.estimate_pct if s.estimate_pct is not None else m.change_pct,
        ci_low_pct=s.ci_low_pct,
        ci_high_pct=s.ci_high_pct,
        runs_needed=s.runs_needed if s.verdict == "inconclusive" else None,
        warnings=(*m.warnings, *s.warnings, note),
    )


# ---------------------------------------------------------------------------------- helpers


def _runs(store: StoreReader, samples: Sequence[Sample]) -> dict[int, RunInfo]:
    return {rid: store.run(rid) for rid in dict.fromkeys(s.run_id for s in samples)}


def _group_by(
    samples: Sequence[Sample], key: Callable[[Sample], tuple[tuple[str, str], ...]]
) -> dict[tuple[tuple[str, str], ...], list[Sample]]:
    out: dict[tuple[tuple[str, str], ...], list[Sample]] = {}
    for s in samples:
        out.setdefault(key(s), []).append(s)
    return out


def _single_lab_run(samples: Sequence[Sample], runs: Mapping[int, RunInfo]) -> bool:
    ids = {s.run_id for s in samples}
    if len(ids) != 1:
        return False
    (rid,) = ids
    return runs[rid].kind in ("lab", "ab", "bisect") and all(s.block is not None for s in samples)


def kpis_of(
    runs: Sequence[RunInfo], names_a: set[str], names_b: set[str]
) -> dict[str, Direction | None]:
    """KPI name → direction (None: the metric table's).  Plan KPIs of lab runs; for
    imports (or runs without recorded KPIs) iops and bw_bytes of the directions present."""
    out: dict[str, Direction | None] = {}
    both = names_a & names_b
    for run in runs:
        recorded = recorded_kpis(run) if run.kind != "import" else []
        if recorded:
            for kpi in recorded:
                out.setdefault(kpi.metric, kpi.direction)
            continue
        for prefix in direction_prefixes(both):
            for name in (f"{prefix}.iops", f"{prefix}.bw_bytes"):
                if name in both:
                    out.setdefault(name, None)
    return out


def _wanted(name: str, globs: Sequence[str]) -> bool:
    return not globs or any(fnmatch.fnmatchcase(name, g) for g in globs)


def _columns(
    samples: Sequence[Sample], paired: bool
) -> dict[str, tuple[list[float], list[str | int] | None, list[str | int]]]:
    """Every metric's finite values, in sample order, with their block ids when paired (-1
    for a sample without one) and the sample each comes from (its place in `samples`: the
    joint correction keeps a sample's metrics together) — one pass for the whole table."""
    vals: defaultdict[str, list[float]] = defaultdict(list)
    blocks: defaultdict[str, list[str | int]] = defaultdict(list)
    ids: defaultdict[str, list[str | int]] = defaultdict(list)
    isfinite = math.isfinite
    for n, s in enumerate(samples):
        block = s.block if s.block is not None else -1
        for name, v in s.metrics.items():
            if v is None or not isfinite(v):
                continue
            vals[name].append(float(v))
            ids[name].append(n)
            if paired:
                blocks[name].append(block)
    return {name: (v, blocks[name] if paired else None, ids[name]) for name, v in vals.items()}


def _is_latency(name: str) -> bool:
    return name.endswith("_ns")


def _group(
    a_name: str,
    b_name: str,
    cell: dict[str, str],
    samples_a: Sequence[Sample],
    samples_b: Sequence[Sample],
    paired: bool,
    runs: Mapping[int, RunInfo],
    options: Options,
) -> Group:
    names_a = {n for s in samples_a for n in s.metrics}
    names_b = {n for s in samples_b for n in s.metrics}
    involved = [runs[r] for r in dict.fromkeys(s.run_id for s in [*samples_a, *samples_b])]
    kpis = kpis_of(involved, names_a, names_b)
    inputs: list[MetricInput] = []
    identical = 0
    columns_a, columns_b = _columns(samples_a, paired), _columns(samples_b, paired)
    for name in sorted(names_a & names_b, key=lambda n: (n not in kpis, n)):
        if not _wanted(name, options.metrics):
            continue
        if name not in columns_a or name not in columns_b:
            continue  # no finite value on one side
        a, blocks_a, ids_a = columns_a[name]
        b, blocks_b, ids_b = columns_b[name]
        if name not in kpis and len({*a, *b}) == 1:
            identical += 1  # the same constant on both sides: no information
            continue
        inputs.append(
            MetricInput(
                name=name,
                a=a,
                b=b,
                kpi=name in kpis,
                direction=kpis.get(name),
                blocks_a=blocks_a,
                blocks_b=blocks_b,
                ids_a=ids_a,
                ids_b=ids_b,
            )
        )
    histograms: list[HistogramInput] = []
    latency_hists: list[tuple[str, list[dict[float, int]], list[dict[float, int]]]] = []
    hist_a = {n for s in samples_a for n in s.histograms}
    hist_b = {n for s in samples_b for n in s.histograms}
    for name in sorted(hist_a & hist_b):
        if not _wanted(name, options.metrics) and not _is_latency(name):
            continue
        ra = [dict(s.histograms[name]) for s in samples_a if name in s.histograms]
        rb = [dict(s.histograms[name]) for s in samples_b if name in s.histograms]
        if _is_latency(name):
            latency_hists.append((name, ra, rb))
        else:
            histograms.append(
                HistogramInput(
                    name=name,
                    runs_a=[{f"{k:g}": c for k, c in sorted(r.items())} for r in ra],
                    runs_b=[{f"{k:g}": c for k, c in sorted(r.items())} for r in rb],
                )
            )
    if not inputs and not histograms:
        raise SelectorError(
            f"{b_name} vs {a_name}: no metric present on both sides"
            + (f" matches --metric {' '.join(options.metrics)}" if options.metrics else "")
        )
    comparison = compare(
        inputs,
        histograms,
        alpha=options.alpha,
        margin_pct=options.margin_pct,
        correction=options.correction,
    )
    if identical:
        comparison = replace(
            comparison,
            warnings=(
                *comparison.warnings,
                f"{identical} metric(s) with one identical value on both sides left out",
            ),
        )
    comparison = one_device_once(comparison)
    by_name = {m.name: m for m in comparison.metrics}
    latency = tuple(
        _latency(name, ra, rb, by_name)
        for name, ra, rb in latency_hists
        if _wanted_latency(name, options.metrics)
    )
    paired_blocks = None
    hosts: tuple[HostStrata, ...] = ()
    if paired:
        paired_blocks = len({s.block for s in samples_a} & {s.block for s in samples_b} - {None})
        hosts = _host_strata(samples_a, samples_b, [i.name for i in inputs if i.kpi], options)
    return Group(
        a_name=a_name,
        b_name=b_name,
        cell=cell,
        comparison=comparison,
        latency=tuple(x for x in latency if x.rows),
        paired_blocks=paired_blocks,
        hosts=hosts,
    )


# fio's own read of a device's counters (disk_util, over fio's run) → the diskstats
# monitor's name for the same counter (over the whole sample)
_FIO_DISK_TWINS = {
    "read_ios": "read_ios",
    "write_ios": "write_ios",
    "read_merges": "read_merges",
    "write_merges": "write_merges",
    "read_ticks": "read_ms",
    "write_ticks": "write_ms",
    "in_queue": "weighted_ms",
    "util_pct": "util_pct",
}


def one_device_once(comparison: Comparison) -> Comparison:
    """One device read by two monitors shows once: fio's `disk.DEV.X` row is named on the
    diskstats monitor's row for the same counter (`diskstats.DEV.Y`) when both reached the
    same verdict.  The two are not equal numbers — fio counts over its run, the monitor
    over the whole sample — so both stay in the correction (the joint correction charges
    almost nothing for such a pair); only the report says it once."""
    by_name = {m.name: i for i, m in enumerate(comparison.metrics)}
    metrics = list(comparison.metrics)
    for i, m in enumerate(comparison.metrics):
        parts = m.name.split(".")
        if m.kpi or m.alias_of is not None or len(parts) != 3 or parts[0] != "disk":
            continue
        twin = by_name.get(f"diskstats.{parts[1]}.{_FIO_DISK_TWINS.get(parts[2], '')}")
        if twin is None or metrics[twin].verdict != m.verdict or metrics[twin].alias_of:
            continue
        names = (m.name, *m.aliases)
        metrics[twin] = replace(metrics[twin], aliases=(*metrics[twin].aliases, *names))
        metrics[i] = replace(m, alias_of=metrics[twin].name)
        for j, other in enumerate(metrics):
            if other.alias_of == m.name:
                metrics[j] = replace(other, alias_of=metrics[twin].name)
    return replace(comparison, metrics=tuple(metrics))


def _host_strata(
    samples_a: Sequence[Sample], samples_b: Sequence[Sample], kpis: list[str], options: Options
) -> tuple[HostStrata, ...]:
    """Per-host KPI effects when the paired blocks ran on more than one host (a fleet)."""
    from iolab.stats.hosts import host_strata

    by_block_a = {s.block: s for s in samples_a if s.block is not None}
    by_block_b = {s.block: s for s in samples_b if s.block is not None}
    common = sorted(set(by_block_a) & set(by_block_b))
    hosts = {by_block_a[b].host for b in common if by_block_a[b].host == by_block_b[b].host}
    if len(hosts) < 2 or None in hosts:
        return ()
    out = []
    for name in kpis:
        pairs: dict[str, list[tuple[float, float]]] = {}
        for block in common:
            a, b = by_block_a[block], by_block_b[block]
            if a.host is None or a.host != b.host:
                continue
            if name in a.metrics and name in b.metrics:
                pairs.setdefault(a.host, []).append((a.metrics[name], b.metrics[name]))
        out.append(host_strata(name, pairs, options.alpha))
    return tuple(out)


def _wanted_latency(name: str, globs: Sequence[str]) -> bool:
    return not globs or any(
        fnmatch.fnmatchcase(name, g) or fnmatch.fnmatchcase(f"{name}.p99", g) for g in globs
    )


def _latency(
    name: str,
    runs_a: list[dict[float, int]],
    runs_b: list[dict[float, int]],
    by_name: Mapping[str, MetricComparison],
) -> LatencySummary:
    ma, mb = merge_histograms(runs_a), merge_histograms(runs_b)
    pa = histogram_percentiles(ma, LATENCY_PERCENTILES)
    pb = histogram_percentiles(mb, LATENCY_PERCENTILES)
    rows = []
    for p, va in pa.items():
        vb = pb.get(p)
        if vb is None or va <= 0:
            continue
        rows.append(
            LatencyRow(
                percentile=p,
                a=va,
                b=vb,
                change_pct=100.0 * (vb / va - 1.0),
                test=by_name.get(f"{name}.{p}"),
            )
        )
    return LatencySummary(
        name=name,
        rows=tuple(rows),
        runs_a=len(runs_a),
        runs_b=len(runs_b),
        events_a=sum(ma.values()),
        events_b=sum(mb.values()),
    )


def group_key_text(cell: Mapping[str, Any]) -> str:
    return " ".join(f"{k}={v}" for k, v in cell.items())
