"""Monitors by name, as plans and the CLI spell them.

`hist` picks its backend itself (bpftrace, else tracefs); `hist@bpftrace` and `hist@tracefs`
force one, for comparisons and for machines where one of them misbehaves.  Every monitor,
whatever its spelling, stores its metrics under its `name` (e.g. `hist.`).
"""

from __future__ import annotations

from collections.abc import Callable

from iolab.errors import PlanError
from iolab.monitors.base import Monitor
from iolab.monitors.cpu_sys import CpuSysMonitor
from iolab.monitors.diskstats import DiskstatsMonitor
from iolab.monitors.hist import HistMonitor
from iolab.monitors.jbd2 import Jbd2Monitor
from iolab.monitors.vmstat import VmstatMonitor

_FACTORIES: dict[str, Callable[[], Monitor]] = {
    "jbd2": Jbd2Monitor,
    "diskstats": DiskstatsMonitor,
    "vmstat": VmstatMonitor,
    "cpu_sys": CpuSysMonitor,
    "hist": HistMonitor,
    "hist@bpftrace": lambda: HistMonitor("bpftrace"),
    "hist@tracefs": lambda: HistMonitor("tracefs"),
}


def available_names() -> list[str]:
    return list(_FACTORIES)


def create(names: list[str]) -> list[Monitor]:
    """Fresh monitor objects (one per sample is fine: they hold only per-sample state)."""
    unknown = [n for n in names if n not in _FACTORIES]
    if unknown:
        raise PlanError(f"unknown monitor {unknown[0]!r}; known: {', '.join(available_names())}")
    seen: set[str] = set()
    out: list[Monitor] = []
    for name in names:
        if name not in seen:
            seen.add(name)
            out.append(_FACTORIES[name]())
    return out
