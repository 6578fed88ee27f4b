"""Find every comparison table in a text — 0-day/LKP, mmtests, fsperf, benchstat.

Like the result readers (ingest.detect), by content: a saved message is reduced to its
plain-text body, quote prefixes are removed line by line, then each table reader reports
the tables it recognises.  Readers never raise on what they do not recognise; a text with
no table gives an empty list.
"""

from __future__ import annotations

import re

from iolab.errors import IngestError
from iolab.ingest import benchstat, fsperf, lkp, mail, mmtests
from iolab.ingest.detect import parse_text, read_source
from iolab.model.comparison import Comparison
from iolab.model.result import Result

READERS = (lkp, mmtests, fsperf, benchstat)
NOTHING_FOUND = (
    "no fio, xfs_io or dd result and no comparison table (0-day/LKP, mmtests, fsperf, "
    "benchstat) found in it"
)


def table_lines(text: str) -> tuple[list[str], int, dict[str, str]]:
    """The un-quoted lines the table readers see, the number of lines before them in `text`
    (a plain saved message's headers), and the message's headers: a row's `line` is
    `offset + its index + 1` — the file's own line, or the decoded body's for an encoded
    message.  No line ends in a carriage return."""
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    headers: dict[str, str] = {}
    offset = 0
    if mail.looks_like_message(text):
        headers = _headers(text)
        head, _, rest = text.partition("\n\n")
        # an encoded or multipart message is decoded; a plain one keeps its text as it is
        encoded = re.search(
            r"(?im)^content-(?:transfer-encoding:\s*(?:quoted|base64)|type:\s*multipart)", head
        )
        if encoded:
            text = mail.message_text(text)
        else:
            text, offset = rest, head.count("\n") + 2  # line numbers stay the file's
    # here once, whatever a decoder leaves: no table reader strips "\r" itself
    return [line.rstrip("\r") for line in mail.unquote(text.split("\n"))], offset, headers


def find_comparisons(text: str, source: str) -> list[Comparison]:
    """Every comparison table in `text`, in the order they appear."""
    lines, offset, headers = table_lines(text)
    found: list[Comparison] = []
    for reader in READERS:
        if not reader.looks_like(lines):
            continue
        if reader is lkp:
            found.extend(lkp.find(lines, source, headers))
        else:
            found.extend(reader.find(lines, source))
    for table in found:
        table.line += offset
        for row in table.rows:
            row.line += offset
    found.sort(key=lambda t: t.line)
    return found


def _headers(text: str) -> dict[str, str]:
    """Subject, Message-ID and In-Reply-To of a saved message (its body loses them)."""
    from email.parser import HeaderParser

    parsed = HeaderParser().parsestr(text, headersonly=True)
    out = {}
    for name in ("Subject", "Message-ID", "In-Reply-To", "References"):
        value = parsed.get(name)
        if value is not None:
            out[name.lower()] = " ".join(str(value).split())
    return out


def parse_source(path: str) -> tuple[list[Result], list[Comparison]]:
    """The results and the comparison tables of one source (`-`: standard input).

    A text with tables and no fio/xfs_io/dd result is not an error; one with neither is,
    and so is a result that is there but broken."""
    text = read_source(path)
    tables = find_comparisons(text, path)
    try:
        results = parse_text(text, path)
    except IngestError as exc:
        if not exc.reason.startswith("no "):
            raise
        if not tables:
            raise IngestError(path, NOTHING_FOUND) from None
        results = []
    return results, tables
