"""Kernel plans need a host that can boot kernels between samples: a fleet worker.

A process running `iolab run` cannot reboot its own machine and go on where it was; the
worker can, because it runs as a systemd unit that comes back after each boot and no task of
it spans a reboot (docs/kernels.md).  So a plan whose cases name a kernel or a command line is
refused by a local run before a run exists.
"""

from __future__ import annotations

from iolab.errors import PlanError
from iolab.plan.model import Plan


def refuse_local(plan: Plan) -> None:
    """One line (exit 2) when `plan` names kernels and would run on this machine."""
    if not plan.switches_kernels:
        return
    named = sorted({c.kernel for c in plan.cases if c.kernel is not None})
    what = f"kernel {', '.join(named)}" if named else "a kernel command line"
    raise PlanError(
        f"{plan.path or plan.name}: names {what}; a plan that switches kernels runs on a fleet "
        "(--fleet CLASS) whose hosts run `iolab worker`, not in this process (docs/kernels.md)"
    )
