"""Pieces every comparison-table reader shares: numbers as printed, a caption line, and
the table that starts under it."""

from __future__ import annotations

import math
import re

from iolab.model.comparison import Comparison

# A number as the tables print it: 25998829, 1.06, -0.1, 5.513e+08, .5
NUM = r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?"


_FIGURE = re.compile(r"^[+-]?\.?\d")


def number(text: str | None) -> float | None:
    """The printed figure as a float; None for no figure (or one Python cannot hold)."""
    if text is None:
        return None
    try:
        value = float(text)
    except ValueError:
        return None
    return value if math.isfinite(value) else None


def table_at(
    lines: list[str], index: int, fmt: str, source: str, columns: list[str], skip: int = 0
) -> Comparison:
    """An empty table of `fmt` whose header is `lines[index]` (after `skip` header lines
    above it, which belong to the table): its 1-based line and its `caption_above`."""
    return Comparison(
        format=fmt,
        source=source,
        line=index + 1 - skip,
        caption=caption_above(lines, index, skip=skip),
        columns=columns,
    )


def caption_above(lines: list[str], index: int, skip: int = 0) -> str | None:
    """The nearest non-blank line above `index` (after `skip` header lines), stripped of a
    trailing colon: "dbench60 results", "config-network-tbench", "1-socket Skylake"."""
    i = index - 1 - skip
    while i >= 0 and not lines[i].strip():
        i -= 1
    if i < 0 or index - skip - i > 3:  # a caption sits right above its table (or header)
        return None
    text = lines[i].strip().rstrip(":").strip()
    if (
        text.startswith(("```", "~~~", "│", "(p="))
        or sum(1 for w in text.split() if _FIGURE.match(w)) > 2
    ):
        return None  # a code fence, a row of the table above, or its re-wrapped `(p=… n=…)`
    return text[:200] or None
