"""Which tracepoints feed which histogram, and how a histogram is summarised.

Each probe counts one field of one tracepoint into exact bins (value → count), limited to the
target's devices by the dev_t in the record.  The two backends (bpftrace, tracefs) read the
same table, so their results are the same histograms under the same names.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from iolab.model.result import Histogram
from iolab.monitors.base import MonitorContext


@dataclass(frozen=True)
class Probe:
    hist: str  # histogram name without the "hist." prefix
    system: str
    event: str
    field: str
    fstype: str | None  # only when the target has this filesystem
    text: re.Pattern[str]  # a tracefs text line → (major, minor, value)

    @property
    def histogram(self) -> str:
        return f"hist.{self.hist}"


PROBES = (
    Probe(
        "ext4_writepages_pages",
        "ext4",
        "ext4_writepages_result",
        "pages_written",
        "ext4",
        re.compile(r" ext4_writepages_result: dev (\d+),(\d+) .*?\bpages_written (-?\d+)"),
    ),
    Probe(
        "jbd2_handles_per_txn",
        "jbd2",
        "jbd2_run_stats",
        "handle_count",
        "ext4",
        re.compile(r" jbd2_run_stats: dev (\d+),(\d+) .*?\bhandle_count (\d+)"),
    ),
    Probe(
        "rq_issue_bytes",
        "block",
        "block_rq_issue",
        "bytes",
        None,
        re.compile(r" block_rq_issue: (\d+),(\d+) \S+ (\d+) "),
    ),
)


def probes_for(ctx: MonitorContext) -> list[Probe]:
    return [p for p in PROBES if p.fstype is None or p.fstype == ctx.fstype]


def summarize(name: str, bins: Histogram) -> dict[str, float]:
    """`<name>.count` always, `<name>.mean` when there was at least one event."""
    count = sum(bins.values())
    out = {f"{name}.count": float(count)}
    if count:
        out[f"{name}.mean"] = sum(v * c for v, c in bins.items()) / count
    return out
