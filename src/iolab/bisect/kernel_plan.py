"""The plan a kernel bisect measures: the user's plan with one variant per kernel arm.

Both kernel arm sources use it — releases (`"6.1.0-47-cloud-amd64": {kernel: 6.1.0-47-…}`)
and built kernel commits (`"<sha>": {kernel: <release it built>}`) — so the run's samples
carry the arm as their variant and the fleet's workers load it as any kernel plan.
"""

from __future__ import annotations

from collections.abc import Mapping

from iolab.bisect.settings import single_case
from iolab.errors import PlanError
from iolab.plan.expand import plan_from_text
from iolab.plan.model import Plan


def kernel_plan(plan: Plan, kernels: Mapping[str, str]) -> Plan:
    """`plan` with a variant per arm (variant name -> kernel release), quoted: a sha of
    digits and one `e` would be a number to YAML."""
    if plan.variants or plan.switches_kernels:
        raise PlanError(
            f"{plan.path}: a kernel bisect sets each case's kernel; the plan must name "
            "neither variants nor a kernel"
        )
    single_case(plan)
    lines = [plan.text.rstrip("\n"), "variants:"]
    lines += [f'  "{name}": {{kernel: {release}}}' for name, release in kernels.items()]
    return plan_from_text("\n".join(lines) + "\n", plan.path, plan.profile)
