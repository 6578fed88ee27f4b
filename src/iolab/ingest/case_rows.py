"""Users' own one-line-per-case tables: a label, then fio's IOPS and BW figures.

    bs=4k    IOPS=11.1k, BW=43.2MiB/s
    bs=64k   IOPS=3081, BW=193MiB/s
    [w/o]
      w:  IOPS=62.5k, BW=244MiB/s
      rw: IOPS=56.7k, BW=221MiB/s

Each row is one result whose caption is its label — or `heading: label` when the block of
rows has a caption line of its own above it (ingest.mail.caption_for).  The direction is the
one the row or its label names (`write:`, `randread`, `w`, `r`), else the one the nearest
`rw=`/`--rw=` above the rows names; a row whose direction nothing names is read as fio's
`mixed` (all directions together, as fio itself reports with unified_rw_reporting).
Complete fio direction lines (`write: IOPS=…(…msec)`) are fio_text's, and t/io_uring's
per-second lines (`IOPS=…, IOS/call=…`) are ingest.io_uring's; neither is read here.
"""

from __future__ import annotations

import re

from iolab.errors import IngestError
from iolab.ingest import fio_text, mail, numbers
from iolab.model.result import Job, Result

FORMAT = "fio-row"
_NUM = r"\d+(?:\.\d+)?"
_ROW = re.compile(
    rf"^(?P<label>[^\s=|][^|]{{0,60}}?)[\s:|]*(?<![=\w])IOPS\s*=\s*(?P<iops>{_NUM}\s*[kKMG]?)"
    rf"\s*,?\s*BW\s*=\s*(?P<bw>{_NUM}\s*[KMGT]i?B/s)(?P<rest>.*)$",
    re.IGNORECASE,
)
_DIRECTION_WORD = re.compile(
    r"(?<![\w=])(?P<word>(?:rand|seq)?(?:read|write)|trim|reads|writes|r|w)\s*:?\s*$",
    re.IGNORECASE,
)
_RW_OPTION = re.compile(r"(?:^|[\s-])(?:rw|readwrite)\s*=\s*(?P<rw>[a-z]+)")
_RW_DIRECTION = {
    "read": "read",
    "randread": "read",
    "write": "write",
    "randwrite": "write",
    "trim": "trim",
    "randtrim": "trim",
}
_BRACKET = re.compile(r"^\[(?P<title>[^\]=]{1,40})\]$")
_LOOKBACK = 60  # lines searched above a table for the job's rw=
_MAX_LABEL_WORDS = 4


def find(lines: list[str], source: str) -> list[tuple[int, Result]]:
    """Every case row in `lines` (un-quoted), with the line it is on."""
    found: list[tuple[int, Result]] = []
    block_caption: str | None = None
    previous_row = -2
    for index, raw in enumerate(lines):
        text = raw.strip()
        if "IOPS" not in text.upper() or "IOS/call" in text or fio_text.is_direction_line(text):
            continue
        row = _ROW.match(text)
        if row is None or "msec" in row.group("rest"):
            continue  # not a row, or a fio direction line the fio reader could not read
        label, direction = _label_and_direction(row.group("label"))
        if not label or len(label.split()) > _MAX_LABEL_WORDS:
            continue  # a sentence that mentions figures, not a table's row
        if index != previous_row + 1:  # a new block of rows: its own heading, if any
            block_caption = mail.caption_for(lines, index) or _bracket_heading(lines, index)
        previous_row = index
        if direction is None:
            direction = _context_direction(lines, index) or "mixed"
        try:
            iops = numbers.parse_count(row.group("iops").replace(" ", ""))
            bw = numbers.parse_rate(row.group("bw").replace(" ", ""))
        except ValueError as exc:
            raise IngestError(source, f"line {index + 1}: unreadable case row ({exc})") from None
        metrics = {f"{direction}.iops": iops, f"{direction}.bw_bytes": bw}
        caption = f"{block_caption}: {label}" if block_caption else label
        result = Result(
            tool="fio",
            format=FORMAT,
            source=source,
            caption=caption[: mail.CAPTION_MAX],
            metrics=metrics,
            jobs=[Job(name=label[:60], metrics=dict(metrics))],
        )
        found.append((index, result))
    return found


def _label_and_direction(label: str) -> tuple[str, str | None]:
    """The row's label without its trailing punctuation, and the direction it names."""
    text = label.strip().rstrip(":|,").strip()
    word = _DIRECTION_WORD.search(text)
    direction = None
    if word is not None:
        name = word.group("word").lower().rstrip("s")
        direction = {"r": "read", "w": "write"}.get(name) or name.removeprefix("rand")
        direction = direction.removeprefix("seq")
        if word.start() > 0:  # `bs=4k write:` — the label is what precedes the direction
            text = text[: word.start()].strip().rstrip(":|,").strip()
    return text, direction


def _bracket_heading(lines: list[str], index: int) -> str | None:
    """`[w/o]` just above a block of rows (fio job sections hold options, not rows)."""
    k = index - 1
    while k >= 0 and not lines[k].strip():
        k -= 1
    heading = _BRACKET.match(lines[k].strip()) if k >= 0 else None
    return heading.group("title") if heading else None


def _context_direction(lines: list[str], index: int) -> str | None:
    """The direction of the nearest `rw=` above the rows (a job file or a command line)."""
    for k in range(index - 1, max(index - _LOOKBACK, -1), -1):
        option = _RW_OPTION.search(lines[k])
        if option is not None:
            return _RW_DIRECTION.get(option.group("rw").lower())
    return None
