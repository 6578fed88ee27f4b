"""`--format benchstat`: the layout of golang.org/x/perf's cmd/benchstat — one table per
unit, each row a metric: old value ± spread, new value ± spread, and "vs base" with the
change and (p=… n=…), or `~` when there is no significant change.

`± x%` is the half-width of the median's distribution-free confidence interval relative to
the median (∞ when n is too small, with a footnote); the change and p are iolab's (paired
when the samples are), and `p=` is the ADJUSTED p (after the table's correction), where
benchstat prints each metric's raw p.  This is benchstat's layout, not its input: raw samples
for benchstat itself come from `iolab export` (report.gobench).  Warnings become numbered
footnotes under the table.
"""

from __future__ import annotations

import math

from iolab.report import fmt
from iolab.report.model import Group, Report, is_evidence
from iolab.report.options import RenderOptions
from iolab.stats.types import MetricComparison, Summary

_SUP = str.maketrans("0123456789", "⁰¹²³⁴⁵⁶⁷⁸⁹")


class _Notes:
    def __init__(self) -> None:
        self.items: list[str] = []

    def mark(self, text: str) -> str:
        if text not in self.items:
            self.items.append(text)
        return str(self.items.index(text) + 1).translate(_SUP)


def _spread(s: Summary, notes: _Notes) -> str:
    if s.median_ci_low is None or s.median_ci_high is None or s.median == 0:
        return "± ∞ " + notes.mark("need >= 6 samples for a confidence interval of the median")
    half = max(abs(s.median_ci_high - s.median), abs(s.median - s.median_ci_low))
    return f"± {100 * half / abs(s.median):.0f}%"


def _n(m: MetricComparison) -> str:
    return f"n={m.n_a}" if m.n_a == m.n_b else f"n={m.n_a}+{m.n_b}"


def vs_base(m: MetricComparison, notes: _Notes) -> str:
    significant = m.verdict in ("regression", "improvement", "changed")
    head = fmt.pct(m.change_pct) if significant and m.change_pct is not None else "~"
    if significant and m.change_pct is not None:
        head = f"{m.change_pct:+.2f}%"
    cell = f"{head} (p={fmt.p_value(m.p_adjusted)} {_n(m)})"
    marks = "".join(notes.mark(w) for w in m.warnings)
    return f"{cell} {marks}" if marks else cell


def _unit_name(unit: str) -> str:
    return {"ns": "time", "B/s": "B/s", "B": "B", "": "value"}.get(unit, unit)


def _geomean(values: list[float]) -> float | None:
    if not values or any(v <= 0 for v in values):
        return None
    return math.exp(sum(math.log(v) for v in values) / len(values))


def _table(group: Group, unit: str, metrics: list[MetricComparison], notes: _Notes) -> list[str]:
    rows = []
    for m in metrics:
        rows.append(
            [
                m.name,
                f"{fmt.value(m.a.median, unit)} {_spread(m.a, notes)}",
                f"{fmt.value(m.b.median, unit)} {_spread(m.b, notes)}",
                vs_base(m, notes),
            ]
        )
    if len(metrics) > 1:
        ga = _geomean([m.a.median for m in metrics])
        gb = _geomean([m.b.median for m in metrics])
        if ga is not None and gb is not None:
            rows.append(
                [
                    "geomean",
                    fmt.value(ga, unit),
                    fmt.value(gb, unit),
                    f"{100 * (gb / ga - 1):+.2f}%",
                ]
            )
    w = [max(len(r[i]) for r in rows) for i in range(4)]
    w[0] = max(w[0], 1)
    w[3] = max(w[3], len("vs base"))
    a_name, b_name = group.a_name, group.b_name
    w[1] = max(w[1], len(a_name), len(_unit_name(unit)))
    span = max(w[2] + 2 + w[3], len(b_name))
    w[3] = span - w[2] - 2
    lines = [
        " " * w[0] + " │ " + a_name.center(w[1]) + " │ " + b_name.center(span) + " │",
        " " * w[0]
        + " │ "
        + _unit_name(unit).center(w[1])
        + " │ "
        + _unit_name(unit).center(w[2])
        + "  "
        + "vs base".ljust(w[3])
        + " │",
    ]
    for r in rows:
        lines.append(
            (
                r[0].ljust(w[0]) + "   " + r[1].ljust(w[1]) + "   " + r[2].ljust(w[2]) + "  " + r[3]
            ).rstrip()
        )
    return lines


def render(report: Report, options: RenderOptions) -> str:
    out: list[str] = []
    for group in report.groups:
        notes = _Notes()
        for k, v in group.cell.items():
            out.append(f"{k}: {v}")
        comp = group.comparison
        listed = [*comp.kpis, *(m for m in comp.secondary if options.show_all or is_evidence(m))]
        units = list(dict.fromkeys(m.unit for m in listed))
        for unit in units:
            out += _table(group, unit, [m for m in listed if m.unit == unit], notes)
            out.append("")
        for i, text in enumerate(notes.items, start=1):
            out.append(f"{str(i).translate(_SUP)} {text}")
        if notes.items:
            out.append("")
    return "\n".join(out).rstrip() + "\n"
