"""`iolab history` and `iolab regressions` as text, markdown and JSON — formats only.

JSON schemas `iolab-history/1` and `iolab-regressions/1` are described in docs/history.md.
User text (labels, tags, case values, notes) is escaped: control characters never reach
the terminal, `|` never breaks a markdown table.
"""

from __future__ import annotations

import json
import math
from datetime import datetime
from typing import Any

from iolab.model.history import ChangePoint, History, Point, Series
from iolab.model.regression import Regression
from iolab.report.fmt import value as fmt_value

HISTORY_SCHEMA = "iolab-history/1"
REGRESSIONS_SCHEMA = "iolab-regressions/1"
_BARS = "▁▂▃▄▅▆▇█"
_SPARK_WIDTH = 60


def clean(text: str | None) -> str:
    """User text safe for a terminal: control characters shown as escapes."""
    if text is None:
        return ""
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)


def _md(text: str | None) -> str:
    return clean(text).replace("|", "\\|")


def sparkline(values: list[float], width: int = _SPARK_WIDTH) -> str:
    """One character per point (points averaged into `width` buckets when longer)."""
    if not values:
        return ""
    if len(values) > width:
        step = len(values) / width
        values = [
            sum(values[int(i * step) : max(int((i + 1) * step), int(i * step) + 1)])
            / len(values[int(i * step) : max(int((i + 1) * step), int(i * step) + 1)])
            for i in range(width)
        ]
    lo, hi = min(values), max(values)
    if math.isclose(lo, hi):
        return _BARS[3] * len(values)
    return "".join(
        _BARS[min(int((v - lo) / (hi - lo) * len(_BARS)), len(_BARS) - 1)] for v in values
    )


def _time(t: datetime | None) -> str:
    return t.strftime("%Y-%m-%d %H:%M") if t else "-"


def _pct(v: float | None) -> str:
    return "n/a" if v is None else f"{v:+.1f}%"


def _cp_line(s: Series, cp: ChangePoint) -> str:
    ci = (
        f"[{cp.ci_low_pct:+.1f}%, {cp.ci_high_pct:+.1f}%]"
        if cp.ci_low_pct is not None and cp.ci_high_pct is not None
        else "[n/a]"
    )
    reg = f"  → regression #{cp.regression_id}" if cp.regression_id is not None else ""
    return (
        f"  {cp.kind} at point {cp.index + 1} ({_time(cp.time)}, {clean(cp.after.ref)}; "
        f"last before: {clean(cp.before.ref)}): "
        f"{fmt_value(cp.median_before, s.unit)} → {fmt_value(cp.median_after, s.unit)} "
        f"{_pct(cp.change_pct)} {ci}, p={cp.p_value:.3g} (search included; "
        f"{cp.n_before}+{cp.n_after} points){reg}"
    )


def _case_text(s: Series) -> str:
    c = s.case
    parts = []
    if c.plan:
        parts.append(f"plan {c.plan}")
    if c.variant:
        parts.append(f"variant {c.variant}")
    if c.cell:
        parts.append(",".join(f"{k}={v}" for k, v in sorted(c.cell.items())))
    if c.host:
        parts.append(f"host {c.host}")
    parts += [f"{k}={v}" for k, v in sorted(c.extra.items())]
    return clean(" · ".join(parts) or "all results")


def render_history(h: History, fmt: str) -> str:
    if fmt == "json":
        return json.dumps(history_json(h), indent=2, sort_keys=False) + "\n"
    md = fmt == "markdown"
    out: list[str] = []
    head = f"History of {h.selector} (order: {h.order}; {len(h.series)} series)"
    out += [f"# {_md(head)}", ""] if md else [clean(head), ""]
    for s in h.series:
        values = [p.value for p in s.points]
        title = f"{s.metric}{' (KPI)' if s.kpi else ''} — {_case_text(s)}"
        last = fmt_value(values[-1], s.unit) if values else "-"
        if md:
            out += [f"## {_md(title)}", "", f"`{sparkline(values)}`", ""]
            out.append(f"{len(values)} points, last {last}  ")
        else:
            out += [clean(title), f"  {sparkline(values)}  {len(values)} points, last {last}"]
        if not s.change_points:
            out.append("  no change point" if not md else "no change point  ")
        for cp in s.change_points:
            out.append(_cp_line(s, cp) if not md else f"- {_md(_cp_line(s, cp).strip())}")
        for w in s.warnings:
            out.append(f"  warning: {clean(w)}" if not md else f"- warning: {_md(w)}")
        out.append("")
    for w in h.warnings:
        out.append(f"warning: {clean(w)}")
    return "\n".join(out).rstrip("\n") + "\n"


def _point_json(p: Point) -> dict[str, Any]:
    return {
        "run_id": p.run_id,
        "sample_id": p.sample_id,
        "label": p.label,
        "time": p.time.isoformat() if p.time else None,
        "tags": dict(sorted(p.tags.items())),
        "value": p.value,
        "ci_low": p.ci_low,
        "ci_high": p.ci_high,
        "n": p.n,
    }


