"""`--format json`: the whole report as one JSON object (schema `iolab-compare/1`,
documented field by field in docs/compare.md).  Values that cannot be computed are null,
never NaN, so every JSON parser accepts the output."""

from __future__ import annotations

import json
import math
from dataclasses import asdict
from typing import Any

from iolab.report.model import Group, LatencySummary, Report, ci_exit_code
from iolab.report.options import RenderOptions
from iolab.stats.types import HistogramShift, MetricComparison, SequentialState, Summary

SCHEMA = "iolab-compare/1"


def _clean(value: Any) -> Any:
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: _clean(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_clean(v) for v in value]
    if hasattr(value, "value") and not isinstance(value, int | str):
        return value.value  # enums (Direction)
    return value


clean = _clean  # for other JSON schemas built on this one (iolab-bisect/1)


def _summary(s: Summary) -> dict[str, Any]:
    return {k: v for k, v in asdict(s).items() if k != "warnings"} | {"warnings": list(s.warnings)}


def metric(m: MetricComparison) -> dict[str, Any]:
    return {
        "name": m.name,
        "unit": m.unit,
        "direction": m.direction.value,
        "kpi": m.kpi,
        "verdict": m.verdict,
        "change_pct": m.change_pct,
        "ci_low_pct": m.ci_low_pct,
        "ci_high_pct": m.ci_high_pct,
        "p_value": m.p_value,
        "p_adjusted": m.p_adjusted,
        "ci_level": m.ci_level,
        "same_as": m.same_as,
        "aliases": list(m.aliases),
        "alias_of": m.alias_of,
        "test": m.test,
        "paired": m.paired,
        "n_pairs": m.n_pairs,
        "n_a": m.n_a,
        "n_b": m.n_b,
        "margin_pct": m.margin_pct,
        "tost_p_value": m.tost_p_value,
        "min_p_value": m.min_p_value,
        "runs_needed": m.runs_needed,
        "a": _summary(m.a),
        "b": _summary(m.b),
        "warnings": list(m.warnings),
    }


def shift(s: HistogramShift) -> dict[str, Any]:
    out = asdict(s)
    out["buckets"] = [asdict(b) for b in s.buckets]
    out["warnings"] = list(s.warnings)
    return out


def latency(lat: LatencySummary) -> dict[str, Any]:
    return {
        "name": lat.name,
        "runs_a": lat.runs_a,
        "runs_b": lat.runs_b,
        "events_a": lat.events_a,
        "events_b": lat.events_b,
        "percentiles": [
            {
                "percentile": r.percentile,
                "a": r.a,
                "b": r.b,
                "change_pct": r.change_pct,
                "p_value": None if r.test is None else r.test.p_adjusted,
                "verdict": None if r.test is None else r.test.verdict,
            }
            for r in lat.rows
        ],
    }


def sequential(s: SequentialState) -> dict[str, Any]:
    out = asdict(s)
    out["direction"] = s.direction.value
    out["warnings"] = list(s.warnings)
    return out


def group(g: Group) -> dict[str, Any]:
    comp = g.comparison
    return {
        "a": g.a_name,
        "b": g.b_name,
        "cell": dict(g.cell),
        "paired_blocks": g.paired_blocks,
        "correction": comp.correction,
        "procedure": comp.procedure,
        "metrics": [metric(m) for m in comp.metrics],
        "histogram_shifts": [shift(s) for s in comp.histogram_shifts],
        "latency": [latency(x) for x in g.latency],
        "sequential": [sequential(s) for s in g.sequential],
        "hosts": [
            {
                "metric": h.metric,
                "effects": [
                    {"host": e.host, "blocks": e.blocks, "change_pct": e.change_pct}
                    for e in h.effects
                ],
                "p_interaction": h.p_interaction,
                "flagged": h.flagged,
                "test": h.test,
            }
            for h in g.hosts
        ],
        "warnings": list(comp.warnings),
    }


def to_json(report: Report) -> dict[str, Any]:
    out: dict[str, Any] = _clean(
        {
            "schema": SCHEMA,
            "a": report.a,
            "b": report.b,
            "mode": report.mode,
            "by": report.by,
            "alpha": report.alpha,
            "margin_pct": report.margin_pct,
            "sequential": report.sequential,
            "ci_exit_code": ci_exit_code(report),
            "groups": [group(g) for g in report.groups],
            "warnings": list(report.warnings),
        }
    )
    return out


def render(report: Report, options: RenderOptions) -> str:
    return json.dumps(to_json(report), indent=2, allow_nan=False, ensure_ascii=False) + "\n"
