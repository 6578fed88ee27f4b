"""The human report as neutral blocks (headings, tables, lines): the terminal table and the
markdown format render the same blocks, so both always show the same figures.

Order: what was compared; the KPI verdicts (one line per cell per KPI when there are several
cells); per group the sequential decisions (`ab`), other metrics that changed, mechanism
evidence (monitor counters and histogram shifts, bucket by bucket), latency percentiles of
merged bins; then the warnings.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

from iolab.report import fmt
from iolab.report.model import (
    Group,
    Report,
    is_evidence,
    is_mechanism,
    procedure,
    shown_name,
    shown_secondary,
)
from iolab.stats.types import HistogramBucket, HistogramShift, MetricComparison
from iolab.textsafe import shown

BlockKind = Literal["title", "heading", "table", "lines"]


@dataclass
class Block:
    kind: BlockKind
    text: str = ""
    headers: list[str] = field(default_factory=list)
    rows: list[list[str]] = field(default_factory=list)
    verdict_column: int | None = None  # which column holds a verdict (for colour)
    right: set[int] = field(default_factory=set)  # right-aligned columns
    lines: list[str] = field(default_factory=list)


def describe(report: Report) -> list[str]:
    """What was compared and how, in two or three lines."""
    if report.mode == "by":
        head = f"{report.b}  against  {report.a}"
    else:
        head = f"A: {report.a}    B: {report.b}"
    blocks = {g.paired_blocks for g in report.groups}
    if blocks == {None}:
        how = "unpaired (Mann–Whitney U)"
    else:
        counts = sorted(b for b in blocks if b is not None)
        shown = str(counts[0]) if len(counts) == 1 else f"{counts[0]}–{counts[-1]}"
        how = f"paired by block ({shown} blocks; Wilcoxon signed-rank on log ratios)"
    fam = procedure(report.groups[0].comparison) if report.groups else "Holm"
    adjusted = "p adj: adjusted for the table's tests"
    lines = [
        head,
        f"{how} · α {report.alpha:g} · no-change margin ±{report.margin_pct:g}%",
        f"multiplicity: {fam} ({adjusted})",
    ]
    if report.sequential:
        lines.append("KPI verdicts: sequential test (anytime-valid; see docs/compare.md)")
    return lines


def _kpi_detail(group: Group) -> Block:
    rows: list[list[str]] = []
    for m in group.comparison.kpis:
        for side, s in (("A", m.a), ("B", m.b)):
            median = fmt.value(s.median, m.unit)
            if s.median_ci_low is not None and s.median_ci_high is not None:
                low = fmt.value(s.median_ci_low, m.unit)
                median += f" [{low}, {fmt.value(s.median_ci_high, m.unit)}]"
            sd = "—" if s.stddev is None else fmt.value(s.stddev, m.unit)
            first = side == "A"
            rows.append(
                [
                    m.name if first else "",
                    side,
                    str(s.n),
                    median,
                    fmt.value(s.mean, m.unit),
                    sd,
                    fmt.cv(s.cv),
                    "" if first else fmt.pct(m.change_pct),
                    "" if first else fmt.ci(m.ci_low_pct, m.ci_high_pct),
                    "" if first else fmt.p_value(m.p_adjusted),
                    "" if first else fmt.verdict(m),
                ]
            )
    return Block(
        "table",
        text="KPIs",
        headers=[
            "metric",
            "",
            "n",
            "median [CI]",
            "mean",
            "sd",
            "CV",
            "change",
            "CI",
            "p adj",
            "verdict",
        ],
        rows=rows,
        verdict_column=10,
        right={2, 4, 5, 6, 7, 9},
    )


def _kpi_overview(report: Report) -> Block:
    rows = []
    for g, m in report.kpis():
        rows.append([g.cell_text or "—", f"{g.b_name} vs {g.a_name}", *_metric_rows([m])[0]])
    return Block(
        "table",
        text="KPIs (one line per cell)",
        headers=[
            "cell",
            "compared",
            "metric",
            "A median (n)",
            "B median (n)",
            "change",
            "CI",
            "p adj",
            "verdict",
        ],
        rows=rows,
        verdict_column=8,
        right={3, 4, 5, 7},
    )


def _metric_rows(metrics: list[MetricComparison]) -> list[list[str]]:
    return [
        [
            f"{m.name} (+{len(m.aliases)})" if m.aliases else m.name,
            f"{fmt.value(m.a.median, m.unit)} ({m.a.n})",
            f"{fmt.value(m.b.median, m.unit)} ({m.b.n})",
            fmt.pct(m.change_pct),
            fmt.ci(m.ci_low_pct, m.ci_high_pct),
            fmt.p_value(m.p_adjusted),
            fmt.verdict(m),
        ]
        for m in metrics
    ]


_METRIC_HEADERS = ["metric", "A median (n)", "B median (n)", "change", "CI", "p adj", "verdict"]


MAX_BUCKET_ROWS = 16


def display_buckets(buckets: Sequence[HistogramBucket]) -> list[HistogramBucket]:
    """The non-empty buckets; more than MAX_BUCKET_ROWS exact values are merged into
    power-of-two ranges ("512-1023") so that a shift reads at a glance.  Display only: the
    test ran on the original buckets."""
    shown = [b for b in buckets if b.count_a or b.count_b]
    values = [_bucket_number(b.bucket) for b in shown]
    if len(shown) <= MAX_BUCKET_ROWS or any(v is None or v < 0 for v in values):
        return shown
    merged: dict[int, list[HistogramBucket]] = {}
    for b, v in zip(shown, values, strict=True):
        assert v is not None
        merged.setdefault(-1 if v < 1 else int(math.log2(v)), []).append(b)
    out = []
    for power, group in merged.items():
        label = "<1" if power < 0 else f"{2**power}-{2 ** (power + 1) - 1}"
        if len(group) == 1:
            label = group[0].bucket
        out.append(
            HistogramBucket(
                label,
                sum(b.count_a for b in group),
                sum(b.count_b for b in group),
                sum(b.share_a for b in group),
                sum(b.share_b for b in group),
            )
        )
    return out


def _bucket_number(label: str) -> float | None:
    try:
        return float(label)
    except ValueError:
        return None


def _steady_line(shift: HistogramShift) -> str:
    means = ""
    if shift.mean_a is not None and shift.mean_b is not None:
        means = f"mean {fmt.sig(shift.mean_a, 3)} → {fmt.sig(shift.mean_b, 3)}, "
    return (
        f"{shift.name}: {means}{100 * shift.total_variation:.1f}% of events moved "
        f"(p adj {fmt.p_value(shift.p_adjusted)}, {shift.runs_a} vs {shift.runs_b} runs)"
    )


def _shift_blocks(shift: HistogramShift) -> list[Block]:
    moved = f"{100 * shift.total_variation:.1f}% of events moved"
    means = ""
    if shift.mean_a is not None and shift.mean_b is not None:
        means = f"; mean {fmt.sig(shift.mean_a, 3)} → {fmt.sig(shift.mean_b, 3)}"
    head = (
        f"{shift.name}: {shift.verdict} (p adj {fmt.p_value(shift.p_adjusted)}, "
        f"{shift.runs_a} vs {shift.runs_b} runs; {moved}{means})"
    )
    rows = [
        [
            b.bucket,
            str(b.count_a),
            f"{100 * b.share_a:.1f}%",
            str(b.count_b),
            f"{100 * b.share_b:.1f}%",
            f"{100 * (b.share_b - b.share_a):+.1f}",
        ]
        for b in display_buckets(shift.buckets)
    ]
    return [
        Block(
            "table",
            text=head,
            headers=["bucket", "A events", "A share", "B events", "B share", "Δ points"],
            rows=rows,
            right={1, 2, 3, 4, 5},
        )
    ]


def _group_blocks(group: Group, report: Report, show_all: bool, several: bool) -> list[Block]:
    out: list[Block] = []
    comp = group.comparison
    if several:
        out.append(Block("heading", text=group.title))
    if group.sequential:
        rows = [
            [
                s.name,
                str(s.n_blocks),
                fmt.pct(s.estimate_pct),
                fmt.sequence_ci(s.ci_low_pct, s.ci_high_pct),
                f"{s.e_value:.3g}",
                f"{s.e_value_equivalence:.3g}",
                s.verdict,
                s.reason,
            ]
            for s in group.sequential
        ]
        out.append(
            Block(
                "table",
                text=f"sequential decision (a verdict needs evidence ≥ {1 / report.alpha:g})",
                headers=[
                    "KPI",
                    "blocks",
                    "estimate",
                    "interval",
                    "evidence",
                    "equiv. evidence",
                    "verdict",
                    "why",
                ],
                rows=rows,
                verdict_column=6,
                right={1, 2, 4, 5},
            )
        )
    if group.hosts:
        out.append(_host_block(group, report))
    layers = _layer_block(comp.metrics)
    if layers is not None:
        out.append(layers)
    listed = shown_secondary(comp)
    secondary = [m for m in listed if show_all or (is_evidence(m) and not is_mechanism(m))]
    if secondary:
        title = "secondary metrics" if show_all else "other metrics that changed"
        out.append(
            Block(
                "table",
                text=title,
                headers=list(_METRIC_HEADERS),
                rows=_metric_rows(secondary),
                verdict_column=6,
                right={1, 2, 3, 5},
            )
        )
        named = [shown_name(m) for m in secondary if m.aliases]
        if named:
            # "(+N)" in the table: the other names of one measurement, said once here
            out.append(Block("lines", text="one measurement, several names", lines=named))
    mechanism = [m for m in shown_secondary(comp) if is_mechanism(m)] if not show_all else []
    shifts = [s for s in comp.histogram_shifts if show_all or s.verdict == "changed"]
    if mechanism:
        lines = [
            f"{shown_name(m)}: {fmt.value(m.a.median, m.unit)} → {fmt.value(m.b.median, m.unit)} "
            f"({fmt.pct(m.change_pct)} {fmt.ci(m.ci_low_pct, m.ci_high_pct)}, "
            f"p adj {fmt.p_value(m.p_adjusted)})"
            for m in mechanism
        ]
        out.append(Block("lines", text="mechanism evidence (changed significantly)", lines=lines))
    for shift in shifts:
        out += _shift_blocks(shift)
    steady = [s for s in comp.histogram_shifts if not show_all and s.verdict != "changed"]
    if steady:
        # a mechanism that did NOT move is evidence too (e.g. pages per writepages call)
        out.append(
            Block(
                "lines",
                text="histograms without a significant shift",
                lines=[_steady_line(s) for s in steady],
            )
        )
    unchanged = len(shown_secondary(comp)) - len(secondary) - len(mechanism)
    if unchanged > 0 and not show_all:
        out.append(
            Block(
                "lines",
                lines=[
                    f"{unchanged} other metric(s) without a significant change (--all shows them)"
                ],
            )
        )
    for lat in group.latency:
        rows = []
        for r in lat.rows:
            test = r.test
            rows.append(
                [
                    r.percentile,
                    fmt.value(r.a, "ns"),
                    fmt.value(r.b, "ns"),
                    fmt.pct(r.change_pct),
                    "—" if test is None else fmt.p_value(test.p_adjusted),
                    "—" if test is None else fmt.verdict(test),
                ]
            )
        out.append(
            Block(
                "table",
                text=(
                    f"{lat.name} percentiles of merged bins ({lat.runs_a} vs {lat.runs_b} runs, "
                    f"{lat.events_a} vs {lat.events_b} I/Os; p and verdict: per-run values)"
                ),
                headers=["percentile", "A", "B", "change", "p adj", "verdict"],
                rows=rows,
                verdict_column=5,
                right={1, 2, 3, 4},
            )
        )
    warnings = _warnings(group, show_all)
    if warnings:
        out.append(Block("lines", text="warnings", lines=warnings))
    return out


# a stack's diskstats under role names (iolab.lab.evidence): the top device, md members, paths
_LAYER = re.compile(r"diskstats\.(top\d*|member\d+|path\d+)\.(\w+)")
_LAYER_FIELDS = ("write_sectors", "write_ios", "read_sectors", "read_ios", "util_pct")


def _layer_block(metrics: Sequence[MetricComparison]) -> Block | None:
    """Where the I/O went: the top device and every member or path, A → B medians of the
    per-sample deltas, always shown (a stack's members are the evidence of what it did)."""
    by_layer: dict[str, dict[str, MetricComparison]] = {}
    for m in metrics:
        match = _LAYER.fullmatch(m.name)
        if match and match.group(2) in _LAYER_FIELDS:
            by_layer.setdefault(match.group(1), {})[match.group(2)] = m
    if not any(not name.startswith("top") for name in by_layer):
        return None

    def order(name: str) -> tuple[int, int]:
        digits = "".join(c for c in name if c.isdigit())
        return (0 if name.startswith("top") else 1, int(digits or 0))

    def cell(m: MetricComparison | None, sectors: bool = False) -> str:
        if m is None:
            return "—"
        if sectors:  # 512-byte sectors, shown as bytes
            return (
                f"{fmt.value(m.a.median * 512, 'bytes')} → {fmt.value(m.b.median * 512, 'bytes')}"
            )
        return f"{fmt.value(m.a.median, m.unit)} → {fmt.value(m.b.median, m.unit)}"

    rows = []
    for name in sorted(by_layer, key=order):
        got = by_layer[name]
        written = got.get("write_sectors")
        rows.append(
            [
                name,
                cell(written, sectors=True),
                cell(got.get("write_ios")),
                cell(got.get("read_sectors"), sectors=True),
                cell(got.get("util_pct")),
                "—" if written is None else fmt.verdict(written),
            ]
        )
    return Block(
        "table",
        text="per layer: where the I/O went (diskstats of the top device and each member/path, "
        "medians per sample A → B)",
        headers=["device", "written", "write I/Os", "read", "busy %", "written: verdict"],
        rows=rows,
        verdict_column=5,
    )


def _host_block(group: Group, report: Report) -> Block:
    """The KPIs' effect on each host, and whether it differs between hosts."""
    rows = []
    for strata in group.hosts:
        if strata.p_interaction is None:
            verdict = "not tested (needs 2 hosts with 2 blocks)"
        elif strata.flagged:
            verdict = f"differs by host (p {fmt.p_value(strata.p_interaction)})"
        else:
            verdict = f"alike (p {fmt.p_value(strata.p_interaction)})"
        for i, effect in enumerate(strata.effects):
            rows.append(
                [
                    strata.metric if i == 0 else "",
                    effect.host,
                    str(effect.blocks),
                    fmt.pct(effect.change_pct) if effect.change_pct is not None else "-",
                    verdict if i == 0 else "",
                ]
            )
    return Block(
        "table",
        text=f"per host (host × {group.b_name}-vs-{group.a_name} interaction, alpha "
        f"{report.alpha:g})",
        headers=["KPI", "host", "blocks", "change", "interaction"],
        rows=rows,
        right={2, 3},
    )


def _warnings(group: Group, show_all: bool) -> list[str]:
    comp = group.comparison
    out = [*comp.warnings]
    for m in comp.metrics:
        if m.kpi or show_all or is_evidence(m):
            out += [f"{m.name}: {w}" for w in m.warnings]
    for s in comp.histogram_shifts:
        if show_all or s.verdict == "changed":
            out += [f"{s.name}: {w}" for w in s.warnings]
    return list(dict.fromkeys(out))


def blocks(report: Report, show_all: bool = False) -> list[Block]:
    out = [Block("title", text="iolab compare", lines=describe(report))]
    several = len(report.groups) > 1
    if several:
        out.append(_kpi_overview(report))
    elif report.groups and report.groups[0].comparison.kpis:
        out.append(_kpi_detail(report.groups[0]))
    for group in report.groups:
        out += _group_blocks(group, report, show_all, several)
    if report.warnings:
        out.append(Block("lines", text="notes", lines=list(report.warnings)))
    return [_shown(block) for block in out]


def _shown(block: Block) -> Block:
    """Labels, captions and tags are user text: control characters made visible (the
    terminal table and markdown both print these blocks)."""
    block.text = shown(block.text)
    block.headers = [shown(h) for h in block.headers]
    block.rows = [[shown(cell) for cell in row] for row in block.rows]
    block.lines = [shown(line) for line in block.lines]
    return block
