"""The HTML report: one self-contained page (inline CSS and inline SVG, no script, nothing
fetched), so it works offline and as a mail attachment.

Formats only: it lays out an `HtmlReport` (report/html_model.py) that the caller filled.
Every piece of user text (labels, selectors, cells, captions, warnings) goes through
Jinja2's autoescaping; figures are matplotlib SVG, whose text matplotlib escapes itself.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from functools import cache
from typing import Any

from iolab.report import fmt, plots
from iolab.report.html_model import GroupDetail, HtmlReport
from iolab.report.model import Group, is_evidence, procedure, shown_secondary
from iolab.stats.types import MetricComparison

VERDICT_CLASS = {
    "regression": "regression",
    "improvement": "improvement",
    "no change": "nochange",
    "inconclusive": "inconclusive",
    "changed": "changed",
}
MAX_SHIFT_FIGURES = 6  # per group; the rest are listed


@dataclass(frozen=True)
class KpiRow:
    group: str
    metric: str
    a: str
    b: str
    n: str  # "n=30" or "n=6+8"
    change: str
    interval: str
    verdict: str
    css: str
    bar: str  # an inline SVG: the interval against the no-change band


@dataclass(frozen=True)
class Figure:
    svg: str
    caption: str


@dataclass(frozen=True)
class GroupView:
    title: str
    subtitle: str
    kpi_figures: tuple[Figure, ...]
    sequential_figures: tuple[Figure, ...]
    latency: tuple[Any, ...]
    evidence: tuple[MetricComparison, ...]
    steady: tuple[MetricComparison, ...]
    alone: tuple[MetricComparison, ...]
    shift_figures: tuple[Figure, ...]
    steady_shifts: tuple[str, ...]
    warnings: tuple[str, ...]
    procedure: str = ""  # the correction the evidence passed, named


@cache
def _environment() -> Any:
    import jinja2

    env = jinja2.Environment(
        loader=jinja2.PackageLoader("iolab.report", "templates"),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["value"] = lambda v, unit: "—" if v is None else fmt.value(v, unit)
    env.filters["pct"] = fmt.pct
    env.filters["p"] = fmt.p_value
    env.filters["vclass"] = lambda v: VERDICT_CLASS.get(v, "inconclusive")
    return env


def warm_up() -> None:
    """Import the plotting and template libraries now (before worker processes fork)."""
    _environment()
    plots.warm_up()


def with_links(page: HtmlReport, links: tuple[tuple[str, str], ...]) -> HtmlReport:
    return replace(page, links=links)


def render_page(template: str, **context: Any) -> str:
    """Render one of the package's templates (the site uses this too)."""
    return str(_environment().get_template(template).render(**context))


def interval(m: MetricComparison, group: Group | None = None) -> str:
    """A fixed-n interval as printed; a confidence sequence's (the KPI of an `ab` run) with
    a side still at the searched range's edge shown unbounded, as the other formats do."""
    if group is not None and any(s.name == m.name for s in group.sequential):
        return fmt.sequence_ci(m.ci_low_pct, m.ci_high_pct)
    return fmt.ci(m.ci_low_pct, m.ci_high_pct)


def interval_bar(m: MetricComparison, scale: float) -> str:
    """A small SVG: the no-change band, zero, the interval and the estimate, on a shared
    symmetric scale (±`scale` %) so the rows of one table can be compared by eye."""
    w, h, pad = 120.0, 18.0, 4.0

    def x(v: float) -> float:
        v = max(-scale, min(scale, v))
        return pad + (v + scale) / (2 * scale) * (w - 2 * pad)

    css = VERDICT_CLASS.get(m.verdict, "inconclusive")
    parts = [
        f'<svg class="bar" width="{w:.0f}" height="{h:.0f}" viewBox="0 0 {w:.0f} {h:.0f}" '
        f'role="img" aria-label="interval">',
        f'<rect x="{x(-m.margin_pct):.1f}" y="2" width="{x(m.margin_pct) - x(-m.margin_pct):.1f}"'
        f' height="{h - 4:.0f}" class="band"/>',
        f'<line x1="{x(0):.1f}" x2="{x(0):.1f}" y1="1" y2="{h - 1:.0f}" class="zero"/>',
    ]
    if m.ci_low_pct is not None and m.ci_high_pct is not None:
        parts.append(
            f'<line x1="{x(m.ci_low_pct):.1f}" x2="{x(m.ci_high_pct):.1f}" y1="{h / 2:.0f}" '
            f'y2="{h / 2:.0f}" class="ci {css}"/>'
        )
    if m.change_pct is not None:
        parts.append(f'<circle cx="{x(m.change_pct):.1f}" cy="{h / 2:.0f}" r="3.2" class="{css}"/>')
    parts.append("</svg>")
    return "".join(parts)


