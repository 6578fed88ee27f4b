"""fio job files pasted into a mail as text (`[global]`, `key=value`, bare options).

A job file is a `[section]` line followed by option lines; blank lines and `;`/`#` comments
may sit between them, and it ends at the first line that is neither.  fio's own output never
starts a line with `[name]` followed by `key=value` lines, so this does not read results.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_SECTION = re.compile(r"^\[(?P<name>[^\]\s][^\]]{0,62})\]$")
_OPTION = re.compile(r"^(?P<key>[a-z_][a-z0-9_]*)(?:\s*=\s*(?P<value>.*\S)?)?$")
_COMMENT = re.compile(r"^[;#]")

Options = tuple[tuple[str, str | None], ...]


@dataclass(frozen=True)
class JobFile:
    first: int  # 1-based mail lines
    last: int
    sections: tuple[tuple[str, Options], ...]


def find(lines: list[str], numbers: list[int]) -> list[JobFile]:
    """Every job file in `lines` (un-quoted); `numbers[i]` is the mail line of `lines[i]`."""
    found: list[JobFile] = []
    i = 0
    while i < len(lines):
        head = _SECTION.match(lines[i].strip())
        if head is None or not _option_follows(lines, i + 1):
            i += 1
            continue
        sections: list[tuple[str, list[tuple[str, str | None]]]] = [(head.group("name"), [])]
        last = i
        j = i + 1
        while j < len(lines):
            text = lines[j].strip()
            section = _SECTION.match(text)
            option = _OPTION.match(text)
            if section is not None:
                sections.append((section.group("name"), []))
            elif option is not None:
                sections[-1][1].append((option.group("key"), option.group("value")))
            elif not text or _COMMENT.match(text):
                if not _more_follows(lines, j + 1, blank=not text):
                    break
            else:
                break
            if text:
                last = j
            j += 1
        found.append(JobFile(numbers[i], numbers[last], tuple((n, tuple(o)) for n, o in sections)))
        i = last + 1
    return found


def _option_follows(lines: list[str], at: int) -> bool:
    return at < len(lines) and _OPTION.match(lines[at].strip()) is not None


def _more_follows(lines: list[str], at: int, *, blank: bool) -> bool:
    """After a blank or a comment line: does the job file go on (another section or option)?
    After a comment only, a bare word is an option (`time_based`); after a blank line it may
    be the prose that follows the job, so only `key=value` or a section goes on."""
    while at < len(lines) and (not lines[at].strip() or _COMMENT.match(lines[at].strip())):
        blank = blank or not lines[at].strip()
        at += 1
    if at >= len(lines):
        return False
    text = lines[at].strip()
    option = _OPTION.match(text) is not None and ("=" in text or not blank)
    return _SECTION.match(text) is not None or option
