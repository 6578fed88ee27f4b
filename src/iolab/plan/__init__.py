"""Plan files: YAML schema, validation with line numbers, expansion into cases.

`load_plan(path, profile)` is the entry point; the data it returns is described in
`iolab.plan.model`.  Nothing here changes the machine.
"""

from __future__ import annotations

from iolab.plan.model import (
    Case,
    FilesystemSpec,
    Kpi,
    MetricRule,
    Plan,
    PrepareSpec,
    TargetSpec,
    WorkloadSpec,
)

__all__ = [
    "Case",
    "FilesystemSpec",
    "Kpi",
    "MetricRule",
    "Plan",
    "PrepareSpec",
    "TargetSpec",
    "WorkloadSpec",
    "load_plan",
]


def load_plan(path: str, profile: str | None = None) -> Plan:
    """Read, validate and expand a plan file; raises PlanError with `FILE:LINE: ...`."""
    from iolab.plan.expand import build_plan

    return build_plan(path, profile)
