"""Shell `for` loops in a mail, on one line or several:

    for bs in 4k 64k 1M; do fio --name=w --rw=write --bs=$bs …; done
    for i in $(seq 0 4); do fio --name=test …; sleep 30; done

A loop whose workload commands (fio, xfs_io, dd) use its variable is unrolled: each such
command once per value, the value written in, so each copy reads as a command of its own,
and fio commands that differ in one option become a matrix, as pasted sweeps do
(reproduce.draft).  A loop whose workload does not use its variable runs the same commands
again: the body is read once, and the loop says how often (the plan's blocks are its
repeats).  Values are words, `{1..4}` and `$(seq …)`; a loop over anything else (`$(ls …)`,
`$JOBFILES`) is read once, its variable left unknown.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass

from iolab.reproduce.shell import Line, split_commands

MAX_VALUES = 64  # more copies than this is not a sweep someone pasted

_ONE_LINE = re.compile(
    r"^for\s+(?P<name>[A-Za-z_][A-Za-z0-9_]*)\s+in\s+(?P<values>.*?)\s*;\s*do\s+"
    r"(?P<body>.*?)\s*;?\s*done\s*;?$"
)
_HEAD = re.compile(
    r"^for\s+(?P<name>[A-Za-z_][A-Za-z0-9_]*)\s+in\s+(?P<values>.*?)\s*(?P<do>;\s*do)?\s*$"
)
_OPENS = re.compile(r"^(?:for|while|until)\b.*(?:;\s*do|\bdo)\s*$|^do$")
_SEQ = re.compile(r"^(?:\$\(|`)\s*seq\s+(-?\d+)(?:\s+(-?\d+))?(?:\s+(-?\d+))?\s*(?:\)|`)$")
_WORKLOAD = re.compile(r"^(?:(?:sudo|time|nice|ionice|env)\s+)*(?:\S*/)?(?:fio|xfs_io|dd)\s")
_BRACES = re.compile(r"^\{(-?\d+)\.\.(-?\d+)(?:\.\.(-?\d+))?\}$")


@dataclass(frozen=True)
class Loop:
    """A loop of the mail: its lines (header to `done`), variable, and values (None when the
    reader cannot list them).  `unrolled`: its workload was copied once per value."""

    line: Line
    name: str
    values: tuple[str, ...] | None
    unrolled: bool
    workload: bool = False  # the body runs fio, xfs_io or dd


def unroll(lines: list[Line]) -> tuple[list[Line], list[Loop]]:
    """The logical lines with each `for` loop replaced by its body (see the module
    docstring), and the loops found, in mail order."""
    out: list[Line] = []
    loops: list[Loop] = []
    i = 0
    while i < len(lines):
        found = _one_line(lines[i], i) or _multi_line(lines, i)
        if found is None:
            out.append(lines[i])
            i += 1
            continue
        loop, body, i = found
        inner_lines, inner_loops = unroll(body)
        pieces = [piece for line in inner_lines for piece in split_commands(line)]
        copies, unrolled = _copies(loop, pieces)
        workload = any(_WORKLOAD.match(piece.text) for piece in pieces)
        loops.append(Loop(loop.line, loop.name, loop.values, unrolled, workload))
        loops.extend(inner_loops)
        out.extend(copies)
    return out, loops


def _one_line(line: Line, at: int) -> tuple[Loop, list[Line], int] | None:
    match = _ONE_LINE.match(line.text)
    if match is None:
        return None
    loop = Loop(line, match["name"], _values(match["values"]), unrolled=False)
    return loop, [Line(line.first, line.last, match["body"], line.depth)], at + 1


def _multi_line(lines: list[Line], at: int) -> tuple[Loop, list[Line], int] | None:
    head = _HEAD.match(lines[at].text)
    if head is None:
        return None
    start = at + 1
    if head["do"] is None:  # `do` on a line of its own
        if start >= len(lines) or lines[start].text.strip() != "do":
            return None
        start += 1
    depth = 0
    for end in range(start, len(lines)):
        text = lines[end].text.strip()
        if _OPENS.match(text):
            depth += 1
        elif text == "done" or text.startswith("done ") or text.startswith("done;"):
            if depth == 0:
                first = lines[at]
                span = Line(first.first, lines[end].last, first.text, first.depth)
                loop = Loop(span, head["name"], _values(head["values"]), unrolled=False)
                return loop, lines[start:end], end + 1
            depth -= 1
    return None  # no `done`: a cut paste, read line by line


def _values(text: str) -> tuple[str, ...] | None:
    """`4k 64k`, `"4k" '64k'`, `{1..4}`, `$(seq 0 4)`, `` `seq 1 2 9` `` → the values."""
    seq = _SEQ.match(text.strip())
    if seq is not None:
        numbers = [int(g) for g in seq.groups() if g is not None]
        if len(numbers) == 1:  # seq LAST
            first, step, last = 1, 1, numbers[0]
        elif len(numbers) == 2:  # seq FIRST LAST
            first, step, last = numbers[0], 1, numbers[1]
        else:  # seq FIRST STEP LAST
            first, step, last = numbers
        return _range(first, last, step)
    try:
        words = shlex.split(text)
    except ValueError:
        return None
    out: list[str] = []
    for word in words:
        braces = _BRACES.match(word)
        if braces is not None:
            a, b, s = (int(g) if g is not None else None for g in braces.groups())
            assert a is not None and b is not None
            found = _range(a, b, abs(s or 1) * (1 if b >= a else -1))
            if found is None:
                return None
            out.extend(found)
        elif any(c in word for c in "$`*?[") or not word:
            return None  # a variable, a command or a glob: not in the mail
        else:
            out.append(word)
        if len(out) > MAX_VALUES:
            return None
    return tuple(out) or None


def _range(first: int, last: int, step: int) -> tuple[str, ...] | None:
    """`first`, `first + step`, … up to `last`; None when that is nothing or too many."""
    if step == 0 or (last - first) * step < 0:
        return None
    count = (last - first) // step + 1
    if count > MAX_VALUES:
        return None
    return tuple(str(first + k * step) for k in range(count))


def _uses(name: str, lines: list[Line]) -> bool:
    pattern = re.compile(rf"\$(?:\{{{name}(?:[:}}]|-)|{name}(?![A-Za-z0-9_]))")
    return any(pattern.search(line.text) for line in lines)


def _copies(loop: Loop, pieces: list[Line]) -> tuple[list[Line], bool]:
    """The body's commands, each workload command (fio, xfs_io, dd) that uses the variable
    copied once per value, the value written in (True); every other command once, as written
    (`sync`, or `echo … > /sys/…/cpu$i/…`, which names the loop's variable in what it lists
    as ignored).  The commands as they are (False) when nothing is copied."""
    uses = [_uses(loop.name, [p]) and _WORKLOAD.match(p.text) is not None for p in pieces]
    if loop.values is None or not any(uses):
        return pieces, False
    name = loop.name
    pattern = re.compile(rf"\$\{{{name}(?::?-[^}}]*)?\}}|\${name}(?![A-Za-z0-9_])")
    out = []
    for k, value in enumerate(loop.values):
        for piece, copied in zip(pieces, uses, strict=True):
            if copied:
                text = pattern.sub(value.replace("\\", "\\\\"), piece.text)
                out.append(Line(piece.first, piece.last, text, piece.depth))
            elif k == 0:
                out.append(piece)
    return out, True
