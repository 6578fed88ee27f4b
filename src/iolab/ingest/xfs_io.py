"""Reader for xfs_io pwrite/pread summaries, in the normal two-line form and the `-C` CSV form.

Normal form (xfsprogs libxcmd report_io_times; qemu-io prints the same shape):

    wrote 16777216/16777216 bytes at offset 0
    16 MiB, 4096 ops; 0.0333 sec (479.933 MiB/sec and 122862.7992 ops/sec)

The time is printed as `0.NNNN sec` below a second and `h:mm:ss.hh` above; some xfsprogs
releases print the fraction as 0 whatever it is, and the size and rate are rounded to 4
digits.  The ops/sec figure is printed with 4 decimals from the unrounded time, so the true
duration is ops / (ops/sec); bandwidth is then bytes / duration.

CSV form (`pwrite -C`): `bytes,ops,h:mm:ss.hh,bytes/sec,ops/sec` — it names no direction, so
the direction comes from a `pwrite`/`pread` command visible on the lines just before it, and
is "write" when none is.
"""

from __future__ import annotations

import math
import re

from iolab.errors import IngestError
from iolab.model.result import Job, Result

_HEAD_RE = re.compile(r"(wrote|read) (\d{1,20})/(\d{1,20}) bytes at offset (-?\d{1,20})\Z")
_RATE = r"(?:[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?|-?inf|-?nan)"
_TIME = r"(?:\d+:\d\d:\d\d(?:\.\d+)?|\d+:\d\d(?:\.\d+)?|\d*\.?\d+ sec)"
_STATS_RE = re.compile(
    rf"(?P<size>\d+(?:\.\d+)? (?:bytes|[KMGTPE]iB)), (?P<ops>\d{{1,20}}) ops; (?P<time>{_TIME}) "
    rf"\((?P<rate>{_RATE}) (?:bytes|[KMGTPE]iB)/sec and (?P<ops_s>{_RATE}) ops/sec\)\Z"
)
_CSV_RE = re.compile(
    rf"(?P<bytes>\d{{1,20}}),(?P<ops>\d{{1,20}}),(?P<time>\d+:\d\d(?::\d\d)?\.\d+),"
    rf"(?P<rate>{_RATE}),(?P<ops_s>{_RATE})\Z"
)
# a pwrite/pread command and its arguments up to the end of its -c "..." quoting
_COMMAND_RE = re.compile(r"\b(pwrite|pread)\b([^\"';|]*)")
_CSV_FLAG_RE = re.compile(r"(?:^|\s)-[A-Za-z]*C")
_LOOKBACK = 3  # lines searched above a CSV block for the command that printed it
_DIRECTION = {"wrote": "write", "read": "read", "pwrite": "write", "pread": "read"}


def find(lines: list[str], source: str) -> list[tuple[int, Result]]:
    """Every xfs_io summary in `lines`, with the index of the line it starts at."""
    found: list[tuple[int, Result]] = []
    csv_directions: list[str] = []
    csv_index = 0
    index = 0
    while index < len(lines):
        text = lines[index].strip()
        head = _HEAD_RE.match(text)
        if head:
            result, used = _normal(lines, index, head, source)
            found.append((index, result))
            index += used
            continue
        csv = _CSV_RE.match(text)
        if csv:
            if index == 0 or not _CSV_RE.match(lines[index - 1].strip()):
                csv_directions = _csv_context(lines, index)
                csv_index = 0
            direction = csv_directions[csv_index] if csv_index < len(csv_directions) else "write"
            csv_index += 1
            found.append((index, _csv(csv, direction, source, index)))
        index += 1
    return found


def _normal(lines: list[str], index: int, head: re.Match[str], source: str) -> tuple[Result, int]:
    """The result of a `wrote`/`read` line and the statistics line after it; lines used."""
    used = 2
    stats_text = lines[index + 1].strip() if index + 1 < len(lines) else ""
    stats = _STATS_RE.match(stats_text)
    if stats is None and index + 2 < len(lines):
        # a mail client may have wrapped the long statistics line in two
        stats = _STATS_RE.match(f"{stats_text} {lines[index + 2].strip()}")
        used = 3
    if stats is None:
        raise IngestError(
            source, f"line {index + 1}: xfs_io '{head.group(1)}' line without its statistics line"
        )
    verb, total, count, offset = head.group(1), int(head.group(2)), head.group(3), head.group(4)
    ops = int(stats.group("ops"))
    seconds = _duration(
        ops,
        _rate(stats.group("ops_s")),
        _printed_seconds(stats.group("time")),
    )
    direction = _DIRECTION[verb]
    metrics = _metrics(direction, total, ops, seconds)
    options = {"offset": offset, "requested_bytes": count}
    job = Job(
        name="pwrite" if direction == "write" else "pread", metrics=dict(metrics), options=options
    )
    return Result(tool="xfs_io", format="xfs_io", source=source, metrics=metrics, jobs=[job]), used


def _csv(match: re.Match[str], direction: str, source: str, index: int) -> Result:
    total, ops = int(match.group("bytes")), int(match.group("ops"))
    ops_s, rate = _rate(match.group("ops_s")), _rate(match.group("rate"))
    seconds = _duration(ops, ops_s, _printed_seconds(match.group("time")))
    if ops == 0 and rate and total:
        seconds = total / rate
    metrics = _metrics(direction, total, ops, seconds)
    job = Job(name="pwrite" if direction == "write" else "pread", metrics=dict(metrics))
    return Result(tool="xfs_io", format="xfs_io-csv", source=source, metrics=metrics, jobs=[job])


def _metrics(direction: str, total: int, ops: int, seconds: float | None) -> dict[str, float]:
    metrics = {f"{direction}.io_bytes": float(total), f"{direction}.total_ios": float(ops)}
    if seconds is not None and seconds > 0 and math.isfinite(seconds * 1000.0):
        metrics[f"{direction}.runtime_ms"] = seconds * 1000.0
        metrics[f"{direction}.iops"] = ops / seconds
        metrics[f"{direction}.bw_bytes"] = total / seconds
    return metrics


def _duration(ops: int, ops_per_s: float | None, printed: float | None) -> float | None:
    """Seconds: from ops / (ops/sec) when that is finite, else the printed (rounded) time."""
    if ops > 0 and ops_per_s:
        return ops / ops_per_s
    return printed if printed else None


def _rate(text: str) -> float | None:
    """A printed rate; None for inf/nan (a zero duration) or zero."""
    value = float(text)
    return value if math.isfinite(value) and value > 0 else None


def _printed_seconds(text: str) -> float | None:
    text = text.removesuffix(" sec")
    seconds = 0.0
    for part in text.split(":"):
        seconds = seconds * 60 + float(part)
    return seconds


def _csv_context(lines: list[str], index: int) -> list[str]:
    """Directions of the `-C` commands on the nearest line above a CSV block, in order."""
    for back in range(index - 1, max(index - 1 - _LOOKBACK, -1), -1):
        commands = _COMMAND_RE.findall(lines[back])
        if commands:
            with_csv = [_DIRECTION[name] for name, args in commands if _CSV_FLAG_RE.search(args)]
            return with_csv or [_DIRECTION[name] for name, _ in commands]
    return []
