"""Page cache and writeback counters from /proc/vmstat over the sample.

/proc/vmstat mixes two kinds of numbers.  Counters only grow (nr_dirtied, pgpgout ...) and are
reported as deltas.  Gauges go up and down (nr_dirty, nr_writeback, the dirty thresholds) and a
delta of them means nothing: they are reported as their value at the end of the sample
(`.end`) and, for the dirty and writeback page counts, as the largest value seen by a sampler
thread that reads the file every `interval_s` (`.max`) — the peak of dirty memory is what
decides whether writers were throttled.

The kernel has no counter of balance_dirty_pages() pauses; dirty throttling shows as
nr_dirty_pages.max close to nr_dirty_threshold_pages.end.  Names carry the unit: pages, or KiB
for pgpgin/pgpgout (which the kernel counts in KiB).  Counters missing on a kernel are skipped.
"""

from __future__ import annotations

import threading
from pathlib import Path

from iolab.errors import LabError
from iolab.monitors.base import MonitorContext, Reading
from iolab.monitors.procfs import parse_counters, read_text

VMSTAT = Path("/proc/vmstat")

COUNTERS = {
    "nr_dirtied": "nr_dirtied_pages",
    "nr_written": "nr_written_pages",
    "nr_throttled_written": "nr_throttled_written_pages",
    "pgpgin": "pgpgin_kb",
    "pgpgout": "pgpgout_kb",
    "pswpin": "pswpin_pages",
    "pswpout": "pswpout_pages",
    "pgsteal_kswapd": "pgsteal_kswapd_pages",
    "pgsteal_direct": "pgsteal_direct_pages",
    "pgscan_direct_throttle": "pgscan_direct_throttle",
}
SAMPLED_GAUGES = {"nr_dirty": "nr_dirty_pages", "nr_writeback": "nr_writeback_pages"}
END_GAUGES = {
    **SAMPLED_GAUGES,
    "nr_dirty_threshold": "nr_dirty_threshold_pages",
    "nr_dirty_background_threshold": "nr_dirty_background_threshold_pages",
}


def derive(before: dict[str, int], after: dict[str, int], maxima: dict[str, int]) -> Reading:
    reading = Reading()
    for raw, name in COUNTERS.items():
        if raw in before and raw in after:
            reading.metrics[f"vmstat.{name}"] = float(after[raw] - before[raw])
    for raw, name in END_GAUGES.items():
        if raw in after:
            reading.metrics[f"vmstat.{name}.end"] = float(after[raw])
    for raw, name in SAMPLED_GAUGES.items():
        if raw in maxima:
            reading.metrics[f"vmstat.{name}.max"] = float(maxima[raw])
    return reading


class VmstatMonitor:
    """Counter deltas and sampled gauge maxima of /proc/vmstat."""

    name = "vmstat"

    def __init__(self, interval_s: float = 0.1) -> None:
        self.interval_s = interval_s
        self._before: dict[str, int] | None = None
        self._maxima: dict[str, int] = {}
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def unavailable(self, ctx: MonitorContext) -> str | None:
        return None if VMSTAT.exists() else f"{VMSTAT} does not exist"

    def _observe(self, values: dict[str, int]) -> None:
        for raw in SAMPLED_GAUGES:
            if raw in values:
                self._maxima[raw] = max(self._maxima.get(raw, values[raw]), values[raw])

    def _sample(self) -> None:
        while not self._stop.wait(self.interval_s):
            try:
                self._observe(parse_counters(VMSTAT.read_text()))
            except OSError:
                return

    def start(self, ctx: MonitorContext) -> None:
        self._before = parse_counters(read_text(VMSTAT))
        self._maxima = {}
        self._observe(self._before)
        self._stop.clear()
        self._thread = threading.Thread(target=self._sample, name="iolab-vmstat", daemon=True)
        self._thread.start()

    def stop(self, ctx: MonitorContext) -> Reading:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
            self._thread = None
        if self._before is None:
            raise LabError("stop without start")
        after = parse_counters(read_text(VMSTAT))
        self._observe(after)
        before, self._before = self._before, None
        return derive(before, after, self._maxima)
