"""Text pasted into mail: the message body, quote prefixes, and the line that captions a result.

Readers never see quote prefixes: `unquote` strips them line by line and keeps one output
line per input line, so a line index means the same thing before and after.  Re-joining
lines a mail client wrapped is left to each reader, since only it knows what a complete
line of its tool looks like.  `message_text` turns a saved message (.eml, with headers,
quoted-printable or base64, format=flowed) into the plain text a person would have read.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from email.message import Message

# One or more quote marks, each optionally followed by one space: "> ", ">>", "> > >".
_QUOTE = re.compile(r"^[ \t]*>(?:[ \t]?>)*[ \t]?")
# Headers that make a text a mail message rather than a paste (first lines only).
_HEADER = re.compile(
    r"^(?:From|To|Cc|Subject|Date|Message-I[Dd]|MIME-Version|Received|Return-Path|"
    r"Delivered-To|In-Reply-To|References|Content-Type|X-[\w-]+):",
)
# Lines a tool prints before its results: skipped when looking for a caption.
_NOISE = re.compile(
    r"^(?:fio-\d\S*|fio: .*|Starting \d+ (?:process|thread)e?s?.*|\.\.\.|"
    r"\S.*: \(g=\d+\): rw=.*|\S.*: Laying out IO file.*|Jobs: \d+ .*|"
    r"[$#] .*|[\w.-]+@[\w.-]+:[^\s$#]*[$#] .*|"
    # t/io_uring's preamble (fio's t/io_uring.c)
    r"Added file .*|polled=\d.*|Engine=.*|submitter=\d.*|Exiting on \w+.*|"
    r"Maximum IOPS=.*|set nr_\w+=.*)$"
)
# Lines past which a caption is never looked for: another message, a signature.
_BOUNDARY = re.compile(
    r"^(?:--\s*|-+\s*Original Message\s*-+|On .* wrote:|.*\b(?:wrote|writes):|"
    r"_{5,}|From: .*|Sent: .*)$"
)
# A word of prose: letters, maybe wrapped in punctuation ("(with", "revert):", "don't").
_WORD = re.compile(r"[(\"'\[]?[A-Za-z][A-Za-z'’-]*[)\"'\],.:;!?]*")
# Words that appear in tool output and its wrapped fragments, not in captions.
_TOOL_WORDS = frozenset(
    [
        "zone",
        "resets",
        "mon",
        "tue",
        "wed",
        "thu",
        "fri",
        "sat",
        "sun",
        "jan",
        "feb",
        "mar",
        "apr",
        "may",
        "jun",
        "jul",
        "aug",
        "sep",
        "oct",
        "nov",
        "dec",
        "io",
        "depths",
        "submit",
        "complete",
        "issued",
        "rwts",
        "latency",
        "lat",
        "clat",
        "slat",
        "bw",
        "iops",
        "cpu",
        "usec",
        "nsec",
        "msec",
        "records",
        "in",
        "out",
        "bytes",
        "copied",
        "ops",
        "sec",
        "and",
    ]
)
CAPTION_MAX = 200
# Markdown around a pasted result: code fences, headings, a title's underline.
_FENCE = re.compile(r"^(?:```|~~~)[\w+-]*$")
_HEADING = re.compile(r"^#{2,6}\s+(?P<title>\S.*?)\s*#*$")
_UNDERLINE = re.compile(r"^(?:={3,}|-{3,})$")
# A short title ending in a colon (`RAID10:`, `ext4 -o iversion:`), not fio's own headers.
_TITLE = re.compile(r"^(?!Run status group|Disk stats|All clients)[^=:;|]{1,60}:$")
# A short list item naming the case (`- w/o:`, `- w/`, `* with revert`): the bullet is dropped.
_BULLET = re.compile(r"^[-*+•]\s+(?P<title>[^=|]{1,40}?)\s*:?$")
# A figure a tool printed (`IOPS=11.1k`, `bw=7418.6KB/s`): a result's line, never a caption's.
_FIGURE = re.compile(r"\b(?:IOPS|iops|BW|bw|aggrb)\s*=\s*\d")


def unquote(lines: list[str]) -> list[str]:
    """The same lines without mail quote prefixes (`> `, `>>>> `, `> > >`, mixed per line)."""
    return [_QUOTE.sub("", line, count=1) for line in lines]


def quote_depth(line: str) -> int:
    """How many quote marks a line carries (0 for an unquoted line)."""
    match = _QUOTE.match(line)
    return match.group(0).count(">") if match else 0


def is_prose(line: str) -> bool:
    """True for a line a person wrote (a caption, a remark), not for tool output or a
    fragment of a tool line that a mail client wrapped (`samples=4`, `Sat Nov 21 ...`).

    A line is prose when its plain words outnumber its data tokens (`key=value`, numbers,
    units); words that tool output itself uses do not count.
    """
    words = data = 0
    for token in line.split():
        if _WORD.fullmatch(token):
            if token.strip("()\"'[],.:;!?").lower() not in _TOOL_WORDS:
                words += 1
        elif any(ch.isdigit() or ch in "=%|[]/" for ch in token):
            data += 1
    return words > 0 and words >= data


def caption_for(lines: list[str], start: int) -> str | None:
    """The nearest preceding line that introduces the result starting at `start`.

    Walks up over blank lines and the tool's own preamble (`fio-3.33`, `Starting 4 threads`,
    job option lines, also when wrapped); stops with None at the previous result's output,
    a signature or a quote attribution ("On ... wrote:").  Trailing colons are dropped.
    Markdown is understood: code fences are skipped, a `##` heading or a title underlined
    with `===`/`---` is the caption, and so is a short line ending in a colon (`RAID10:`).
    """
    from iolab.ingest import dd  # dd's lines in every language (its catalogue)

    i = min(start, len(lines)) - 1
    while i >= 0:
        text = lines[i].strip()
        if not text or _NOISE.match(text) or _FENCE.match(text):
            i -= 1
            continue
        if _BOUNDARY.match(text) or dd.is_output(text):
            return None
        heading = _HEADING.match(text)
        if heading:
            return heading.group("title")[:CAPTION_MAX]
        bullet = _BULLET.match(text)
        if bullet and not _FIGURE.search(text):
            return bullet.group("title")[:CAPTION_MAX]
        if _UNDERLINE.match(text) and i > 0 and lines[i - 1].strip():
            title = lines[i - 1].strip()
            return title.rstrip(":").rstrip()[:CAPTION_MAX] or None
        if is_prose(text) or _TITLE.match(text):
            caption = text.rstrip(":").rstrip()
            return caption[:CAPTION_MAX] if caption else None
        if _FIGURE.search(text):
            return None  # the previous result's own line
        noise_above = _wrapped_noise_start(lines, i)
        if noise_above is None:
            return None
        i = noise_above - 1
    return None


def _wrapped_noise_start(lines: list[str], i: int) -> int | None:
    """If line i is the wrapped tail of a preamble line just above it, that line's index."""
    for k in range(i - 1, max(i - 4, -1), -1):
        text = lines[k].strip()
        if not text or is_prose(text):
            return None
        if _NOISE.match(text):
            return k
    return None


