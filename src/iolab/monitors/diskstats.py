"""Per-device block I/O counters from /proc/diskstats, as deltas over the sample.

Field order (Documentation/admin-guide/iostats.rst): the kernel appends fields over time
(discard in 4.18, flush in 5.5), so a line is read as far as it goes.  `in_flight` is a gauge
and is reported as its value at the end of the sample; all other fields are counters.
Sectors are 512 bytes whatever the device's block size.
"""

from __future__ import annotations

import time
from pathlib import Path

from iolab.errors import LabError
from iolab.monitors.base import MonitorContext, Reading
from iolab.monitors.procfs import read_text

DISKSTATS = Path("/proc/diskstats")
FIELDS = (
    "read_ios",
    "read_merges",
    "read_sectors",
    "read_ms",
    "write_ios",
    "write_merges",
    "write_sectors",
    "write_ms",
    "in_flight",
    "io_ms",
    "weighted_ms",
    "discard_ios",
    "discard_merges",
    "discard_sectors",
    "discard_ms",
    "flush_ios",
    "flush_ms",
)
GAUGES = frozenset({"in_flight"})


def parse_diskstats(text: str) -> dict[str, dict[str, int]]:
    """device name → field → value."""
    out: dict[str, dict[str, int]] = {}
    for line in text.splitlines():
        parts = line.split()
        if len(parts) < 7:
            continue
        try:
            values = [int(v) for v in parts[3:]]
        except ValueError:
            continue
        out[parts[2]] = dict(zip(FIELDS, values, strict=False))
    return out


def derive(
    before: dict[str, dict[str, int]],
    after: dict[str, dict[str, int]],
    devices: list[str],
    wall_s: float,
    labels: dict[str, str] | None = None,
) -> Reading:
    """Deltas of `devices`, each under its label (its kernel name when it has none)."""
    reading = Reading()
    for dev in devices:
        if dev not in before or dev not in after:
            reading.warnings.append(f"{dev} is not in {DISKSTATS}")
            continue
        b, a = before[dev], after[dev]
        prefix = f"diskstats.{(labels or {}).get(dev, dev)}."
        delta: dict[str, int] = {}
        for name, value in a.items():
            if name in GAUGES:
                reading.metrics[prefix + name] = float(value)
            elif name in b:
                delta[name] = value - b[name]
                reading.metrics[prefix + name] = float(delta[name])
        for kind in ("read", "write", "discard"):
            ios = delta.get(f"{kind}_ios", 0)
            if ios > 0 and f"{kind}_sectors" in delta:
                reading.metrics[f"{prefix}{kind}_kb_per_io"] = delta[f"{kind}_sectors"] / 2 / ios
        if wall_s > 0 and "io_ms" in delta:
            reading.metrics[prefix + "util_pct"] = min(100.0, delta["io_ms"] / (wall_s * 10))
    return reading


class DiskstatsMonitor:
    """Counter deltas of the target's block devices, and of a stack's members or paths."""

    name = "diskstats"

    def __init__(self) -> None:
        self._before: dict[str, dict[str, int]] | None = None
        self._t0 = 0.0

    def unavailable(self, ctx: MonitorContext) -> str | None:
        if not ctx.devices:
            return "the target has no block devices"
        if not DISKSTATS.exists():
            return f"{DISKSTATS} does not exist"
        return None

    def start(self, ctx: MonitorContext) -> None:
        self._before = parse_diskstats(read_text(DISKSTATS))
        self._t0 = time.monotonic()

    def stop(self, ctx: MonitorContext) -> Reading:
        if self._before is None:
            raise LabError("stop without start")
        after = parse_diskstats(read_text(DISKSTATS))
        wall = time.monotonic() - self._t0
        before, self._before = self._before, None
        return derive(before, after, [*ctx.devices, *ctx.members], wall, ctx.labels)