def _scale(metrics: Sequence[MetricComparison]) -> float:
    values = [
        abs(v)
        for m in metrics
        for v in (m.ci_low_pct, m.ci_high_pct, m.change_pct, 2 * m.margin_pct)
        if v is not None
    ]
    return min(max(values, default=5.0) * 1.1, 100.0)


def kpi_rows(report: HtmlReport) -> list[KpiRow]:
    kpis = report.report.kpis()
    scale = _scale([m for _, m in kpis])
    several = len(report.report.groups) > 1
    rows = []
    for group, m in kpis:
        rows.append(
            KpiRow(
                group=group.title if several else f"{group.b_name} vs {group.a_name}",
                metric=m.name,
                a=fmt.value(m.a.median, m.unit),
                b=fmt.value(m.b.median, m.unit),
                n=f"n={m.a.n}" if m.a.n == m.b.n else f"n={m.a.n}+{m.b.n}",
                change=fmt.pct(m.change_pct),
                interval=interval(m, group),
                verdict=m.verdict,
                css=VERDICT_CLASS.get(m.verdict, "inconclusive"),
                bar=interval_bar(m, scale),
            )
        )
    return rows


def _kpi_caption(m: MetricComparison, group: Group) -> str:
    paired = f"paired, {m.n_pairs} blocks" if m.paired else f"unpaired, n={m.a.n}+{m.b.n}"
    return (
        f"{m.name}: B {fmt.pct(m.change_pct)} against A, interval {interval(m, group)}, "
        f"verdict {m.verdict} ({paired}, p={fmt.p_value(m.p_value)})"
    )


def _group_view(
    index: int, group: Group, detail: GroupDetail, show_all: bool, alpha: float
) -> GroupView:
    c = group.comparison
    by_name = {m.name: m for m in c.kpis}
    kpi_figures = []
    for j, ks in enumerate(detail.samples):
        m = by_name.get(ks.metric)
        svg = plots.samples_figure(ks, group.a_name, group.b_name, f"iolab-g{index}-k{j}")
        kpi_figures.append(Figure(svg, _kpi_caption(m, group) if m else ks.metric))
    sequential_figures = []
    for j, trace in enumerate(detail.traces):
        stop = f"decided after {trace.stopped_at} blocks" if trace.stopped_at else "undecided"
        sequential_figures.append(
            Figure(
                plots.sequential_figure(trace, f"iolab-g{index}-s{j}"),
                f"{trace.metric}: sequential test, {trace.verdict} ({stop})",
            )
        )
    secondary = [m for m in shown_secondary(c) if not m.name.endswith(tuple(_LATENCY_SUFFIXES))]
    evidence = tuple(m for m in secondary if is_evidence(m))
    steady = tuple(m for m in secondary if not is_evidence(m)) if show_all else ()
    # significant alone but not after the correction (an `ab` that decided after a handful of
    # blocks): shown apart, as the brief format does, rather than hidden as "did not move"
    alone = tuple(
        sorted(
            (
                m
                for m in secondary
                if not is_evidence(m) and m.p_value is not None and m.p_value <= alpha
            ),
            key=lambda m: -abs(m.change_pct or 0.0),
        )
    )
    shifted = [s for s in c.histogram_shifts if s.verdict == "changed"]
    shift_figures = tuple(
        Figure(
            plots.histogram_figure(s, group.a_name, group.b_name, f"iolab-g{index}-h{j}"),
            f"{s.name}: share of events per bucket, A and B side by side; "
            f"{100 * s.total_variation:.1f}% of events moved (p adj {fmt.p_value(s.p_adjusted)}, "
            f"{s.runs_a}+{s.runs_b} runs)",
        )
        for j, s in enumerate(shifted[:MAX_SHIFT_FIGURES])
    )
    steady_shifts = tuple(
        _steady_shift(s) for s in c.histogram_shifts if s.verdict != "changed"
    ) + tuple(f"{s.name}: shifted (figure left out)" for s in shifted[MAX_SHIFT_FIGURES:])
    kpi_warnings = tuple(w for m in c.kpis for w in m.warnings)
    subtitle = (
        f"paired by block ({group.paired_blocks} blocks)"
        if group.paired_blocks is not None
        else "unpaired"
    )
    return GroupView(
        title=group.title,
        subtitle=subtitle,
        kpi_figures=tuple(kpi_figures),
        sequential_figures=tuple(sequential_figures),
        latency=group.latency,
        evidence=evidence,
        steady=steady,
        alone=alone[:MAX_ALONE],
        shift_figures=shift_figures,
        steady_shifts=steady_shifts,
        warnings=tuple(dict.fromkeys((*c.warnings, *kpi_warnings))),
        procedure=procedure(c),
    )


