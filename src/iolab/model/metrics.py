"""The one table that gives every metric its unit and its direction.

Metric names carry their unit (`write.iops`, `write.clat_ns.p99`, `jbd2.handles_per_txn`).
A name is matched against the patterns below, first match wins; a name that matches none
is still a valid metric with an unknown unit and a neutral direction, so new evidence
sources never break a comparison.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from enum import StrEnum
from functools import lru_cache


class Direction(StrEnum):
    """Which way is better.  NEUTRAL metrics are evidence: they change, but are not judged."""

    HIGHER = "higher"
    LOWER = "lower"
    NEUTRAL = "neutral"


@dataclass(frozen=True)
class MetricInfo:
    name: str
    unit: str  # "ops/s", "B/s", "B", "ns", "ms", "%", "count", "pages", "" ...
    direction: Direction
    description: str


IO_DIRECTIONS = ("read", "write", "trim", "mixed")
LATENCY_KINDS = ("clat_ns", "lat_ns", "slat_ns")
# fio's default percentile list, plus the extremes people ask for.  Names: p1, p5, p99.9 ...
PERCENTILES = (1, 5, 10, 20, 30, 40, 50, 60, 70, 80, 90, 95, 99, 99.5, 99.9, 99.95, 99.99)
LATENCY_STATS = ("min", "max", "mean", "stddev")
# fio's per-device counters (JSON disk_util keys, terse disk fields in this order)
FIO_DISK_COUNTERS = (
    "read_ios",
    "write_ios",
    "read_merges",
    "write_merges",
    "read_ticks",
    "write_ticks",
    "in_queue",
)


def percentile_name(p: float) -> str:
    """`99.9` → `p99.9`, `50.0` → `p50`: the suffix used in latency metric names."""
    text = f"{p:.6f}".rstrip("0").rstrip(".")
    return f"p{text}"


_DIR = "(?:read|write|trim|mixed)"
_H, _L, _N = Direction.HIGHER, Direction.LOWER, Direction.NEUTRAL

# (pattern, unit, direction, description) — first match wins.
_TABLE: tuple[tuple[str, str, Direction, str], ...] = (
    (rf"{_DIR}\.iops", "ops/s", _H, "I/O operations per second"),
    (rf"{_DIR}\.bw_bytes", "B/s", _H, "bandwidth in bytes per second"),
    (rf"{_DIR}\.io_bytes", "B", _N, "bytes transferred"),
    (rf"{_DIR}\.total_ios", "count", _N, "I/Os completed"),
    (rf"{_DIR}\.short_ios", "count", _N, "short I/Os"),
    (rf"{_DIR}\.runtime_ms", "ms", _L, "run time of the direction"),
    (rf"(?:{_DIR}|sync)\.(?:clat|lat|slat)_ns\.[a-z0-9.]+", "ns", _L, "latency"),
    (r"sync\.total_ios", "count", _N, "fsync/fdatasync calls"),
    (r"cpu\.(?:usr|sys)_pct", "%", _L, "CPU time of the workload, percent of wall time"),
    (r"cpu\.ctx", "count", _N, "context switches"),
    (r"cpu\.(?:majf|minf)", "count", _N, "page faults"),
    (r"disk\.[^.]+\.util_pct", "%", _N, "device utilisation"),
    (r"disk\.[^.]+\.\w+_ticks", "ms", _N, "device busy time"),
    (r"disk\.[^.]+\.\w+", "count", _N, "device counter"),
    (r"elapsed_s", "s", _L, "wall time of the workload"),
    (r"proc\.(?:user|sys)_s", "s", _L, "CPU seconds used by the workload"),
    (r"jbd2\.avg_commit_ms|jbd2\.\w+_ms", "ms", _N, "jbd2 transaction timing"),
    (r"jbd2\.\w+", "count", _N, "jbd2 journal statistics"),
    (r"diskstats\.[^.]+\.\w+_ms", "ms", _N, "block device time"),
    (r"diskstats\.[^.]+\.\w+_kb_per_io", "KiB", _N, "mean request size"),
    (r"diskstats\.[^.]+\.\w+_sectors", "sectors", _N, "512-byte sectors transferred"),
    (r"diskstats\.[^.]+\.util_pct", "%", _N, "device busy time, percent of wall time"),
    (r"diskstats\.[^.]+\.\w+", "count", _N, "block device counter delta"),
    (r"md\.(?:md\d+\.)?stripe_cache_\w+", "stripes", _N, "md RAID4/5/6 stripe cache"),
    (r"md\.(?:md\d+\.)?\w+", "count", _N, "md array state (iolab.lab.evidence)"),
    (r"dm\.\w+|dm\.path\d+\.\w+", "count", _N, "dm-multipath path state at the end"),
    (r"vmstat\.\w+_pages(?:\.end|\.max)?", "pages", _N, "/proc/vmstat pages (delta or gauge)"),
    (r"vmstat\.\w+_kb", "KiB", _N, "/proc/vmstat KiB delta"),
    (r"vmstat\.\w+", "count", _N, "/proc/vmstat delta"),
    (r"cpu_sys\.\w+_s", "s", _N, "system-wide CPU seconds (all CPUs, all processes)"),
    (r"cpu_sys\.\w+_pct", "%", _N, "system-wide CPU share"),
    (r"hist\.\w+_bytes\.mean", "B", _N, "mean of a histogram of bytes"),
    (r"hist\.\w+_pages\.mean", "pages", _N, "mean of a histogram of pages"),
    (r"hist\.[\w.]+", "count", _N, "histogram summary"),
)
_COMPILED = tuple((re.compile(p + r"\Z"), u, d, s) for p, u, d, s in _TABLE)
_GROUP_PREFIX = re.compile(rf"group\d+\.(?={_DIR}\.|sync\.)")


@lru_cache(maxsize=4096)
def metric_info(name: str) -> MetricInfo:
    """Unit and direction of a metric name (job-level names have the same shape).

    `group<N>.` in front (a direction several stonewalled fio groups did, reported per
    group — iolab.ingest.aggregate) names the same kind of metric.
    """
    grouped = _GROUP_PREFIX.match(name)
    base = name[grouped.end() :] if grouped else name
    for pattern, unit, direction, description in _COMPILED:
        if pattern.match(base):
            return MetricInfo(name, unit, direction, description)
    return MetricInfo(name, "", Direction.NEUTRAL, "")


_RATE = re.compile(rf"(?P<prefix>(?:group(?P<group>\d+)\.)?(?P<dir>{_DIR}))\.(?:iops|bw_bytes)\Z")


def direction_prefixes(names: Iterable[str]) -> list[str]:
    """The I/O directions that have a rate among `names`, as metric prefixes: `write`, or
    `group1.write` when stonewalled groups are reported apart; plain first, then by group."""
    found: dict[str, tuple[int, int]] = {}
    for name in names:
        m = _RATE.match(name)
        if m:
            group = -1 if m.group("group") is None else int(m.group("group"))
            found[m.group("prefix")] = (group, IO_DIRECTIONS.index(m.group("dir")))
    return sorted(found, key=lambda prefix: found[prefix])


def known_patterns() -> list[tuple[str, str, str, str]]:
    """The table as rows (pattern, unit, direction, description), for docs and `iolab metrics`."""
    return [(p, u, d.value, s) for p, u, d, s in _TABLE]
