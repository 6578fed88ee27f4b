"""`iolab plan check` as text for the terminal or JSON for scripts (formats only)."""

from __future__ import annotations

import json
from typing import Any

from iolab.model.plan_check import PlanCheck, WallTime
from iolab.textsafe import shown


def duration_text(seconds: float) -> str:
    """90 → `1m30s`, 7260 → `2h01m`, 0.5 → `0.5s`: the units the command line reads back."""
    if seconds < 60:
        return f"{seconds:g}s"
    whole = round(seconds)
    hours, rest = divmod(whole, 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return f"{hours}h{minutes:02d}m"
    return f"{minutes}m{secs:02d}s" if secs else f"{minutes}m"


def _time_line(t: WallTime) -> str:
    if t.seconds is None:
        return f"  {t.how:<12} -  ({t.why})"
    bound = "at most " if t.at_most else ""
    text = f"  {t.how:<12} {bound}{duration_text(t.seconds)}  ({t.blocks} blocks, "
    text += f"{t.samples} samples"
    if t.boots:
        text += f", {t.boots} boots"
    return text + ")"


def render_text(check: PlanCheck) -> str:
    plan = check
    lines = [f"{shown(plan.path)}: a valid plan, {shown(plan.name)}"]
    kpis = ", ".join(f"{metric} ({direction})" for metric, direction in plan.kpis)
    dims = " × ".join(f"{len(v)} {shown(k)}" for k, v in plan.matrix.items())
    shape = f"{len(plan.variants)} variants" if plan.variants else "no variants"
    lines.append(
        f"{len(check.cases)} case(s): {shape}{f' × {dims}' if dims else ''}; "
        f"{plan.repeat} blocks; KPIs: {kpis or '-'}"
    )
    if plan.variants:
        lines.append(f"variants: {', '.join(map(shown, plan.variants))} (baseline {plan.baseline})")
    lines.append("cases:")
    width = max(len(c.key) for c in check.cases)
    for c in check.cases:
        kernel = f"  kernel {shown(c.kernel)}" if c.kernel else ""
        timed = f"{'≤' if c.bounded else ''}{duration_text(c.seconds)}"
        lines.append(f"  {shown(c.key):<{width}}  {c.target}  {c.workload} {timed}/sample{kernel}")
    lines.append("where it can run:")
    for place in check.places:
        lines.append(f"  {place.where + ':':<9} {'yes' if place.ok else 'no '}  {shown(place.how)}")
    lines.append("wall time (the plan's timed parts; mkfs, cache drops and boots on top):")
    lines += [_time_line(t) for t in check.times]
    lines += [f"note: {shown(n)}" for n in check.notes]
    return "\n".join(lines) + "\n"


def to_json(check: PlanCheck) -> dict[str, Any]:
    plan = check
    return {
        "plan": plan.path,
        "name": plan.name,
        "valid": True,
        "variants": list(plan.variants),
        "baseline": plan.baseline,
        "matrix": {k: list(v) for k, v in plan.matrix.items()},
        "repeat": plan.repeat,
        "kpis": [{"metric": metric, "direction": d} for metric, d in plan.kpis],
        "requires": list(plan.requires),
        "cases": [
            {
                "key": c.key,
                "variant": c.variant,
                "cell": c.cell,
                "target": c.target,
                "workload": c.workload,
                "kernel": c.kernel,
                "seconds_per_sample": c.seconds,
                "at_most": c.bounded,
            }
            for c in check.cases
        ],
        "places": [{"where": p.where, "ok": p.ok, "how": p.how} for p in check.places],
        "wall_time": [
            {
                "how": t.how,
                "blocks": t.blocks,
                "samples": t.samples,
                "seconds": t.seconds,
                "at_most": t.at_most,
                "boots": t.boots,
                "why": t.why or None,
            }
            for t in check.times
        ],
        "notes": list(check.notes),
    }


def render_json(check: PlanCheck) -> str:
    return json.dumps(to_json(check), indent=2) + "\n"
