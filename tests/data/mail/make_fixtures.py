#!/usr/bin/env python3
"""Builds the mail fixtures in this directory from real fio outputs (run once, output checked in).

A reply quoting two fio results the way mail clients do it: quote prefixes at two depths
(`> ` and `>> `, some lines `> > `), prose and captions between the results, a signature, and
long lines re-wrapped at 72 columns — Thunderbird-style (the tail keeps the quote prefix) for
one result and Outlook-style (the tail loses it) for the other.  `thread-3.33.txt` is the body
as a person pastes it; `thread-3.33.eml` is the same body sent as a message: quoted-printable,
format=flowed (what Thunderbird sends), as saved from a mail client.

Usage: python3 tests/data/mail/make_fixtures.py   (from the repository root)
"""

from __future__ import annotations

import quopri
from pathlib import Path

HERE = Path(__file__).resolve().parent
DATA = HERE.parent
WIDTH = 72


def wrap_line(line: str, prefix: str, width: int = WIDTH, keep_prefix: bool = True) -> list[str]:
    """`prefix + line` broken at the last space before `width`, as a mail client does; the
    tail lines carry `prefix` again when keep_prefix, else start at column 0."""
    out: list[str] = []
    text = prefix + line
    tail_prefix = prefix if keep_prefix else ""
    while len(text) > width:
        cut = text.rfind(" ", len(tail_prefix) + 1, width + 1)
        while cut > 0 and text[cut - 1] == " ":
            cut -= 1  # break before a run of spaces, as clients drop trailing blanks
        if cut <= len(tail_prefix) + 1 or not text[:cut].strip(" >"):
            break
        out.append(text[:cut])
        text = tail_prefix + text[cut:].lstrip(" ")
    out.append(text)
    return out


def quote(text: str, prefix: str, wrap: bool, keep_prefix: bool = True) -> list[str]:
    lines: list[str] = []
    for line in text.splitlines():
        if not line:
            lines.append(prefix.rstrip())
        elif wrap:
            lines.extend(wrap_line(line, prefix, keep_prefix=keep_prefix))
        else:
            lines.append(prefix + line)
    return lines


def thread(first: str, second: str, wrap: bool = True) -> str:
    """A reply quoting a reply: the inner result at depth 2, the outer one at depth 1."""
    inner = quote(first, ">> ", wrap)
    if wrap:  # one client re-quoted a few inner lines with spaces between the marks
        inner = [
            ("> > " + line[3:])
            if i % 7 == 3 and line.startswith(">> ") and len(line) < WIDTH
            else line
            for i, line in enumerate(inner)
        ]
    outer = quote(second, "> ", wrap, keep_prefix=False)
    body = [
        "Hi Jan,",
        "",
        "On Sat, 21 Nov 2026 at 07:10, Jan Kara <jack@example.org> wrote:",
        "> On Fri 20-11-26 18:02:11, Alice Example wrote:",
        ">> I bisected the slowdown to the iversion change; these are from a",
        ">> RAM-backed loop device, ext4, 16 writer threads.",
        ">>",
        ">> Fio output (5.10.162 with revert):",
        ">>",
        *inner,
        ">>",
        ">> Thanks,",
        ">> Alice",
        ">",
        "> I cannot reproduce a difference here.  Same job on my box,",
        "> mounted with -o iversion:",
        ">",
        *outer,
        ">",
        "> Honza",
        "",
        "Both look like noise to me, I'll rerun with more repetitions.",
        "",
        "-- ",
        "Ted",
        "",
    ]
    return "\n".join(body)


def flowed(body: str) -> str:
    """format=flowed of a body: quote marks contiguous, long lines broken softly (the
    broken line ends in a space), lines starting with a space or `From ` space-stuffed."""
    out: list[str] = []
    for line in body.splitlines():
        depth = len(line) - len(line.lstrip(">"))
        content = line[depth:].removeprefix(" ")
        marks = ">" * depth
        if not content:
            out.append(marks)
            continue
        lead = marks + " " if depth else ""
        if content.startswith((" ", ">", "From ")) and not depth:
            lead = " "  # space-stuffing
        pieces = wrap_line(content, "", width=WIDTH - len(lead))
        for k, piece in enumerate(pieces):
            soft = " " if k < len(pieces) - 1 else ""
            out.append(lead + piece + soft)
    return "\n".join(out) + "\n"


def eml(body: str) -> str:
    headers = (
        "From: Ted Example <ted@example.org>\n"
        "To: Jan Kara <jack@example.org>\n"
        "Cc: linux-ext4@vger.example.org\n"
        "Subject: Re: [REGRESSION] ext4 random write slowdown with iversion\n"
        "Date: Sat, 21 Nov 2026 08:15:02 +0000\n"
        "Message-ID: <20261121081502.GA1234@example.org>\n"
        "MIME-Version: 1.0\n"
        "Content-Type: text/plain; charset=utf-8; format=flowed\n"
        "Content-Transfer-Encoding: quoted-printable\n"
        "\n"
    )
    encoded = quopri.encodestring(flowed(body).encode("utf-8")).decode("ascii")
    return headers + encoded


def main() -> None:
    out = DATA / "fio-3.33" / "out"
    first, second = (out / "randwrite-fsync.txt").read_text(), (out / "two-groups.txt").read_text()
    (HERE / "thread-3.33.txt").write_text(thread(first, second))
    # a flowed message carries the long lines whole; the reader's client breaks them softly
    (HERE / "thread-3.33.eml").write_text(eml(thread(first, second, wrap=False)))
    for version in ("2.16", "2.21"):
        old = DATA / f"fio-{version}" / "out"
        if (old / "randwrite-fsync.txt").exists() and (old / "randrw-libaio-direct.txt").exists():
            text = thread(
                (old / "randwrite-fsync.txt").read_text(),
                (old / "randrw-libaio-direct.txt").read_text(),
            )
            (HERE / f"thread-{version}.txt").write_text(text)


if __name__ == "__main__":
    main()
