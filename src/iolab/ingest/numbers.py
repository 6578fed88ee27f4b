"""Numbers as fio and friends print them: SI suffixes (`96.3k`), sizes (`138GiB`, `431280KB`),
rates (`236MiB/s`), percents (`47.79%`), versions (`fio-3.33`).

Shared by the readers so every one of them reads a suffix the same way.  All helpers raise
ValueError on text they do not understand; the readers turn that into IngestError with context.
"""

from __future__ import annotations

import math
import re

# fio's num2str: IOPS, latency min/max and counts use SI (1000-based) suffixes.
SI_FACTORS: dict[str, float] = {
    "": 1.0,
    "k": 1e3,
    "K": 1e3,
    "M": 1e6,
    "G": 1e9,
    "T": 1e12,
    "P": 1e15,
    "E": 1e18,
}
_PREFIX_POWER = {"": 0, "K": 1, "k": 1, "M": 2, "G": 3, "T": 4, "P": 5, "E": 6}

_NUMBER = r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?"
_COUNT_RE = re.compile(rf"\s*({_NUMBER})\s*([kKMGTPE]?)\s*\Z")
_SIZE_RE = re.compile(rf"\s*({_NUMBER})\s*([kKMGTPE]?)(i?)([bB]?)\s*\Z")
_VERSION_RE = re.compile(r"(\d+)\.(\d+)(?:\.(\d+))?")


def parse_float(text: str) -> float:
    """A finite float; ValueError for `nan`, `inf` and anything that is not a number."""
    value = float(text.strip())
    if not math.isfinite(value):
        raise ValueError(f"not a finite number: {text!r}")
    return value


def parse_count(text: str) -> float:
    """`96.3k` → 96300.0, `1794k`, `2666.0k`, `12` — fio's SI-suffixed counts."""
    match = _COUNT_RE.match(text)
    if not match:
        raise ValueError(f"not a number: {text!r}")
    return parse_float(match.group(1)) * SI_FACTORS[match.group(2)]


def parse_size(text: str, *, legacy_units: bool = False) -> float:
    """Bytes from `138GiB`, `148GB`, `4096B`, `431280KB`, `512k`.

    `KiB`/`MiB`... are 1024-based and `kB`/`MB`... 1000-based as fio 2.17+ prints them; with
    `legacy_units` (fio <= 2.16, kb_base=1024) `KB`/`MB` mean KiB/MiB too.  A bare suffix
    without `B` (`512k`) is 1024-based, as in fio's job options.
    """
    match = _SIZE_RE.match(text)
    if not match:
        raise ValueError(f"not a size: {text!r}")
    number, prefix, binary, byte = match.groups()
    value = parse_float(number)
    power = _PREFIX_POWER[prefix]
    if power == 0:
        if binary:
            raise ValueError(f"not a size: {text!r}")
        return value
    base = 1024 if (binary or legacy_units or not byte) else 1000
    return value * float(base**power)


def parse_rate(text: str, *, legacy_units: bool = False) -> float:
    """Bytes per second from `236MiB/s`, `247MB/s`, `7186.3KB/s` (see parse_size for units)."""
    stripped = text.strip()
    if not stripped.endswith("/s"):
        raise ValueError(f"not a rate: {text!r}")
    return parse_size(stripped[:-2], legacy_units=legacy_units)


def parse_percent(text: str) -> float:
    """`47.79%` → 47.79 (the `%` is optional)."""
    return parse_float(text.strip().removesuffix("%"))


def parse_version(text: str) -> tuple[int, int, int] | None:
    """(major, minor, patch) from `fio-3.33`, `fio-2.2.10`, `3.1-rc2`; None when absent."""
    match = _VERSION_RE.search(text)
    if not match:
        return None
    return int(match.group(1)), int(match.group(2)), int(match.group(3) or 0)


def tool_version(text: str) -> str:
    """`fio-3.33` → `3.33`: the version as stored in Result.tool_version."""
    return text.strip().removeprefix("fio-").removeprefix("fio ")


# Units fio prints latencies in (`clat (usec):`, `sync percentiles (nsec):`), as nanoseconds.
LATENCY_UNIT_NS: dict[str, float] = {"nsec": 1.0, "usec": 1e3, "msec": 1e6, "sec": 1e9}


def latency_ns(text: str, unit: str) -> float:
    """`1445.0k` in `usec` → 1445000000.0 ns: a (suffixed) latency in fio's printed unit."""
    factor = LATENCY_UNIT_NS.get(unit)
    if factor is None:
        raise ValueError(f"not a latency unit: {unit!r}")
    return parse_count(text) * factor
