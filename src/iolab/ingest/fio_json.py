"""fio `--output-format=json` / `json+` (fio 2.x and 3.x, also client/server output).

Units differ by generation, and the reader hides that: fio 2.x reports latencies in µs under
`slat`/`clat`/`lat` and `io_bytes` in KiB (until 2.21 added `io_kbytes`); fio 3.x reports ns
under `*_ns`.  json+ histogram bins are keyed by bucket index in fio 2.3–2.19 and by bucket
value from 2.20 on.  Every metric leaves here in the units its name carries.
"""

from __future__ import annotations

import json
import math
import os
import re
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import lru_cache
from typing import Any

from iolab.errors import IngestError, NoIOError
from iolab.ingest.aggregate import aggregate_jobs
from iolab.ingest.numbers import parse_version, tool_version
from iolab.model.metrics import FIO_DISK_COUNTERS, percentile_name
from iolab.model.result import Histogram, Job, Result

_DIRECTIONS = ("read", "write", "trim", "mixed")
_LATENCIES = ("clat", "lat", "slat")
_ALL_CLIENTS = "All clients"
_INF = math.inf
# (JSON key, metric name) tables built once, not per document: an import reads thousands of
# documents with the same ~100 keys, and building the names was much of the parse time.
Fields = tuple[tuple[str, str], ...]
_DIRECTION_FIELDS: dict[str, Fields] = {
    ddir: tuple(
        (key, f"{ddir}.{metric}")
        for key, metric in (
            ("iops", "iops"),
            ("runtime", "runtime_ms"),
            ("total_ios", "total_ios"),
            ("short_ios", "short_ios"),
        )
    )
    for ddir in _DIRECTIONS
}
# per direction (and sync): (kind, its fio 3.x key, metric prefix, min/max/mean/stddev fields)
_LATENCY_FIELDS: dict[str, tuple[tuple[str, str, str, Fields], ...]] = {
    ddir: tuple(
        (
            kind,
            f"{kind}_ns",
            f"{ddir}.{kind}_ns",
            tuple((stat, f"{ddir}.{kind}_ns.{stat}") for stat in ("min", "max", "mean", "stddev")),
        )
        for kind in _LATENCIES
    )
    for ddir in (*_DIRECTIONS, "sync")
}
_CPU_FIELDS: Fields = (
    ("usr_cpu", "cpu.usr_pct"),
    ("sys_cpu", "cpu.sys_pct"),
    ("ctx", "cpu.ctx"),
    ("majf", "cpu.majf"),
    ("minf", "cpu.minf"),
)
# A JSON object starts on its own line (fio prints `{` in column 0); text may precede it.
_OBJECT_START = re.compile(r"^[ \t]*\{", re.MULTILINE)
# fio prints C's `nan`/`inf` for undefined floats; Python's json wants NaN/Infinity.
_NON_FINITE = re.compile(r"(:\s*)(-?)(?:nan|inf(?:inity)?)\b", re.IGNORECASE)


def looks_like(text: str) -> bool:
    """Cheap test: could this text hold a fio JSON document?  The object must start a line,
    so JSON still quoted in a mail (`> {`) is left for the caller to un-quote first."""
    return ('"fio version"' in text or '"client_stats"' in text) and bool(
        _OBJECT_START.search(text)
    )


def parse(text: str, source: str) -> list[Result]:
    """One Result per fio JSON document in `text` (fio run several times into one file)."""
    return [result for _, result in find(text.splitlines(), source)]


def find(lines: list[str], source: str) -> list[tuple[int, Result]]:
    """Each fio JSON document in `lines` with the index of the line it starts on (so that
    the caller can caption JSON pasted into a mail like any other result)."""
    return find_in_text("\n".join(lines), source)


def find_in_text(text: str, source: str) -> list[tuple[int, Result]]:
    """`find` on the whole text (no splitting into lines and joining them back)."""
    documents = _documents(text, source)
    if not documents:
        raise IngestError(source, "no fio JSON object found")
    found = []
    for line, document in documents:
        try:
            found.append((line, _result(document, source)))
        except IngestError:
            raise
        except (KeyError, TypeError, ValueError, AttributeError, OverflowError) as exc:
            raise IngestError(source, f"fio JSON of an unexpected shape ({exc})") from None
    return found


