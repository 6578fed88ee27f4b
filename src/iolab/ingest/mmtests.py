"""mmtests compare tables: `Hmean  tput-1  43593.49 (   0.00%)  41616.85 *  -4.53%* …`.

mmtests' compare-kernels.sh prints one row per statistic and test parameter; the first
kernel column is the base (its gain is always 0.00%), every further column a kernel with
its gain in % — positive means better whichever way the metric goes — between `*…*` when
mmtests found the difference significant, `(…)` when not.  The kernels are the one or two
header lines above the first row (version, then name), also when a mail client's re-wrap
broke each of them over several lines; the caption is the line above them.
"""

from __future__ import annotations

import re

from iolab.ingest.tables import NUM, number, table_at
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
    taken, columns = _header(lines, i, ncols)
    table = table_at(lines, i, "mmtests", source, columns, skip=taken)
    table.change_kind = "gain"
    return table


def _header(lines: list[str], i: int, ncols: int) -> tuple[int, list[str]]:
    """(physical lines taken, kernel names) of the one or two header rows above row `i`.

    As sent, each header row is one line of `ncols` words.  A mail client's re-wrap breaks
    each into lines of fewer words, in order; so the lines right above the row are read
    upward while their words add up to no more than two rows' worth, and the most lines
    whose words make exactly two rows (else one) are the header: the first `ncols` words the
    versions, the next `ncols` the names."""
    counts: list[int] = []  # words per line, upward from the row
    j = i - 1
    while j >= 0 and sum(counts) < 2 * ncols:
        words = lines[j].split()
        if not words or _ROW.match(lines[j]) or sum(counts) + len(words) > 2 * ncols:
            break
        counts.append(len(words))
        j -= 1
    cumulative = [sum(counts[: k + 1]) for k in range(len(counts))]
    for rows in (2, 1):
        if rows * ncols in cumulative:
            taken = cumulative.index(rows * ncols) + 1
            words = [w for line in lines[i - taken : i] for w in line.split()]
            parts = [words[r * ncols : (r + 1) * ncols] for r in range(rows)]
            return taken, [" ".join(p) for p in zip(*parts, strict=True)]
    return 0, []
