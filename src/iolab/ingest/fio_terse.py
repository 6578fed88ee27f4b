"""fio terse / `--minimal` output, terse versions 2, 3, 4 and 5: one `;`-separated line per job
(or per group with group_reporting).

The layout is not self-describing, so a line is read by its shape: a header (`V;fio-x.y;name;
group;error`, version 2 without the fio version), then one fixed-width block per direction —
each recognisable by its 20 `P%=value` percentile fields — then CPU, I/O depth and latency
bucket fields, then optional disk utilisation.  The number of direction blocks tells plain
read/write(/trim) from unified_rw_reporting (`mixed`).  Terse latencies are µs (integers for
min/max/percentiles, 6 decimals for mean/stddev), bandwidth KiB/s and I/O KiB, all truncated.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from iolab.errors import IngestError, NoIOError
from iolab.ingest.aggregate import aggregate_jobs
from iolab.ingest.fio_json import has_io, job_error
from iolab.ingest.numbers import parse_float, parse_percent, tool_version
from iolab.model.metrics import FIO_DISK_COUNTERS, percentile_name
from iolab.model.result import Job, Result

_START = re.compile(r"\s*([2-5]);")
_V2_TRAILER = re.compile(r"\s*(?:;.*)?\Z")
_PERCENTILES = 20  # FIO_IO_U_LIST_MAX_LEN
_BLOCK = {2: 41, 3: 41, 4: 41, 5: 47}  # fields per direction
_HEADER = {2: 4, 3: 5, 4: 5, 5: 5}
_PLAIN_DIRS = {2: ("read", "write", "trim"), 3: ("read", "write"), 4: ("read", "write", "trim")}
_TAIL = 34  # cpu 5, I/O depths 7, µs buckets 10, ms buckets 12
_PCT_TAIL = (0, 1, *range(5, _TAIL))  # tail fields that carry a `%`
_DISK = 9  # name;read_ios;write_ios;read_merges;write_merges;read_ticks;write_ticks;in_queue;util%
_MAX_JOINED = 40  # lines a mail client may have hard-wrapped one terse line into


@dataclass
class _Line:
    """One terse line, split and checked for shape."""

    version: int
    fio_version: str | None
    name: str
    group: int
    error: int
    directions: list[tuple[str, list[str]]]
    tail: list[str]
    disks: dict[str, list[str]] = field(default_factory=dict)


def find(lines: list[str], source: str) -> list[tuple[int, Result]]:
    """Every terse result in `lines`, with the index of the line it starts on.

    Consecutive terse lines of one run (same terse and fio version, group ids not going
    back) are one Result with one Job per line.
    """
    found: list[tuple[int, Result]] = []
    run: list[_Line] = []
    run_start = 0
    previous_end = -1
    i = 0
    while i < len(lines):
        if not _START.match(lines[i]):
            i += 1
            continue
        parsed, end = _read_line(lines, i, source)
        if parsed is None:
            i += 1
            continue
        if run and (previous_end != i or not _same_run(run[-1], parsed)):
            found.append((run_start, _result(run, source)))
            run = []
        if not run:
            run_start = i
        run.append(parsed)
        i = end
        if parsed.version == 2 and i < len(lines) and _V2_TRAILER.match(lines[i]):
            i += 1  # terse v2 ends with a line of its own: the description, or empty in fio 2.x
        previous_end = i
    if run:
        found.append((run_start, _result(run, source)))
    return found


def _same_run(before: _Line, after: _Line) -> bool:
    return (
        before.version == after.version
        and before.fio_version == after.fio_version
        and after.group >= before.group
    )


def _read_line(lines: list[str], index: int, source: str) -> tuple[_Line | None, int]:
    """The terse record starting at `lines[index]` and the index after it; (None, index) when
    the line is not a terse record.

    A mail client may hard-wrap the long line at a fixed width: pieces are joined until the
    record has its full shape, and then for as long as the last piece filled the whole width
    (the disk fields may still follow).
    """
    width = len(lines[index])
    text = lines[index].strip()
    end = index + 1
    complete = text if _shape(text.split(";")) else None
    complete_end = end
    while end < len(lines) and end - index < _MAX_JOINED:
        if complete is not None and (end == index + 1 or len(lines[end - 1]) != width):
            break
        if complete is None and not _could_grow(text.split(";")):
            break
        following = lines[end]
        if not following.strip() or (
            _START.match(following) and _shape(following.strip().split(";"))
        ):
            break  # the next record, or the end of this one
        text += following.strip()
        end += 1
        if _shape(text.split(";")):
            complete, complete_end = text, end
    if complete is None:
        return None, index
    fields = complete.split(";")
    shaped = _shape(fields)
    parsed = _checked(shaped, fields, source) if shaped else None
    return (parsed, complete_end) if parsed is not None else (None, index)


def _could_grow(fields: list[str]) -> bool:
    """Could more text complete this record?  Only while it is shorter than a full line."""
    version = int(fields[0])
    return len(fields) < _HEADER[version] + 4 * _BLOCK[version] + _TAIL


def _shape(fields: list[str]) -> tuple[int, int, int] | None:
    """(version, number of direction blocks, index of the tail) if the fields have the
    shape of a terse line, else None."""
    try:
        version = int(fields[0])
    except ValueError:
        return None
    if version not in _BLOCK:
        return None
    header, block = _HEADER[version], _BLOCK[version]
    blocks = 0
    while blocks < 4:
        first = header + blocks * block + 12
        pct = fields[first : first + _PERCENTILES]
        if len(pct) < _PERCENTILES or not all("%=" in f for f in pct):
            break
        blocks += 1
    plain = len(_PLAIN_DIRS.get(version, ("read", "write", "trim")))
    if blocks not in (1, plain, plain + 1):
        return None
    tail = header + blocks * block
    if len(fields) < tail + _TAIL:
        return None
    if not all(fields[tail + k].endswith("%") for k in _PCT_TAIL):
        return None
    return version, blocks, tail


def _checked(shape: tuple[int, int, int], fields: list[str], source: str) -> _Line | None:
    version, blocks, tail = shape
    header, block = _HEADER[version], _BLOCK[version]
    plain = _PLAIN_DIRS.get(version, ("read", "write", "trim"))
    if blocks == 1:
        names: tuple[str, ...] = ("mixed",)
    elif blocks == len(plain):
        names = plain
    else:
        names = (*plain, "mixed")  # unified_rw_reporting=both
    head = fields[:header]
    fio_version = head[1] if version >= 3 else None
    name, group, error = head[-3:]
    try:
        parsed = _Line(
            version=version,
            fio_version=fio_version,
            name=name,
            group=int(group),
            error=int(error),
            directions=[
                (ddir, fields[header + k * block : header + (k + 1) * block])
                for k, ddir in enumerate(names)
            ],
            tail=fields[tail : tail + _TAIL],
        )
    except ValueError:
        return None  # group or error not a number: not a terse header after all
    rest = fields[tail + _TAIL :]
    while len(rest) >= _DISK and rest[_DISK - 1].endswith("%") and not _is_number(rest[0]):
        if rest[0] != "slaves":  # the averaged members of a stacked device
            parsed.disks[rest[0]] = rest[1:_DISK]
        rest = rest[_DISK:]
    if parsed.error:
        raise job_error(source, name, parsed.error)
    return parsed


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def _result(run: list[_Line], source: str) -> Result:
    jobs = []
    for line in run:
        try:
            jobs.append(_job(line))
        except (ValueError, IndexError):
            raise IngestError(
                source, f"fio terse line of job '{line.name}' has a malformed number"
            ) from None
    if not any(has_io(job) for job in jobs):
        raise NoIOError(source, "fio terse output in which no job did any I/O")
    metrics, histograms = aggregate_jobs(jobs)
    for disk, values in run[-1].disks.items():
        try:
            name = disk.replace(".", "_")
            for key, value in zip(FIO_DISK_COUNTERS, values[:7], strict=True):
                metrics[f"disk.{name}.{key}"] = parse_float(value)
            metrics[f"disk.{name}.util_pct"] = parse_percent(values[7])
        except ValueError:
            continue  # disk figures are evidence; a garbled one is left out, not invented
    fio_version = run[0].fio_version
    return Result(
        tool="fio",
        format="fio-terse",
        source=source,
        tool_version=tool_version(fio_version) if fio_version else None,
        metrics=metrics,
        jobs=jobs,
        histograms=histograms,
    )


def _job(line: _Line) -> Job:
    metrics: dict[str, float] = {}
    for ddir, block in line.directions:
        metrics.update(_direction(ddir, block))
    tail = line.tail
    metrics["cpu.usr_pct"] = parse_percent(tail[0])
    metrics["cpu.sys_pct"] = parse_percent(tail[1])
    metrics["cpu.ctx"] = parse_float(tail[2])
    metrics["cpu.majf"] = parse_float(tail[3])
    metrics["cpu.minf"] = parse_float(tail[4])
    return Job(name=line.name, metrics=metrics, group=line.group)


def _direction(ddir: str, block: list[str]) -> dict[str, float]:
    """Metrics of one direction block; empty when the direction saw no I/O."""
    io_kib, bw_kib, iops, runtime = (parse_float(f) for f in block[0:4])
    latencies = {
        "slat_ns": [parse_float(f) for f in block[4:8]],
        "clat_ns": [parse_float(f) for f in block[8:12]],
        "lat_ns": [parse_float(f) for f in block[32:36]],
    }
    if io_kib == 0 and iops == 0 and not any(any(v) for v in latencies.values()):
        return {}
    out = {
        f"{ddir}.io_bytes": io_kib * 1024,
        f"{ddir}.bw_bytes": bw_kib * 1024,
        f"{ddir}.iops": iops,
        f"{ddir}.runtime_ms": runtime,
    }
    for kind, values in latencies.items():
        if not any(values):
            continue  # fio prints zeros for latencies it did not measure
        for stat, value in zip(("min", "max", "mean", "stddev"), values, strict=True):
            out[f"{ddir}.{kind}.{stat}"] = value * 1000
    if any(latencies["clat_ns"]):
        for item in block[12 : 12 + _PERCENTILES]:
            pct, _, raw = item.partition("%=")
            p = parse_float(pct)
            if 0 < p <= 100:
                out[f"{ddir}.clat_ns.{percentile_name(p)}"] = parse_float(raw) * 1000
    return out