def _documents(text: str, source: str) -> list[tuple[int, dict[str, Any]]]:
    """Every top-level JSON object that is fio output, with the index of the line it starts
    on (the non-finite rewrite keeps line breaks), skipping text around them.

    fio's C `nan`/`inf` are rewritten only when the text does not decode as it is: the
    rewrite's pattern tries every ':' of the text, which costs more than decoding it."""
    decoder = json.JSONDecoder()
    documents: list[tuple[int, dict[str, Any]]] = []
    pos = 0
    rewritten = False
    while True:
        match = _OBJECT_START.search(text, pos)
        if match is None:
            return documents
        start = text.index("{", match.start())
        try:
            obj, end = decoder.raw_decode(text, start)
        except json.JSONDecodeError as exc:
            if not rewritten:
                rewritten = True
                fixed = _NON_FINITE.sub(_non_finite_repl, text)
                if fixed != text:
                    text, pos, documents = fixed, 0, []
                    continue
            line = text.count("\n", 0, start) + 1
            if _unclosed(text, start):
                raise IngestError(
                    source, f"truncated fio JSON (the object starting at line {line} never ends)"
                ) from None
            raise IngestError(
                source, f"malformed fio JSON at line {exc.lineno}: {exc.msg}"
            ) from None
        except RecursionError:
            raise IngestError(source, "malformed fio JSON: nested too deeply") from None
        if isinstance(obj, dict) and ("jobs" in obj or "client_stats" in obj):
            documents.append((text.count("\n", 0, start), obj))
        elif isinstance(obj, dict) and "fio version" in obj:
            raise IngestError(source, 'fio JSON without a "jobs" list')
        pos = end


def _non_finite_repl(match: re.Match[str]) -> str:
    word = match.group(0)[len(match.group(1)) :].lstrip("-").lower()
    if word == "nan":
        return f"{match.group(1)}NaN"  # JSON's NaN takes no sign
    return f"{match.group(1)}{match.group(2)}Infinity"


def _unclosed(text: str, start: int) -> bool:
    """True when the brackets opened at `start` are still open at the end of the text."""
    depth = 0
    in_string = False
    escaped = False
    for ch in text[start:]:
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
        elif ch in "{[":
            depth += 1
        elif ch in "}]":
            depth -= 1
            if depth == 0:
                return False
    return True


@dataclass(frozen=True)
class _Units:
    """How this fio generation wrote its numbers."""

    io_bytes_in_kib: bool


def _result(doc: dict[str, Any], source: str) -> Result:
    raw_version = doc.get("fio version")
    version = parse_version(raw_version) if isinstance(raw_version, str) else None
    units = _Units(io_bytes_in_kib=version is not None and version < (2, 21, 0))
    client_mode = "client_stats" in doc and "jobs" not in doc
    entries = doc["client_stats"] if client_mode else doc["jobs"]
    if not isinstance(entries, list):
        raise IngestError(source, "fio JSON whose job list is not a list")
    entries = [e for e in entries if not (client_mode and e.get("jobname") == _ALL_CLIENTS)]
    if not entries:
        raise IngestError(source, "fio JSON with no jobs in it")
    ambiguous = _ambiguous_hosts(entries)
    jobs = [_job(entry, source, units, ambiguous) for entry in entries]
    if not any(has_io(job) for job in jobs):
        raise NoIOError(source, "fio JSON in which no job did any I/O (did the jobs start?)")
    metrics, histograms = aggregate_jobs(jobs)
    metrics.update(_disk_metrics(doc.get("disk_util"), _ambiguous_hosts(doc.get("disk_util"))))
    has_bins = any(job.histograms for job in jobs)
    options = doc.get("global options")
    return Result(
        tool="fio",
        format="fio-json+" if has_bins else "fio-json",
        source=source,
        tool_version=tool_version(raw_version) if isinstance(raw_version, str) else None,
        metrics=metrics,
        jobs=jobs,
        histograms=histograms,
        options=_options(options),
        started_at=_timestamp(doc.get("timestamp")),
    )


