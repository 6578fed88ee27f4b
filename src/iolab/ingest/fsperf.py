"""fsperf result tables (btrfs' fsperf): `name  baseline  current  [stdev]  diff%  [*]`.

A table is a `<test> results` caption, a header line naming the columns (`metric
baseline current [stdev] diff`), a line of `=`, and one row per metric.  `*` after the
diff marks a difference fsperf found significant (newer versions).  Commit messages wrap
long rows, so a row may be spread over several lines: figures are gathered line by line
until the row's `diff%` arrives.
"""

from __future__ import annotations

import re

from iolab.ingest.tables import NUM, number, table_at
from iolab.model.comparison import Comparison, Row

_HEADER = re.compile(r"^\s*metric\s+baseline\s+current(\s+stdev)?\s+diff\s*$")
_RULE = re.compile(r"^\s*={10,}\s*$")
_TOKEN_NUM = re.compile(rf"^{NUM}$")
_DIFF = re.compile(rf"^({NUM})%(\S*)$")


def looks_like(lines: list[str]) -> bool:
    return any(_HEADER.match(line) for line in lines)


def find(lines: list[str], source: str) -> list[Comparison]:
    tables = []
    for i, line in enumerate(lines):
        m = _HEADER.match(line)
        if m and i + 1 < len(lines) and _RULE.match(lines[i + 1]):
            table = table_at(lines, i, "fsperf", source, ["baseline", "current"])
            table.rows = _rows(lines, i + 2, with_stdev=m.group(1) is not None)
            if any(r.significant for r in table.rows):  # this fsperf marks: unmarked is "no"
                for r in table.rows:
                    r.significant = bool(r.significant)
            if table.rows:
                tables.append(table)
    return tables


def _rows(lines: list[str], start: int, with_stdev: bool) -> list[Row]:
    rows: list[Row] = []
    words: list[str] = []
    first = start
    width = 4 if with_stdev else 3  # figures before the diff
    for i in range(start, len(lines)):
        tokens = lines[i].split()
        if not tokens:
            break
        if not words:
            first = i
            if _TOKEN_NUM.match(tokens[0]):  # a row must start with its metric name
                break
        words += tokens
        if len(words) > width + 2:
            break
        if not _DIFF.match(words[-1]) and not (words[-1] == "*" and len(words) > 1):
            continue
        row = _row(words, width, first + 1)
        if row is None:
            break
        rows.append(row)
        words = []
    return rows


def _row(words: list[str], width: int, line: int) -> Row | None:
    star = words[-1] == "*"
    if star:
        words = words[:-1]
    if len(words) != width + 1 or not all(_TOKEN_NUM.match(w) for w in words[1:width]):
        return None
    diff = _DIFF.match(words[width])
    if diff is None:
        return None
    tail = diff.group(2)
    return Row(
        metric=words[0],
        base=number(words[1]),
        new=number(words[2]),
        stddev=number(words[3]) if width == 4 else None,
        change_pct=number(diff.group(1)),
        significant=True if star or tail.startswith("*") else None,
        line=line,
    )
