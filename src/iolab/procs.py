"""Processes as /proc shows them, identified by (pid, start time) so that a reused pid is
never taken for the process that wrote a journal, holds a setting or owns a run."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path


def _stat(pid: int) -> list[str] | None:
    """The fields of /proc/PID/stat after the command name (field 3 on), None when gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    # the command name (field 2) may hold spaces and parentheses: split after the last ')'
    return stat[stat.rindex(")") + 2 :].split()


def process_start(pid: int) -> int | None:
    """Start time of a process in clock ticks since boot, None when it does not exist."""
    fields = _stat(pid)
    return None if fields is None else int(fields[19])


def process_alive(pid: int, start: int | None = None) -> bool:
    """True when `pid` runs and, if `start` is given, is the same process (same start time)
    that wrote a journal, holds a setting, owns a run or a guest.  A zombie counts as gone:
    it has exited and will never undo, release or answer anything; only its parent's `wait`
    is missing."""
    fields = _stat(pid)
    if fields is None or fields[0] in ("Z", "X"):
        return False
    return start is None or int(fields[19]) == start


@dataclass(frozen=True)
class ProcessStat:
    """The fields of /proc/PID/stat that process-group cleanup (and its tests) look at."""

    pid: int
    comm: str
    state: str  # "R", "S", "Z" (zombie), ...
    ppid: int
    pgid: int
    start: int  # start time in clock ticks since boot


def process_stats() -> Iterator[ProcessStat]:
    """Every process's stat, skipping ones that vanish while being read."""
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2 :].split()
        yield ProcessStat(
            pid=int(entry.name),
            comm=stat[stat.index("(") + 1 : stat.rindex(")")],
            state=fields[0],
            ppid=int(fields[1]),
            pgid=int(fields[2]),
            start=int(fields[19]),
        )
