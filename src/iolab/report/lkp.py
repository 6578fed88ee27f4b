"""`--format lkp`: the 0-day robot's comparison columns — base ±%stddev, %change,
new ±%stddev, metric — so people who read LKP reports read this at a glance.

Differences, on purpose: base/new are means with the relative sample standard deviation (as
LKP prints them) but `%change` is iolab's estimate (Hodges–Lehmann on log values, the same
figure every format shows), and the verdict of every listed KPI follows the table.  Listed:
every KPI, then the secondary metrics that changed significantly (all with --all).
"""

from __future__ import annotations

from iolab.report import fmt
from iolab.report.model import Group, Report, is_evidence
from iolab.report.options import RenderOptions
from iolab.stats.types import MetricComparison, Summary

RULE = "=" * 89


def lkp_number(v: float) -> str:
    """LKP's style: integers from 1000 up, two decimals below, %.4g past 1e8."""
    if abs(v) >= 1e8:
        return f"{v:.4g}"
    if abs(v) >= 1000:
        return f"{round(v):d}"
    return f"{v:.2f}"


def stddev_cell(s: Summary) -> str:
    """` ± 12%`, or blanks when the relative stddev rounds below 2% (as LKP hides it)."""
    if s.cv is None:
        return " " * 6
    percent = round(100 * s.cv)
    return f" ±{percent:3d}%" if percent >= 2 else " " * 6


def change_cell(change: float | None) -> str:
    if change is None:
        return "—"
    return f"{change:+.1e}%" if abs(change) >= 1e5 else f"{change:+.1f}%"


def line(m: MetricComparison) -> str:
    return (
        f"{lkp_number(m.a.mean):>10}{stddev_cell(m.a)}"
        f"{change_cell(m.change_pct):>11}"
        f"{lkp_number(m.b.mean):>11}{stddev_cell(m.b)}  {m.name}"
    )


def _group(group: Group, show_all: bool) -> list[str]:
    out = [RULE]
    if group.cell:
        out += ["/".join(group.cell) + ":", "  " + "/".join(group.cell.values()), ""]
    out += ["compared:", f"  A  {group.a_name}", f"  B  {group.b_name}", ""]
    out += [
        f"{group.a_name[:16]:<16} {group.b_name[:27]:<27} ",
        "---------------- --------------------------- ",
        "         %stddev     %change         %stddev",
        "             \\          |                \\  ",
    ]
    comp = group.comparison
    listed = [*comp.kpis, *(m for m in comp.secondary if show_all or is_evidence(m))]
    out += [line(m) for m in listed]
    out.append("")
    for m in comp.kpis:
        out.append(
            f"{m.name}: {fmt.verdict(m)}, change {fmt.pct(m.change_pct)} "
            f"{fmt.ci(m.ci_low_pct, m.ci_high_pct)}, p={fmt.p_value(m.p_adjusted)}, "
            f"n={m.n_a}+{m.n_b}"
        )
    return out


def render(report: Report, options: RenderOptions) -> str:
    out: list[str] = []
    for group in report.groups:
        out += _group(group, options.show_all)
        out.append("")
    return "\n".join(out).rstrip() + "\n"
