"""The default human table.  Colour only when writing to a terminal: the caller decides
(`RenderOptions.color`); piped output is plain text with the same layout.

The layout is the one rich's `Table` (box SIMPLE_HEAD, no outer edge, one space of padding
between columns) gives, computed here without rich: importing rich and running its layout
engine was a sixth of `iolab compare`'s work (docs/compare.md, "Speed").  Columns take their
widest cell; when the table is wider than the terminal, the widest wrappable columns give
way first (never the first column, the metric names), then every column alike; a cell that
does not fit wraps at spaces, and a word longer than its column folds.  A line of text wider
than the terminal wraps the same way.  tests/test_report_table.py holds this to what rich
prints for the same blocks, at many widths.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterator
from functools import lru_cache

from iolab.report.layout import Block, blocks
from iolab.report.model import Report
from iolab.report.options import RenderOptions

# ANSI SGR parameters (the terminal's 8 standard colours)
_BOLD = "1"
_STYLE = {
    "regression": "1;31",
    "improvement": "1;32",
    "no change": "36",
    "inconclusive": "33",
    "changed": "35",
}
_RULE = "─"
_WORD = re.compile(r"\s*\S+\s*")  # a word with the blanks before and after it
_TRAILING_BLANKS = re.compile(r"\s+$")


def _verdict_style(cell: str) -> str | None:
    for word, style in _STYLE.items():
        if cell.startswith(word):
            return style
    return None


@lru_cache(maxsize=1024)
def _char_cells(char: str) -> int:
    """Terminal cells one character takes: 0 for controls and combining marks, 2 for East
    Asian wide and full-width characters, else 1."""
    code = ord(char)
    if code < 32 or 0x7F <= code < 0xA0 or unicodedata.combining(char):
        return 0
    return 2 if unicodedata.east_asian_width(char) in ("W", "F") else 1


def cells(text: str) -> int:
    """The width of `text` on a terminal, in cells."""
    if text.isascii():
        return len(text)
    return sum(_char_cells(c) for c in text)


def _fit(text: str, width: int) -> str:
    """`text` cropped or padded with spaces to exactly `width` cells."""
    if text.isascii():
        return text[:width].ljust(width)
    out: list[str] = []
    used = 0
    for char in text:
        size = _char_cells(char)
        if used + size > width:
            break
        out.append(char)
        used += size
    return "".join(out) + " " * (width - used)


def _fold(word: str, width: int) -> list[str]:
    """A word too long for its line, cut into pieces of at most `width` cells."""
    pieces: list[str] = []
    start = used = 0
    for i, char in enumerate(word):
        size = _char_cells(char)
        if used + size > width:
            pieces.append(word[start:i])
            start, used = i, 0
        used += size
    if used:
        pieces.append(word[start:])
    return pieces


def _breaks(text: str, width: int) -> list[int]:
    """Where to start new lines so that `text` fits `width` cells: before a word that no
    longer fits the line, or inside a word wider than a whole line."""
    out: list[int] = []
    used = 0
    for match in _WORD.finditer(text):
        start, word = match.start(), match.group(0)
        size = cells(word.rstrip())
        if width - used >= size:
            used += cells(word)
        elif size > width:
            pieces = _fold(word, width)
            for k, piece in enumerate(pieces):
                if start:
                    out.append(start)
                if k == len(pieces) - 1:
                    used = cells(piece)
                else:
                    start += len(piece)
        elif used and start:
            out.append(start)
            used = cells(word)
    return out


def _wrap(text: str, width: int, justify: str, wrap: bool = True) -> list[str]:
    """`text`'s lines at `width` cells: "left" and "right" pad every line to the width,
    "none" only cuts; `wrap=False` crops each line instead of wrapping it."""
    out: list[str] = []
    for line in text.split("\n"):
        pieces = [line]
        if wrap:
            cuts = _breaks(line, width)
            pieces = [line[a:b] for a, b in zip([0, *cuts], [*cuts, len(line)], strict=True)]
            for k, piece in enumerate(pieces):
                excess = len(piece) - width
                blanks = _TRAILING_BLANKS.search(piece)
                if excess > 0 and blanks is not None:
                    pieces[k] = piece[: len(piece) - min(len(blanks.group(0)), excess)]
        for piece in pieces:
            if justify == "left":
                out.append(_fit(piece, width))
            elif justify == "right":
                piece = piece.rstrip()
                if cells(piece) > width:
                    piece = _fit(piece, width)
                out.append(" " * (width - cells(piece)) + piece)
            else:
                out.append(_fit(piece, width) if cells(piece) > width else piece)
    return out


def _styled(text: str, style: str | None, color: bool) -> str:
    """`text` in an SGR style, its surrounding blanks left plain (colour only when asked)."""
    core = text.strip(" ")
    if not color or style is None or not core:
        return text
    left = text[: len(text) - len(text.lstrip(" "))]
    right = text[len(left) + len(core) :]
    return f"{left}\x1b[{style}m{core}\x1b[0m{right}"


# ------------------------------------------------------------------------------ the table
#
# A column's measure is (min, max) cells with its padding: max is its longest line, min its
# longest word, each at most the room there is.


def _measure(text: str, pad: int, room: int) -> tuple[int, int]:
    """(min, max) cells of one cell with `pad` cells of padding, in `room` cells."""
    if room - pad < 1:
        return room, room
    lines = text.splitlines()
    longest = max((cells(x) for x in lines), default=0)
    words = text.split()
    shortest = max((cells(w) for w in words), default=longest)
    lo, hi = _normal(shortest, longest, room)
    lo, hi = min(lo + pad, room), min(hi + pad, room)
    return _normal(lo, hi, room)


def _normal(lo: int, hi: int, room: int) -> tuple[int, int]:
    lo = min(max(0, lo), hi)
    lo, hi = max(0, lo), max(0, max(lo, hi))
    lo, hi = min(lo, room), min(hi, room)
    if hi < 1:
        return 0, 0
    lo = min(max(0, lo), hi)
    return max(0, lo), max(0, max(lo, hi))


def _column_measure(column: list[str], pad: int, room: int) -> tuple[int, int]:
    if room < 1:
        return 0, 0
    measures = [_measure(text, pad, room) for text in column]
    lo = max((m[0] for m in measures), default=1)
    hi = max((m[1] for m in measures), default=room)
    return min(lo, room), min(hi, room)


def _reduce(total: int, ratios: list[int], maximums: list[int], values: list[int]) -> list[int]:
    """Take `total` cells off `values` in proportion to `ratios`, at most `maximums` each."""
    ratios = [r if most else 0 for r, most in zip(ratios, maximums, strict=True)]
    left_ratio = sum(ratios)
    if not left_ratio:
        return values[:]
    left = total
    out: list[int] = []
    for ratio, most, value in zip(ratios, maximums, values, strict=True):
        if ratio and left_ratio > 0:
            taken = min(most, round(ratio * left / left_ratio))
            out.append(value - taken)
            left -= taken
            left_ratio -= ratio
        else:
            out.append(value)
    return out


def _collapse(widths: list[int], wrappable: list[bool], room: int) -> list[int]:
    """Narrow the widest wrappable columns, step by step towards the next widest, until the
    table fits `room` (or no wrappable column can give more)."""
    total = sum(widths)
    excess = total - room
    if not any(wrappable):
        return widths
    while total and excess > 0:
        widest = max(w for w, ok in zip(widths, wrappable, strict=True) if ok)
        second = max(
            (w if ok and w != widest else 0) for w, ok in zip(widths, wrappable, strict=True)
        )
        step = widest - second
        ratios = [1 if ok and w == widest else 0 for w, ok in zip(widths, wrappable, strict=True)]
        if not any(ratios) or not step:
            break
        widths = _reduce(excess, ratios, [min(excess, step)] * len(widths), widths)
        total = sum(widths)
        excess = total - room
    return widths


def _widths(columns: list[list[str]], pads: list[int], room: int) -> list[int]:
    """Each column's width, padding included, for a table of at most `room` cells (the
    separators between columns not counted)."""
    widths = [_column_measure(c, p, room)[1] or 1 for c, p in zip(columns, pads, strict=True)]
    if sum(widths) > room:
        wrappable = [i > 0 for i in range(len(columns))]  # metric names never wrap
        widths = _collapse(widths, wrappable, room)
        if sum(widths) > room:
            widths = _reduce(sum(widths) - room, [1] * len(widths), widths, widths)
        widths = [
            _column_measure(c, p, w)[1] or 0 for c, p, w in zip(columns, pads, widths, strict=True)
        ]
    return widths


def _table(block: Block, width: int, color: bool) -> Iterator[str]:
    n = len(block.headers)
    pads = [(i > 0) + (i < n - 1) for i in range(n)]  # one space inside each separator
    columns = [[block.headers[i], *(row[i] for row in block.rows)] for i in range(n)]
    widths = _widths(columns, pads, width - (n - 1))
    table_width = sum(widths) + n - 1
    if block.text:
        for line in _wrap(block.text, table_width, "left"):
            yield _styled(line, _BOLD, color)

    def row(cells_: list[str], styles: list[str | None], header: bool = False) -> Iterator[str]:
        rendered: list[list[str]] = []
        for i, (text, style) in enumerate(zip(cells_, styles, strict=True)):
            left, right = int(i > 0), int(i < n - 1)
            inner = widths[i] - left - right
            justify = "right" if i in block.right else "left"
            if inner < 1:
                rendered.append([" " * widths[i]])
                continue
            lines = _wrap(text, inner, justify, wrap=i > 0)
            rendered.append([" " * left + _styled(x, style, color) + " " * right for x in lines])
        height = max(len(r) for r in rendered)
        for r, w in zip(rendered, widths, strict=True):  # headers sit on the rule, cells on top
            blank = [" " * w] * (height - len(r))
            r[:] = blank + r if header else r + blank
        for k in range(height):
            yield " ".join(r[k] for r in rendered)

    yield from row(block.headers, [_BOLD] * n, header=True)
    yield _RULE * table_width
    for cells_ in block.rows:
        styles = [
            _verdict_style(c) if i == block.verdict_column else None for i, c in enumerate(cells_)
        ]
        yield from row(cells_, styles)


def _rule(title: str, width: int, color: bool) -> str:
    """A heading: its title, then a line to the right edge."""
    title = title.replace("\n", " ")
    room = max(0, width - 2)
    if not title or not room:
        return _RULE * width
    if cells(title) > room:
        title = _fit(title, room - 1) + "…"
    line = _fit(f"{title} {_RULE * (width - cells(title) - 1)}", width)
    return _styled(title, _BOLD, color) + line[len(title) :]


def render_blocks(report_blocks: list[Block], width: int, color: bool) -> str:
    """The blocks as the terminal shows them, `width` cells wide."""
    out: list[str] = []

    def text(line: str, style: str | None = None) -> None:
        out.extend(_styled(x, style, color) for x in _wrap(line, width, "none"))

    for block in report_blocks:
        if block.kind == "title":
            text(block.text, _BOLD)
            for line in block.lines:
                text(line)
        elif block.kind == "heading":
            out.append("")
            out.append(_rule(block.text, width, color))
        elif block.kind == "table":
            out.append("")
            out.extend(_table(block, width, color))
        else:
            out.append("")
            if block.text:
                text(block.text, _BOLD)
            for line in block.lines:
                text(f"  {line}")
    # no blanks at the ends of lines: they only hurt when pasted
    return "".join(line.rstrip() + "\n" for line in out)


def render(report: Report, options: RenderOptions) -> str:
    return render_blocks(blocks(report, options.show_all), options.width, options.color)