def _timestamp(value: Any) -> datetime | None:
    """fio's `timestamp` (seconds since the epoch, when the run ended); None if unusable."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    try:
        return datetime.fromtimestamp(float(value), UTC) if value > 0 else None
    except (OverflowError, OSError, ValueError):
        return None


def has_io(job: Job) -> bool:
    """Did the job move any data?  A result without I/O has nothing to compare."""
    return any(key.split(".", 1)[0] in (*_DIRECTIONS, "sync") for key in job.metrics)


def _ambiguous_hosts(entries: Any) -> set[str]:
    """Host names that appear with more than one port (several servers on one host)."""
    if not isinstance(entries, list):
        return set()
    ports: dict[str, set[str]] = {}
    for entry in entries:
        if isinstance(entry, dict) and "hostname" in entry:
            ports.setdefault(str(entry["hostname"]), set()).add(str(entry.get("port", "")))
    return {host for host, seen in ports.items() if len(seen) > 1}


def _host_label(entry: dict[str, Any], ambiguous: set[str]) -> str | None:
    if "hostname" not in entry:
        return None
    host = str(entry["hostname"])
    if host in ambiguous:
        return f"{host}:{entry.get('port', '')}"
    return host


def _job(raw: dict[str, Any], source: str, units: _Units, ambiguous: set[str]) -> Job:
    name = str(raw.get("jobname", "?"))
    host = _host_label(raw, ambiguous)
    if host is not None:
        name = f"{host}:{name}"
    error = raw.get("error", 0)
    if isinstance(error, int) and error != 0:
        raise job_error(source, name, error)
    metrics: dict[str, float] = {}
    histograms: dict[str, Histogram] = {}
    for ddir in _DIRECTIONS:
        block = raw.get(ddir)
        if isinstance(block, dict):
            _direction(block, ddir, units, metrics, histograms)
    sync = raw.get("sync")
    if isinstance(sync, dict):
        total = _num(sync, "total_ios")
        if total:
            metrics["sync.total_ios"] = total
        # fio 3.33 reports total_ios 0 for fdatasync while lat_ns.N counts the calls
        _latencies(sync, "sync", metrics, histograms)
    _copy_numbers(raw, _CPU_FIELDS, 1.0, metrics)
    groupid = raw.get("groupid")
    return Job(
        name=name,
        metrics=metrics,
        options=_options(raw.get("job options")),
        histograms=histograms,
        group=groupid if isinstance(groupid, int) else None,
    )


def job_error(source: str, name: str, error: int) -> IngestError:
    """A job fio says failed (its `error`, an errno, either sign), as every fio reader
    reports it: the result of a failed job is not a measurement."""
    try:
        text = os.strerror(abs(error))
    except (ValueError, OverflowError):
        text = "unknown error"
    return IngestError(source, f"fio job '{name}' reported error {error} ({text})")


def _direction(
    block: dict[str, Any],
    ddir: str,
    units: _Units,
    metrics: dict[str, float],
    histograms: dict[str, Histogram],
) -> None:
    """Metrics of one direction; nothing when it saw no I/O (a write job has no read.iops)."""
    total_ios = _num(block, "total_ios") or 0.0
    io_bytes = _io_bytes(block, units)
    if total_ios == 0 and not io_bytes:
        return
    if io_bytes is not None:
        metrics[f"{ddir}.io_bytes"] = io_bytes
    bw_bytes = _num(block, "bw_bytes")
    if bw_bytes is None:
        bw_kib = _num(block, "bw")
        bw_bytes = None if bw_kib is None else bw_kib * 1024
    if bw_bytes is not None:
        metrics[f"{ddir}.bw_bytes"] = bw_bytes
    _copy_numbers(block, _DIRECTION_FIELDS[ddir], 1.0, metrics)
    _latencies(block, ddir, metrics, histograms)


def _io_bytes(block: dict[str, Any], units: _Units) -> float | None:
    """Bytes moved: `io_bytes` is bytes when fio also wrote `io_kbytes` (2.21+), else KiB."""
    io_bytes = _num(block, "io_bytes")
    if "io_kbytes" in block:
        if io_bytes is None:
            kib = _num(block, "io_kbytes")
            return None if kib is None else kib * 1024
        return io_bytes
    if io_bytes is None:
        return None
    return io_bytes * 1024 if units.io_bytes_in_kib or "bw_bytes" not in block else io_bytes


def _latencies(
    block: dict[str, Any],
    ddir: str,
    metrics: dict[str, float],
    histograms: dict[str, Histogram],
) -> None:
    for kind, ns_key, prefix, stat_fields in _LATENCY_FIELDS[ddir]:
        stats = block.get(ns_key)
        scale = 1.0
        if not isinstance(stats, dict):
            stats = block.get(kind)
            if not isinstance(stats, dict):
                continue
            scale = 1000.0  # fio 2.x: microseconds
        samples = _num(stats, "N")
        if samples == 0 or (samples is None and not _num(stats, "max") and not _num(stats, "mean")):
            continue  # fio writes zeros for latencies it did not measure (slat with psync)
        _copy_numbers(stats, stat_fields, scale, metrics)
        percentiles = stats.get("percentile")
        if isinstance(percentiles, dict):
            # fio 2.x pads the list with "0.00": 0, which names no percentile
            _copy_numbers(
                percentiles, _percentile_fields(prefix, tuple(percentiles)), scale, metrics
            )
        bins = stats.get("bins")
        if isinstance(bins, dict):
            hist = _bins(bins, scale)
            if hist:
                histograms[prefix] = hist


def _copy_numbers(
    source: dict[str, Any], fields: Fields, scale: float, metrics: dict[str, float]
) -> None:
    """metrics[name] = source[key] × scale for each (key, name) of `fields` whose value is a
    finite number (a unit change that overflows the doubles drops it, as a corrupt figure)."""
    for key, name in fields:
        value: Any = source.get(key)
        kind = type(value)
        if kind is float or kind is int:  # what fio writes: no helper calls
            number = value * scale
            if -_INF < number < _INF:
                metrics[name] = number
        elif value is not None:
            slow = _scaled(_as_number(value), scale)
            if slow is not None:
                metrics[name] = slow


def _bins(bins: dict[str, Any], scale: float) -> Histogram:
    """json+ bins → {value: count}.  fio 2.3–2.19 keyed them by bucket index and said how
    the buckets are laid out (FIO_IO_U_PLAT_BITS); later versions key them by value.
    (Written for speed: a json+ file has hundreds of bins per direction.)"""
    if "FIO_IO_U_PLAT_BITS" not in bins:
        common = _value_keyed_bins(bins, scale)
        if common is not None:
            return common
    return _careful_bins(bins, scale)


def _careful_bins(bins: dict[str, Any], scale: float) -> Histogram:
    """`_bins` of any form, bin by bin: counts that are not positive numbers, keys that
    are not finite values ≥ 0 are left out; bins that land on one value are added up."""
    plat_bits = _as_number(bins.get("FIO_IO_U_PLAT_BITS"))
    hist: dict[float, int] = {}
    for key, raw_count in bins.items():
        if type(raw_count) is int:  # what fio writes; anything else goes the careful way
            count = raw_count
        else:
            number = _as_number(raw_count)
            if number is None:
                continue
            count = int(number)
        if count <= 0:
            continue
        try:
            value = float(key)
        except ValueError:
            continue  # FIO_IO_U_PLAT_BITS and friends
        if not 0 <= value < math.inf:
            continue
        if plat_bits is not None:
            value = plat_index_to_value(int(value), int(plat_bits))
        scaled = value * scale
        if scaled < math.inf:
            hist[scaled] = hist.get(scaled, 0) + count
    return hist


def _value_keyed_bins(bins: dict[str, Any], scale: float) -> Histogram | None:
    """`_bins` of the common form (fio 2.20+: keyed by value, every count a positive int, no
    two keys for one value) in a few passes in C; None when anything is unusual, for the
    careful loop to decide."""
    try:
        values = list(map(float, bins))
    except ValueError:
        return None
    counts = list(bins.values())
    if not values:
        return {}
    if set(map(type, counts)) != {int} or min(counts) <= 0:
        return None
    # a NaN makes the sum NaN and an infinity makes it infinite: both fail `< inf`
    if not sum(values) < _INF or min(values) < 0 or not max(values) * scale < _INF:
        return None
    hist = dict(zip(map(scale.__mul__, values), counts, strict=True))
    return hist if len(hist) == len(counts) else None


@lru_cache(maxsize=1024)
def _percentile_fields(prefix: str, keys: tuple[str, ...]) -> Fields:
    """(key, metric name) for fio's percentile keys under `prefix`, keys that name no
    percentile left out.  Cached by the whole key list: every file of an import repeats
    the same few lists, so a document costs one lookup, not one per percentile."""
    fields = ((key, _percentile_metric(prefix, key)) for key in keys)
    return tuple((key, name) for key, name in fields if name is not None)


def _percentile_metric(prefix: str, key: str) -> str | None:
    """`read.clat_ns` + "99.900000" → `read.clat_ns.p99.9`; None for a key that is not a
    percentile in (0, 100]."""
    p = _float_key(key)
    if p is None or p <= 0 or p > 100:
        return None
    return f"{prefix}.{percentile_name(p)}"


def _scaled(value: float | None, scale: float) -> float | None:
    """µs → ns and the like; None when the product leaves the doubles (a corrupt figure)."""
    if value is None:
        return None
    product = value * scale
    return product if math.isfinite(product) else None


def plat_index_to_value(index: int, bits: int = 6) -> float:
    """The value a fio latency bucket stands for (its midpoint), from the bucket index.

    Buckets below 2**(bits+1) hold one value each; above, group g = index >> bits spans
    [2**(g-1+bits), 2**(g+bits)) in 2**bits equal buckets, each reported by its midpoint.
    """
    if bits <= 0 or bits > 16:
        raise ValueError(f"implausible FIO_IO_U_PLAT_BITS {bits}")
    if index < (2 << bits):
        return float(index)
    error_bits = (index >> bits) - 1
    base = 1 << (error_bits + bits)
    k = index % (1 << bits)
    return float(base + int((k + 0.5) * (1 << error_bits)))


def _disk_metrics(disks: Any, ambiguous: set[str]) -> dict[str, float]:
    metrics: dict[str, float] = {}
    if not isinstance(disks, list):
        return metrics
    for disk in disks:
        if not isinstance(disk, dict) or not isinstance(disk.get("name"), str):
            continue
        name = disk["name"].replace(".", "_")
        host = _host_label(disk, ambiguous)
        if host is not None:
            name = f"{name}@{host.replace('.', '_')}"
        for field in FIO_DISK_COUNTERS:
            value = _num(disk, field)
            if value is not None:
                metrics[f"disk.{name}.{field}"] = value
        util = _num(disk, "util")
        if util is not None:
            metrics[f"disk.{name}.util_pct"] = util
    return metrics


def _options(raw: Any) -> dict[str, str]:
    if not isinstance(raw, dict):
        return {}
    return {str(key): str(value) for key, value in raw.items()}


def _num(obj: dict[str, Any], key: str) -> float | None:
    return _as_number(obj.get(key))


def _as_number(value: Any) -> float | None:
    """A finite number from a JSON value (fio prints some as strings), else None."""
    kind = type(value)
    if kind is float or kind is int:  # the common case first: this runs ~100 times a file
        number = float(value)
        return number if -math.inf < number < math.inf else None
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        number = float(value)
    elif isinstance(value, str):
        try:
            number = float(value)
        except ValueError:
            return None
    else:
        return None
    return number if math.isfinite(number) else None


def _float_key(key: str) -> float | None:
    try:
        value = float(key)
    except ValueError:
        return None
    return value if math.isfinite(value) else None
