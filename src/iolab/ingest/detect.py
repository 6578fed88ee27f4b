"""Read a source and find every result in it, whatever its form — detected by content.

Whole-document forms (fio JSON) are tried first.  A saved mail message (.eml) is reduced to
its decoded plain-text body (ingest.mail.message_text).  Then the text is un-quoted (mail
quote prefixes removed) and each line-oriented reader (fio normal text, fio terse, xfs_io,
dd) reports the results it finds with the line each starts at; a result's caption is the
nearest preceding line that introduces it (ingest.mail.caption_for).
"""

from __future__ import annotations

import codecs
import stat
import sys
from collections.abc import Callable
from pathlib import Path

from iolab.errors import IngestError
from iolab.ingest import (
    case_rows,
    dd,
    fio_json,
    fio_terse,
    fio_text,
    io_uring,
    mail,
    quotes,
    two_forms,
    xfs_io,
)
from iolab.model.result import Result

LINE_READERS = (fio_text, fio_terse, xfs_io, dd, io_uring, case_rows)

# A reader finds every result in lines of text: (line it starts at, result).
Finder = Callable[[list[str], str], list[tuple[int, Result]]]

# The reader of a tool's text output, for the lab, which knows what it ran (a plan's
# workload kind) and so needs no detection: one typed table instead of module names.  (fio
# writes a JSON file that the lab reads with fio_json.parse.)
TOOL_READERS: dict[str, Finder] = {
    "xfs_io": xfs_io.find,
    "dd": dd.find,
}


def reader_for(tool: str) -> Finder:
    """The reader of `tool`'s output; KeyError for a tool without one (e.g. `command`)."""
    return TOOL_READERS[tool]


# The largest source read: fio json+ output with every histogram is a few MiB; a device such
# as /dev/zero or a runaway log must end in one line, not fill the memory.
MAX_SOURCE_BYTES = 256 << 20


def _read_file(path: str) -> bytes:
    """A regular file or a pipe (`<(cmd)`), at most MAX_SOURCE_BYTES; devices are refused."""
    p = Path(path)
    if not p.exists():
        raise IngestError(path, "no such file")
    if p.is_dir():
        raise IngestError(path, "is a directory, not a result file")
    mode = p.stat().st_mode
    if not (stat.S_ISREG(mode) or stat.S_ISFIFO(mode)):
        raise IngestError(path, "not a regular file (a device or socket), not a result file")
    try:
        with p.open("rb") as fh:
            data = fh.read(MAX_SOURCE_BYTES + 1)
    except OSError as exc:
        raise IngestError(path, f"cannot read: {exc.strerror}") from None
    if len(data) > MAX_SOURCE_BYTES:
        raise IngestError(path, f"larger than {MAX_SOURCE_BYTES >> 20} MiB, not a result file")
    return data


def read_source(path: str) -> str:
    """The text of a file, or of standard input for `-`; IngestError for anything unreadable."""
    if path == "-":
        data = sys.stdin.buffer.read(MAX_SOURCE_BYTES + 1)
        if len(data) > MAX_SOURCE_BYTES:
            raise IngestError(path, f"larger than {MAX_SOURCE_BYTES >> 20} MiB")
    else:
        data = _read_file(path)
    if data.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        # Windows PowerShell's `>` writes UTF-16 with a byte-order mark
        try:
            data = data.decode("utf-16").encode("utf-8")
        except UnicodeDecodeError:
            raise IngestError(path, "binary data, not a text result") from None
    data = data.removeprefix(codecs.BOM_UTF8)  # Notepad's and PowerShell's "utf8" add one
    if not data.strip():
        raise IngestError(path, "empty input, no result in it")
    if b"\x00" in data:
        raise IngestError(path, "binary data, not a text result")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        text = data.decode("latin-1")
        printable = sum(ch.isprintable() or ch in "\r\n\t" for ch in text)
        if printable < 0.95 * len(text):
            raise IngestError(path, "binary data, not a text result") from None
        return text


def parse_text(text: str, source: str) -> list[Result]:
    """Every result found in `text`; IngestError when there is none or one is broken."""
    found: list[tuple[int, Result]] = []
    lines: list[str] | None = None  # split only when a caption has to be looked for
    if fio_json.looks_like(text):
        found = fio_json.find_in_text(text, source)
    else:
        text = mail.message_text(text)  # a saved message: its decoded text/plain body
        lines = mail.unquote(text.splitlines())
        if fio_json.looks_like("\n".join(lines)):
            found = fio_json.find(lines, source)
        else:
            for reader in LINE_READERS:
                found.extend(reader.find(lines, source))
    if not found:
        raise IngestError(source, _why_not(text))
    found.sort(key=lambda item: item[0])
    found = two_forms.merge(found)  # `--output-format=terse,normal`: one run, not two
    for start, result in found:
        if result.caption is None and start > 0:  # nothing above line 0 to caption it
            if lines is None:
                lines = text.splitlines()
            result.caption = mail.caption_for(lines, start)
    raw = text.splitlines() if lines is not None else []
    depths = [mail.quote_depth(raw[start]) if start < len(raw) else 0 for start, _ in found]
    merged = quotes.merge_copies(found, depths)  # quoted copies: once
    return [result for _, result in quotes.merge_partial(merged, raw)]  # partial re-pastes too


def parse_source(path: str) -> list[Result]:
    return parse_text(read_source(path), path)


def _why_not(text: str) -> str:
    stripped = text.lstrip()
    if stripped.startswith("{") or '"fio version"' in text:
        return "truncated or malformed fio JSON"
    return "no fio, xfs_io or dd result found in it"
