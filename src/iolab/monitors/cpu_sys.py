"""System-wide CPU time over the sample from the `cpu` line of /proc/stat.

This is *all* CPUs and all processes, not the workload's own CPU time (the lab measures that
from the workload's rusage as `proc.user_s` / `proc.sys_s`): it shows what else the machine did
(kernel threads doing writeback and journal commits, interrupts, iowait).  The values are
seconds summed over CPUs; /proc/stat counts in USER_HZ ticks.
"""

from __future__ import annotations

import os
from pathlib import Path

from iolab.errors import LabError
from iolab.monitors.base import MonitorContext, Reading
from iolab.monitors.procfs import read_text

STAT = Path("/proc/stat")
# guest time is already included in user / nice, so it is left out of the total
FIELDS = ("user", "nice", "system", "idle", "iowait", "irq", "softirq", "steal")


def parse_stat(text: str) -> dict[str, int]:
    for line in text.splitlines():
        parts = line.split()
        if parts and parts[0] == "cpu":
            return {name: int(v) for name, v in zip(FIELDS, parts[1:], strict=False)}
    raise LabError(f"{STAT}: no aggregate cpu line")


def derive(before: dict[str, int], after: dict[str, int], ticks_per_s: float) -> Reading:
    reading = Reading()
    delta = {k: after[k] - before[k] for k in after if k in before}
    for name, ticks in delta.items():
        reading.metrics[f"cpu_sys.{name}_s"] = ticks / ticks_per_s
    total = sum(delta.values())
    if total > 0:
        idle = delta.get("idle", 0) + delta.get("iowait", 0)
        reading.metrics["cpu_sys.busy_pct"] = 100.0 * (total - idle) / total
        reading.metrics["cpu_sys.iowait_pct"] = 100.0 * delta.get("iowait", 0) / total
    return reading


class CpuSysMonitor:
    """System-wide user/system/iowait/idle seconds during the sample."""

    name = "cpu_sys"

    def __init__(self) -> None:
        self._before: dict[str, int] | None = None
        self._hz = float(os.sysconf("SC_CLK_TCK"))

    def unavailable(self, ctx: MonitorContext) -> str | None:
        return None if STAT.exists() else f"{STAT} does not exist"

    def start(self, ctx: MonitorContext) -> None:
        self._before = parse_stat(read_text(STAT))

    def stop(self, ctx: MonitorContext) -> Reading:
        if self._before is None:
            raise LabError("stop without start")
        before, self._before = self._before, None
        return derive(before, parse_stat(read_text(STAT)), self._hz)