MAX_ALONE = 12

# per-run percentiles are already in the latency table; the evidence table skips them
_LATENCY_SUFFIXES = tuple(f"_ns.{p}" for p in ("p50", "p90", "p99", "p99.9", "p99.99"))


def _steady_shift(s: Any) -> str:
    means = ""
    if s.mean_a is not None and s.mean_b is not None:
        means = f"mean {fmt.sig(s.mean_a, 3)} → {fmt.sig(s.mean_b, 3)}, "
    return (
        f"{s.name}: {means}{100 * s.total_variation:.1f}% of events moved "
        f"(p adj {fmt.p_value(s.p_adjusted)})"
    )


def render(report: HtmlReport, show_all: bool = False) -> str:
    """The whole page as text."""
    groups = [
        _group_view(i, g, d, show_all, report.report.alpha)
        for i, (g, d) in enumerate(zip(report.report.groups, report.details, strict=True))
    ]
    r = report.report
    settings = f"alpha {fmt.sig(r.alpha, 3)}, no-change margin ±{fmt.sig(r.margin_pct, 3)}%"
    if r.groups:
        settings += f"; secondary metrics corrected by {procedure(r.groups[0].comparison)}"
    if r.sequential:
        settings += "; KPI verdicts from the sequential test (anytime-valid)"
    return render_page(
        "report.html.j2",
        page=report,
        r=r,
        settings=settings,
        rows=kpi_rows(report),
        groups=groups,
        setting_names=_setting_names(report),
        facts=_facts(report),
        runs_same=len({side.runs for side in report.sides}) == 1,
    )


def _facts(report: HtmlReport) -> list[tuple[str, list[str], bool]]:
    """Each provenance fact with its value on every side; `same` facts are shown once."""
    if not report.sides:
        return []
    out = []
    for i, (name, _) in enumerate(report.sides[0].facts):
        values = [side.facts[i][1] if i < len(side.facts) else "—" for side in report.sides]
        out.append((name, values, len(set(values)) == 1))
    return out


def _setting_names(report: HtmlReport) -> list[tuple[str, list[str], bool]]:
    """Each knob with its value on every side, and whether the sides differ."""
    names = sorted({k for side in report.sides for k in side.settings})
    out = []
    for name in names:
        values = [side.settings.get(name, "—") for side in report.sides]
        out.append((name, values, len(set(values)) > 1))
    return sorted(out, key=lambda t: (not t[2], t[0]))
