"""jbd2 journal statistics from /proc/fs/jbd2/<dev>-<journal inode>/info, per sample.

The kernel (fs/jbd2/journal.c, jbd2_seq_info_show) prints counts since mount and, for the
timing and size lines, *cumulative* integer means: total / transactions, truncated (the
times are truncated in jiffies, then shown in ms).  A sample's own mean is recovered from
the file read before and after the workload:

    mean = (mean_after * n_after - mean_before * n_before) / (n_after - n_before)

It equals the file's figure on a fresh mount (n_before = 0); otherwise the truncation of both
means gives it a resolution of (n_after + n_before) / (n_after - n_before) of one step, which
is reported as a warning when it exceeds one step.  "request delay" is a mean over
*requested* transactions and is weighted with that count.

"average transaction commit time" is no mean at all: the kernel keeps a running average in
which each commit weighs 1/4 (fs/jbd2/commit.c).  It is reported as the value at the end of
the sample, `jbd2.avg_commit_ms`, and documented as such.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from iolab.errors import LabError
from iolab.monitors.base import MonitorContext, Reading
from iolab.monitors.procfs import read_text

JBD2_DIR = Path("/proc/fs/jbd2")

_HEADER = re.compile(r"^(\d+) transactions \((\d+) requested\), each up to (\d+) blocks")
# line text → (key, weighted by "requested" instead of "transactions")
_MEANS: tuple[tuple[re.Pattern[str], str, bool], ...] = (
    (re.compile(r"^\s*(\d+)ms waiting for transaction"), "wait_ms", False),
    (re.compile(r"^\s*(\d+)ms request delay"), "request_delay_ms", True),
    (re.compile(r"^\s*(\d+)ms running transaction"), "running_ms", False),
    (re.compile(r"^\s*(\d+)ms transaction was being locked"), "locked_ms", False),
    (re.compile(r"^\s*(\d+)ms flushing data"), "flushing_ms", False),
    (re.compile(r"^\s*(\d+)ms logging transaction"), "logging_ms", False),
    (re.compile(r"^\s*(\d+) handles per transaction"), "handles_per_txn", False),
    (re.compile(r"^\s*(\d+) blocks per transaction"), "blocks_per_txn", False),
    (re.compile(r"^\s*(\d+) logged blocks per transaction"), "logged_blocks_per_txn", False),
)
_COMMIT = re.compile(r"^\s*(\d+)us average transaction commit time")
_FAST = re.compile(r"^(\d+) fast commits performed")


@dataclass
class Jbd2Info:
    """One reading of an info file."""

    transactions: int
    requested: int
    max_blocks: int
    means: dict[str, int] = field(default_factory=dict)
    commit_us: int | None = None
    fast_commits: int | None = None


def parse_info(text: str, source: str = "jbd2 info") -> Jbd2Info:
    """Parse the info file; a file without the header line is not a jbd2 info file."""
    lines = text.splitlines()
    head = _HEADER.match(lines[0]) if lines else None
    if head is None:
        raise ValueError(f"{source}: not a jbd2 info file (first line {lines[:1]!r})")
    info = Jbd2Info(int(head[1]), int(head[2]), int(head[3]))
    for line in lines[1:]:
        if m := _COMMIT.match(line):
            info.commit_us = int(m[1])
            continue
        if m := _FAST.match(line):
            info.fast_commits = int(m[1])
            continue
        for pattern, key, _ in _MEANS:
            if m := pattern.match(line):
                info.means[key] = int(m[1])
                break
    return info


def derive(before: Jbd2Info, after: Jbd2Info) -> Reading:
    """The sample's own figures from two readings of the same journal."""
    reading = Reading()
    m = reading.metrics
    d_txn = after.transactions - before.transactions
    d_req = after.requested - before.requested
    if d_txn < 0 or d_req < 0:
        reading.warnings.append("counters went backwards (journal remounted?); no figures")
        return reading
    m["jbd2.transactions"] = float(d_txn)
    m["jbd2.transactions_requested"] = float(d_req)
    if after.fast_commits is not None and before.fast_commits is not None:
        m["jbd2.fast_commits"] = float(after.fast_commits - before.fast_commits)
    if after.commit_us is not None and d_txn > 0:
        m["jbd2.avg_commit_ms"] = after.commit_us / 1000.0
    worst = 0.0
    for _, key, by_requested in _MEANS:
        n_b, n_a = (
            (before.requested, after.requested)
            if by_requested
            else (before.transactions, after.transactions)
        )
        if n_a - n_b <= 0 or key not in after.means:
            continue
        mean_b = before.means.get(key, 0) if n_b else 0
        m[f"jbd2.{key}"] = (after.means[key] * n_a - mean_b * n_b) / (n_a - n_b)
        worst = max(worst, (n_a + n_b) / (n_a - n_b) if n_b else 0.0)
    if worst > 1.0:
        reading.warnings.append(
            f"per-transaction means derived from cumulative integer means are good to "
            f"±{worst:.3g} steps ({before.transactions} transactions before the sample)"
        )
    return reading


def info_path(device: str) -> Path | None:
    """The info file of the journal living on `device` ("<dev>-<journal inode>", usually -8)."""
    found = sorted(JBD2_DIR.glob(f"{device}-*/info"))
    return found[0] if found else None


class Jbd2Monitor:
    """Reads the journal statistics of the target's ext4 before and after the workload."""

    name = "jbd2"

    def __init__(self) -> None:
        self._path: Path | None = None
        self._before: Jbd2Info | None = None

    def _find(self, ctx: MonitorContext) -> Path | None:
        for device in ctx.devices:
            path = info_path(device)
            if path is not None:
                return path
        return None

    def unavailable(self, ctx: MonitorContext) -> str | None:
        if ctx.fstype != "ext4":
            return f"needs ext4 (the target has {ctx.fstype or 'no filesystem'})"
        if self._find(ctx) is None:
            return f"no journal statistics under {JBD2_DIR} for {', '.join(ctx.devices)}"
        return None

    def _read(self) -> Jbd2Info:
        assert self._path is not None
        try:
            return parse_info(read_text(self._path), str(self._path))
        except ValueError as exc:
            raise LabError(str(exc)) from None

    def start(self, ctx: MonitorContext) -> None:
        self._path = self._find(ctx)
        self._before = None
        if self._path is not None:
            self._before = self._read()

    def stop(self, ctx: MonitorContext) -> Reading:
        if self._path is None or self._before is None:
            return Reading(warnings=["no journal statistics were found at start"])
        before, self._before = self._before, None
        return derive(before, self._read())
