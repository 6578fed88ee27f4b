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

from iolab.ingest.tables import NUM, number, table_at
from iolab.model.comparison import Comparison, Row

_OLD_HEADER = re.compile(r"^\s*name\s+old\s+(\S+)\s+new\s+(\S+)\s+delta\s*$")
_NEW_UNITS = re.compile(r"^\s*│\s*(\S+)\s*│\s*(\S+)\s+vs base\b")
_BAR_ONLY = re.compile(r"^\s*│\s*$")
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
    tables: list[Comparison] = []
    for i, line in enumerate(lines):
        old = _OLD_HEADER.match(line)
        new = _NEW_UNITS.match(line)
        if old:
            table = table_at(lines, i, "benchstat", source, ["old", "new"])
            unit = old.group(1)
        elif new:
            above = _file_lines(lines, i)  # one line, or two where a mail client wrapped it
            files = [f.strip() for f in " ".join(above).strip().strip("│").split("│")]
            first = i - len(above)
            table = table_at(lines, first, "benchstat", source, files)
            unit = new.group(2)
        else:
            continue
        table.rows = _rows(lines, i + 1, unit)
        if table.rows:
            tables.append(table)
    return tables


def _file_lines(lines: list[str], i: int) -> list[str]:
    """The `│ old.txt │ new.txt │` line(s) right above the unit line `i`."""
    above: list[str] = []
    j = i - 1
    while j >= 0 and len(above) < 2 and "│" in lines[j] and "vs base" not in lines[j]:
        above.insert(0, lines[j])
        if lines[j].lstrip().startswith("│"):
            break
        j -= 1
    return above


def _rows(lines: list[str], start: int, unit: str) -> list[Row]:
    if start < len(lines) and _BAR_ONLY.match(lines[start]):
        start += 1  # the unit line's closing bar, wrapped onto its own line
    rows = []
    wrapped = False
    for i in range(start, len(lines)):
        if wrapped:  # this line was the tail of the row above
            wrapped = False
            continue
        m = _ROW.match(lines[i])
        if (not m or m.group(10) is None) and i + 1 < len(lines) and lines[i + 1].strip():
            joined = _ROW.match(f"{lines[i]} {lines[i + 1].strip()}")  # a mail client's wrap
            if joined is not None and (m is None or joined.group(10) is not None):
                m, wrapped = joined, True
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
