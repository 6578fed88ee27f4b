"""benchstat output (golang.org/x/perf/cmd/benchstat), both generations.

Old (before 2023): a `name  old time/op  new time/op  delta` header, then rows
`Name-16  151ns ± 0%  23ns ± 0%  -85.00%  (p=0.000 n=9+10)`, `~` for no significant change.
New: two `│`-separated header lines (the compared files, then the unit and `vs base`) and
rows `Name-16  96.61m ± 4%  70.73m ± 3%  -26.79% (p=0.000 n=10)`, with a `geomean` row.

Figures are converted from the printed suffix to the base unit the header names (seconds,
bytes, counts: `151ns` → 1.51e-07, `32.45Mi` → 34026291.2), so base and new compare even
where benchstat printed them with different suffixes; `unit` keeps the header's unit.
"""

from __future__ import annotations

import re

from iolab.ingest.tables import NUM, caption_above, number
from iolab.model.comparison import Comparison, Row

_OLD_HEADER = re.compile(r"^\s*name\s+old\s+(\S+)\s+new\s+(\S+)\s+delta\s*$")
_NEW_FILES = re.compile(r"^\s*│(.+)│\s*$")
_NEW_UNITS = re.compile(r"^\s*│\s*(\S+)\s*│\s*(\S+)\s+vs base\s*│")
_FOOT = r"[¹²³⁴⁵⁶⁷⁸⁹⁰\s]*"
_VAL = rf"({NUM})([A-Za-zµμ]*)"
_SD = rf"(?:\s*±\s*(?:({NUM})%|∞){_FOOT})?"
_ROW = re.compile(
    rf"^\s*(\S+)\s+{_VAL}{_SD}\s+{_VAL}{_SD}\s+(?:([+-]?{NUM})%|~){_FOOT}"
    rf"(?:\((?:p=({NUM})\s*)?n=([\d+]+)\){_FOOT})?\s*$"
)
_SCALE = {
    "": 1.0,
    "n": 1e-9,
    "ns": 1e-9,
    "µ": 1e-6,
    "μ": 1e-6,
    "u": 1e-6,
    "µs": 1e-6,
    "μs": 1e-6,
    "us": 1e-6,
    "m": 1e-3,
    "ms": 1e-3,
    "s": 1.0,
    "B": 1.0,
    "k": 1e3,
    "kB": 1e3,
    "K": 1e3,
    "KB": 1e3,
    "M": 1e6,
    "MB": 1e6,
    "G": 1e9,
    "GB": 1e9,
    "Ki": 1024.0,
    "Mi": 1024.0**2,
    "Gi": 1024.0**3,
}


def looks_like(lines: list[str]) -> bool:
    return any(_OLD_HEADER.match(line) or _NEW_UNITS.match(line) for line in lines)


def find(lines: list[str], source: str) -> list[Comparison]:
    lines = [line.rstrip("\r") for line in lines]
    tables: list[Comparison] = []
    for i, line in enumerate(lines):
        old = _OLD_HEADER.match(line)
        new = _NEW_UNITS.match(line)
        if old:
            table = Comparison(
                format="benchstat",
                source=source,
                line=i + 1,
                caption=caption_above(lines, i),
                columns=["old", "new"],
            )
            unit = old.group(1)
        elif new and i > 0 and _NEW_FILES.match(lines[i - 1]):
            files = [f.strip() for f in lines[i - 1].strip().strip("│").split("│")]
            table = Comparison(format="benchstat", source=source, line=i, columns=files)
            table.caption = caption_above(lines, i - 1)
            unit = new.group(2)
        else:
            continue
        table.rows = _rows(lines, i + 1, unit)
        if table.rows:
            tables.append(table)
    return tables


def _rows(lines: list[str], start: int, unit: str) -> list[Row]:
    rows = []
    for i in range(start, len(lines)):
        m = _ROW.match(lines[i])
        if not m:
            break
        name, base, bsuf, bsd, new, nsuf, nsd, delta, p, n = m.groups()
        scale_b, scale_n = _SCALE.get(bsuf), _SCALE.get(nsuf)
        if scale_b is None or scale_n is None:
            break
        b, v = number(base), number(new)
        rows.append(
            Row(
                metric=name,
                base=None if b is None else b * scale_b,
                new=None if v is None else v * scale_n,
                base_stddev_pct=number(bsd),
                new_stddev_pct=number(nsd),
                change_pct=number(delta) if delta is not None else None,
                significant=None if name == "geomean" else delta is not None,
                unit=unit,
                p_value=number(p),
                n=n,
                line=i + 1,
            )
        )
    return rows
