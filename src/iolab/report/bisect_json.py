"""`iolab bisect --format json`: schema iolab-bisect/1 (docs/bisect.md lists every key)."""

from __future__ import annotations

import json
from dataclasses import asdict
from typing import Any

from iolab.model.bisect import Commit, StepRecord, TestSummary
from iolab.report import json_format
from iolab.report.bisect_model import SCHEMA, BisectReport


def _commit(c: Commit | None) -> dict[str, Any] | None:
    return None if c is None else asdict(c)


def _test(report: BisectReport, t: TestSummary | None) -> dict[str, Any] | None:
    if t is None:
        return None
    return {
        "a": report.commits[t.a].sha if t.a in report.commits else None,
        "b": report.commits[t.b].sha if t.b in report.commits else None,
        "blocks": t.blocks,
        "verdict": t.verdict,
        "estimate_pct": t.estimate_pct,
        "ci_low_pct": t.ci_low_pct,
        "ci_high_pct": t.ci_high_pct,
        "e_value": t.e_value,
        "runs_needed": t.runs_needed,
        "alpha": t.alpha,
    }


def _step(report: BisectReport, s: StepRecord) -> dict[str, Any]:
    c = report.commits.get(s.index)
    return {
        "step": s.step,
        "commit": c.sha if c else None,
        "subject": c.subject if c else None,
        "position": s.index + 1,
        "blocks": s.blocks,
        "verdict": s.verdict,
        "alpha": s.alpha,
        "vs_good_pct": s.vs_good_pct,
        "vs_bad_pct": s.vs_bad_pct,
        "e_like_bad": s.e_like_bad,
        "e_like_good": s.e_like_good,
    }


def to_json(report: BisectReport) -> dict[str, Any]:
    o = report.outcome
    culprit = report.commit(o.culprit)
    in_range = (
        [_commit(report.commits.get(i)) for i in range(o.first, o.last + 1)]
        if o.first is not None and o.last is not None and o.kind == "range"
        else []
    )
    out = {
        "schema": SCHEMA,
        "run": report.run_id,
        "status": report.status,
        "result": o.kind,
        "reason": o.reason,
        "kpi": report.kpi,
        "direction": report.direction,
        "alpha": report.alpha,
        "margin_pct": report.margin_pct,
        "search": report.search,
        "grade": report.grade,
        "good": _commit(report.good),
        "bad": _commit(report.bad),
        "candidates": report.candidates,
        "culprit": _commit(culprit),
        "parent": _commit(report.commit(o.first - 1)) if culprit and o.first is not None else None,
        "range": in_range,
        "ends": _test(report, o.ends),
        "verification": _test(report, o.verify),
        "steps": [_step(report, s) for s in o.steps],
        "unbuildable": [
            {"commit": report.commits[i].sha, "build": report.builds.get(report.commits[i].sha)}
            for i in o.unbuildable
            if i in report.commits
        ],
        "runs": o.samples,
        "blocks": o.blocks,
        "evidence": None if report.evidence is None else json_format.to_json(report.evidence),
        "cache": report.cache,
        "regressions": list(report.registry),
        "warnings": list(o.warnings),
    }
    cleaned: dict[str, Any] = json_format.clean(out)
    return cleaned


def render(report: BisectReport) -> str:
    return json.dumps(to_json(report), indent=2, allow_nan=False, ensure_ascii=False) + "\n"
