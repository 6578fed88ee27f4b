"""fio's `t/io_uring` peak-IOPS tool, as block-layer people paste it.

Facts from fio's t/io_uring.c: it only reads (pread, O_RDONLY), and prints one line a second,
whose shape changed over the years:

    IOPS=254543, IOS/call=32/31, inflight=128 (128)              early
    IOPS=1520K, BW=742MiB/s, IOS/call=32/31, inflight=(128)      2021
    IOPS=10.04M, BW=4.90GiB/s, IOS/call=32/31                    later

`K` and `M` are powers of 1000.  BW is computed in MiB/s as IOPS / (1 MiB / bs) and, above
2000, printed divided by 1000 with a `GiB/s` unit — so `4.90GiB/s` means 4900 MiB/s, and it is
read as such.  At the end it may print `Maximum IOPS=10.05M` (the best second).

One result per run of consecutive per-second lines (t/io_uring's own preamble and closing
lines may sit between them): `read.iops` and `read.bw_bytes` are the means over the seconds
(the mean of per-second counts is the run's ops / seconds), `read.runtime_ms` the seconds
counted, `read.iops_max` the best second (as printed in `Maximum IOPS`, else the largest line).
"""

from __future__ import annotations

import re

from iolab.errors import IngestError
from iolab.ingest import numbers
from iolab.model.result import Job, Result

TOOL = "t/io_uring"
FORMAT = "t/io_uring"
_NUM = r"\d+(?:\.\d+)?"
_LINE = re.compile(
    rf"^IOPS=(?P<iops>{_NUM})(?P<suf>[KM]?),\s*(?:BW=(?P<bw>{_NUM})(?P<bwunit>MiB|GiB)/s,\s*)?"
    r"IOS/call=-?\d+/-?\d+(?:,.*)?$"
)
_MAX = re.compile(rf"^Maximum IOPS=(?P<iops>{_NUM})(?P<suf>[KM]?)\s*$")
# Lines t/io_uring prints around its per-second lines (they do not end a run).
_OWN = re.compile(
    r"^(?:Added file .*|polled=.*|Engine=.*|submitter=.*|Exiting on \w+.*|set nr_\w+=.*|"
    r"\d+: Latency percentiles:|.*IO errors)$"
)
_SUFFIX = {"": 1.0, "K": 1e3, "M": 1e6}
_MIB = 1 << 20


def _iops(match: re.Match[str]) -> float:
    return numbers.parse_float(match.group("iops")) * _SUFFIX[match.group("suf")]


def find(lines: list[str], source: str) -> list[tuple[int, Result]]:
    """Every t/io_uring run in `lines` (un-quoted), with the line it starts at."""
    found: list[tuple[int, Result]] = []
    start: int | None = None
    iops: list[float] = []
    bws: list[float] = []
    best: float | None = None

    def close() -> None:
        nonlocal start, iops, bws, best
        if start is not None and iops:
            found.append((start, _result(source, iops, bws, best)))
        start, iops, bws, best = None, [], [], None

    for index, raw in enumerate(lines):
        text = raw.strip()
        line = _LINE.match(text)
        if line is not None:
            if start is None:
                start = index
            try:
                iops.append(_iops(line))
                if line.group("bw") is not None:
                    bw = numbers.parse_float(line.group("bw"))
                    bws.append(bw * (1000 if line.group("bwunit") == "GiB" else 1) * _MIB)
            except ValueError as exc:
                raise IngestError(
                    source, f"line {index + 1}: unreadable t/io_uring line ({exc})"
                ) from None
            continue
        peak = _MAX.match(text)
        if peak is not None and start is not None:
            best = _iops(peak)
            close()  # t/io_uring's last line
            continue
        if not text or _OWN.match(text) or start is None:
            continue
        close()
    close()
    return found


def _result(source: str, iops: list[float], bws: list[float], best: float | None) -> Result:
    metrics = {
        "read.iops": sum(iops) / len(iops),
        "read.runtime_ms": 1000.0 * len(iops),
        "read.iops_max": best if best is not None else max(iops),
    }
    if len(bws) == len(iops):
        metrics["read.bw_bytes"] = sum(bws) / len(bws)
    job = Job(name="t/io_uring", metrics=dict(metrics))
    return Result(tool=TOOL, format=FORMAT, source=source, metrics=metrics, jobs=[job])
