"""The contract between the lab runner and the monitors.

The runner builds a MonitorContext for each sample, calls `start` on every enabled monitor
just before the workload, `stop` just after it, and stores the returned Reading as metrics
(`<monitor>.<name>`) and histograms of that sample.  A monitor that changes the machine
(enables a tracepoint, creates a trace instance) records the change in the journal *before*
making it, so that `iolab cleanup` can undo it after a kill -9.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from iolab.model.result import Histogram


class ChangeJournal(Protocol):
    """What a monitor needs of the lab's journal (iolab.lab.journal implements it)."""

    def record(self, kind: str, **undo: str) -> int:
        """Write down a change about to be made and how to undo it; returns its id."""
        ...

    def undone(self, entry_id: int) -> None:
        """Mark a change as undone (the monitor reverted it itself)."""
        ...


@dataclass
class MonitorContext:
    """What one sample's monitors may look at."""

    devices: list[str]  # kernel block device names of the target, e.g. ["loop3"]
    mountpoint: Path | None  # None for raw-device workloads
    fstype: str | None  # "ext4", "xfs", "btrfs" or None
    journal: ChangeJournal
    workdir: Path  # a private scratch directory for this sample
    # a stack's members / paths (md, multipath), and the names metrics give devices
    # (kernel name -> "top", "member3", "path1"; a device not in it keeps its kernel name)
    members: list[str] = field(default_factory=list)
    labels: dict[str, str] = field(default_factory=dict)


@dataclass
class Reading:
    metrics: dict[str, float] = field(default_factory=dict)
    histograms: dict[str, Histogram] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)


class Monitor(Protocol):
    name: str

    def unavailable(self, ctx: MonitorContext) -> str | None:
        """Why this monitor cannot run here (None when it can)."""
        ...

    def start(self, ctx: MonitorContext) -> None: ...

    def stop(self, ctx: MonitorContext) -> Reading:
        """Read the evidence; must also release whatever start set up, even after errors."""
        ...
