"""mmtests compare tables: `Hmean  tput-1  43593.49 (   0.00%)  41616.85 *  -4.53%* …`.

mmtests' compare-kernels.sh prints one row per statistic and test parameter; the first
kernel column is the base (its gain is always 0.00%), every further column a kernel with
its gain in % — positive means better whichever way the metric goes — between `*…*` when
mmtests found the difference significant, `(…)` when not.  The kernels are the one or two
header lines above the first row (version, then name); the caption is the line above them.
"""

from __future__ import annotations

import re

from iolab.ingest.tables import NUM, caption_above, number
from iolab.model.comparison import Comparison, Row

_STAT = r"(?:Hmean|Amean|Gmean|Stddev|CoeffVar|BAmean-\d+|Min|Max|Quartile-\d+|Percentile-\d+)"
_CELL = rf"({NUM})\s*([(*])\s*({NUM})%\s*[)*]"
_ROW = re.compile(rf"^\s*({_STAT})\s+(\S+)((?:\s+{NUM}\s*[(*]\s*{NUM}%\s*[)*])+)(.*)$")
_CELLS = re.compile(_CELL)
# what a mail client's re-wrap leaves of a row on the next line: figures, (, ), *, %, and
# maybe a person's `<---` after them — no letters
_TAIL = re.compile(r"^\s*[\d()*.+-][^A-Za-z]*$")
_LABEL = re.compile(rf"^\s*{_STAT}\s+\S")


def looks_like(lines: list[str]) -> bool:
    return any(_ROW.match(line) for line in lines)


def find(lines: list[str], source: str) -> list[Comparison]:
    """One Comparison per block of consecutive mmtests rows."""
    lines = [line.rstrip("\r") for line in lines]
    tables: list[Comparison] = []
    current: Comparison | None = None
    consumed = -1
    for i, line in enumerate(lines):
        if i <= consumed:
            continue  # the re-wrapped tail of the row above, read with it
        if _LABEL.match(line):
            j = i + 1
            while j < len(lines) and j - i < 8 and _TAIL.match(lines[j]):
                line = f"{line} {lines[j].strip()}"
                j += 1
            if j > i + 1 and _ROW.match(line):
                consumed = j - 1
            else:
                line = lines[i]
        m = _ROW.match(line)
        if not m:
            if current is not None and not line.strip():
                current = None
            continue
        row = _row(m, i + 1)
        if current is None or len(row.values) != len(current.rows[0].values):
            current = _start(lines, i, source, len(row.values))
            tables.append(current)
        current.rows.append(row)
    return tables


def _row(m: re.Match[str], line: int) -> Row:
    stat, name, cells, _rest = m.groups()
    values: list[float | None] = []
    changes: list[float | None] = []
    marks: list[bool] = []
    for value, mark, change in _CELLS.findall(cells):
        values.append(number(value))
        changes.append(number(change))
        marks.append(mark == "*")
    last = len(values) - 1
    return Row(
        metric=name,
        stat=stat,
        base=values[0],
        new=values[last] if last > 0 else None,
        change_pct=changes[last] if last > 0 else None,
        significant=marks[last] if last > 0 else None,
        values=values,
        changes_pct=changes,
        marks=marks,
        line=line,
    )


def _start(lines: list[str], i: int, source: str, ncols: int) -> Comparison:
    """A new table: its kernel columns from the header lines above row `i`, and caption."""
    header: list[list[str]] = []
    j = i - 1
    while j >= 0 and len(header) < 2:
        words = lines[j].split()
        if len(words) != ncols or _ROW.match(lines[j]):
            break
        header.insert(0, words)
        j -= 1
    columns = [" ".join(parts) for parts in zip(*header, strict=True)] if header else []
    return Comparison(
        format="mmtests",
        source=source,
        line=i + 1 - len(header),
        caption=caption_above(lines, i, skip=len(header)),
        columns=columns,
        change_kind="gain",
    )