def _cp_json(cp: ChangePoint) -> dict[str, Any]:
    return {
        "index": cp.index,
        "time": cp.time.isoformat() if cp.time else None,
        "before": _point_json(cp.before),
        "after": _point_json(cp.after),
        "runs_before": list(cp.runs_before),
        "runs_after": list(cp.runs_after),
        "n_before": cp.n_before,
        "n_after": cp.n_after,
        "median_before": cp.median_before,
        "median_after": cp.median_after,
        "change_pct": cp.change_pct,
        "ci_low_pct": cp.ci_low_pct,
        "ci_high_pct": cp.ci_high_pct,
        "p_value": cp.p_value,
        "p_ab": cp.p_ab,
        "kind": cp.kind,
        "regression_id": cp.regression_id,
    }


def history_json(h: History) -> dict[str, Any]:
    return {
        "schema": HISTORY_SCHEMA,
        "selector": h.selector,
        "order": h.order,
        "min_segment": h.min_segment,
        "alpha": h.alpha,
        "series": [
            {
                "metric": s.metric,
                "unit": s.unit,
                "direction": str(s.direction),
                "kpi": s.kpi,
                "case": s.case.to_json(),
                "points": [_point_json(p) for p in s.points],
                "change_points": [_cp_json(cp) for cp in s.change_points],
                "warnings": list(s.warnings),
            }
            for s in h.series
        ],
        "warnings": list(h.warnings),
    }


def regression_json(r: Regression) -> dict[str, Any]:
    return {
        "id": r.id,
        "metric": r.metric,
        "case": r.case,
        "origin": r.origin,
        "status": r.status,
        "created_at": r.created_at.isoformat(),
        "introduced_run_id": r.introduced_run_id,
        "last_good_run_id": r.last_good_run_id,
        "introduced_at": r.introduced_at.isoformat() if r.introduced_at else None,
        "commit_range": r.commit_range,
        "culprit": r.culprit,
        "change_pct": r.change_pct,
        "ci_low_pct": r.ci_low_pct,
        "ci_high_pct": r.ci_high_pct,
        "p_value": r.p_value,
        "lab": r.details.get("lab") or {},  # the lab's answers and bisects (docs/history.md)
        "log": [
            {
                "at": e.at.isoformat(),
                "from": e.old_status,
                "to": e.new_status,
                "note": e.note,
                "evidence_run_id": e.evidence_run_id,
            }
            for e in r.events
        ],
    }


def _introduced(r: Regression) -> str:
    if r.culprit:
        return r.culprit
    if r.commit_range:
        return r.commit_range
    first, last = r.details.get("introduced"), r.details.get("last_good")
    if isinstance(first, str) and isinstance(last, str):
        return f"{last} .. {first}"
    if r.introduced_run_id is not None:
        last = f"run {r.last_good_run_id} .. " if r.last_good_run_id is not None else ""
        return f"{last}run {r.introduced_run_id}"
    return "-"


def regzbot_lines(r: Regression) -> str:
    """regzbot's commands for one entry: introduced, title and (for a report) its link."""
    out = []
    commit = r.culprit or r.commit_range
    if commit:
        out.append(f"#regzbot introduced: {clean(commit)}")
    title = f"{clean(r.metric)} {_pct(r.change_pct)}"
    testcase = r.details.get("testcase")
    if r.origin == "lkp" and isinstance(testcase, str):
        title += f" regression ({clean(testcase)})"
    out.append(f"#regzbot title: {title}")
    link = r.details.get("link")
    if isinstance(link, str) and link.startswith("http"):
        out.append(f"#regzbot link: {clean(link)}")
    return "\n".join(out) + "\n"


def render_regressions(entries: list[Regression], fmt: str) -> str:
    if fmt == "json":
        body = {"schema": REGRESSIONS_SCHEMA, "regressions": [regression_json(r) for r in entries]}
        return json.dumps(body, indent=2) + "\n"
    if not entries:
        return "no regressions\n"
    out: list[str] = []
    if fmt == "markdown":
        for r in entries:
            title = f"{r.metric} {_pct(r.change_pct)} ({r.origin})"
            out += [f"### Regression {r.id}: {_md(title)}", ""]
            out.append(f"- status: {r.status}")
            out.append(f"- introduced: {_md(_introduced(r))}, {_time(r.introduced_at)}")
            if r.ci_low_pct is not None and r.ci_high_pct is not None:
                out.append(
                    f"- size: {_pct(r.change_pct)} [{r.ci_low_pct:+.1f}%, {r.ci_high_pct:+.1f}%]"
                )
            for e in r.events:
                note = f": {_md(e.note)}" if e.note else ""
                ev = f" (evidence run {e.evidence_run_id})" if e.evidence_run_id else ""
                out.append(f"- {_time(e.at)} {e.old_status or 'new'} → {e.new_status}{ev}{note}")
            out.append("")
            out.append("```")
            out.append(regzbot_lines(r).rstrip("\n"))
            out.append("```")
            out.append("")
        return "\n".join(out)
    if fmt == "regzbot":
        return "\n".join(regzbot_lines(r) for r in entries)
    header = f"{'id':>4}  {'status':<10}{'metric':<24}{'change':>9}  {'interval':<20}  introduced"
    out.append(header)
    for r in entries:
        ci = (
            f"[{r.ci_low_pct:+.1f}%, {r.ci_high_pct:+.1f}%]"
            if r.ci_low_pct is not None and r.ci_high_pct is not None
            else ""
        )
        out.append(
            f"{r.id:>4}  {r.status:<10}{clean(r.metric):<24}{_pct(r.change_pct):>9}  {ci:<20}  "
            f"{clean(_introduced(r))} {_time(r.introduced_at)}"
        )
    return "\n".join(out) + "\n"