def looks_like_message(text: str) -> bool:
    """True when the text starts with mail headers (a saved .eml or an mbox entry)."""
    head = text.lstrip("\r\n").splitlines()[:40]
    if head and head[0].startswith("From "):
        head = head[1:]
    headers = 0
    for line in head:
        if not line.strip():
            break
        if _HEADER.match(line):
            headers += 1
        elif not line[:1].isspace() and not re.match(r"^[\w-]+:", line):
            return False
    return headers >= 2


def message_text(text: str) -> str:
    """The readable text of a saved mail message: every text/plain part decoded, flowed
    lines re-joined; any other text is returned unchanged."""
    if not looks_like_message(text):
        return text
    import email  # the mail parser is loaded only for a saved message (start-up of parse)
    import email.policy

    message = email.message_from_string(text, policy=email.policy.default)
    bodies: list[str] = []
    for part in message.walk():
        if part.get_content_type() != "text/plain" or part.is_attachment():
            continue
        body = _decoded(part)
        if body is None:
            continue
        if part.get_param("format", "", header="content-type") == "flowed":
            delsp = str(part.get_param("delsp", "no", header="content-type")).lower() == "yes"
            body = unflow(body, delsp=delsp)
        bodies.append(body)
    return "\n".join(bodies) if bodies else text


def _decoded(part: Message) -> str | None:
    """The part's text.  The message was read as text already, so a body that is not
    transfer-encoded (7bit, 8bit, none) is taken as it is: decoding it again with its
    declared charset (us-ascii, utf-8) turned every "±" of a saved plain mail into "\ufffd".
    Only quoted-printable and base64 bodies are bytes to decode with their charset."""
    from email.message import EmailMessage

    encoding = str(part.get("content-transfer-encoding", "")).strip().lower()
    if encoding not in ("quoted-printable", "base64"):
        payload = part.get_payload(decode=False)
        return payload if isinstance(payload, str) else None
    try:
        if isinstance(part, EmailMessage):
            content = part.get_content()
            return content if isinstance(content, str) else None
        payload = part.get_payload(decode=True)
        return payload.decode("utf-8", "replace") if isinstance(payload, bytes) else None
    except (LookupError, ValueError, AssertionError):
        return None


def unflow(body: str, *, delsp: bool = False) -> str:
    """Undo RFC 3676 format=flowed: a line ending in a space continues on the next line of
    the same quote depth.  Quote prefixes are re-emitted as `> ` per level."""
    out: list[str] = []
    pending: str | None = None
    pending_depth = 0
    for raw in body.splitlines():
        depth = len(raw) - len(raw.lstrip(">"))
        content = raw[depth:]
        if content.startswith(" "):
            content = content[1:]  # space-stuffing
        if pending is not None and depth != pending_depth:
            out.append("> " * pending_depth + pending)
            pending = None
        flowed = content.endswith(" ") and content.rstrip() != "--"
        if flowed and delsp:
            content = content[:-1]
        joined = content if pending is None else pending + content
        if flowed:
            pending, pending_depth = joined, depth
        else:
            out.append("> " * depth + joined)
            pending = None
    if pending is not None:
        out.append("> " * pending_depth + pending)
    return "\n".join(out)
