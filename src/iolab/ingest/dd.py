"""Reader for GNU dd transfer summaries, every coreutils form, in every language coreutils
translates them to:

    64+0 records in
    64+0 records out
    67108864 bytes (67 MB, 64 MiB) copied, 0.065432 s, 1.0 GB/s      coreutils >= 8.24
    67108864 bytes (67 MB) copied, 0.065432 s, 1.0 GB/s              8.x before 8.24
    67108864 bytes (67 MB) copied, 0.065432 seconds, 1.0 GB/s        older ("1 second")
    512 bytes copied, 0.000124543 s, 4.1 MB/s                        no prefix to show
    1 byte copied, 3.6718e-05 s, 27.2 kB/s                           time is printed with %g
    67108864 Bytes (67 MB, 64 MiB) kopiert, 0,0654 s, 1,0 GB/s       LANG=de_DE.UTF-8

The translated forms are not typed in here: they are the msgstr templates of coreutils'
catalogues (ingest.dd_catalogue, generated from the installed coreutils.mo files), turned into
patterns.  Lines are compared after Unicode NFKC normalisation (full-width `（，）` become
`(,)`) with spaces optional, so a translator's or a pasting tool's spacing does not matter.
The time is printed with %g in the locale's number format, so `365,951 s` (decimal comma)
is read as 365.951 s; the comma that separates fields is always followed by a space.

`status=progress` writes the same line every second, `\\r`-separated and with whole seconds,
before the records lines; those are not results.  A summary is the one after `records out`
(or standing alone, with nothing that marks it as progress: a progress line is followed by
another one, by the records lines or by a `dd: error …` diagnostic).

dd does not say whether it measured reading or writing: what it reports is the bytes it
wrote to `of=` — even `of=/dev/null` — so the metrics are always `write.*`.  The rate dd
prints is rounded to 2–3 digits, so bandwidth is recomputed as bytes / seconds.
"""

from __future__ import annotations

import math
import re
import unicodedata
from functools import lru_cache

from iolab.ingest import dd_catalogue
from iolab.model.result import Job, Result

_SECONDS = r"[-+]?(?:\d+(?:[.,]\d*)?|[.,]\d+)(?:[eE][-+]?\d+)?|inf|nan|-nan"
# dd's own (C locale) msgids, past and present; the translations come from the catalogue.
_C_SUMMARY = ("%jd byte copied, %s, %s", "%jd bytes copied, %s, %s")
_C_SUMMARY_SI = ("%jd bytes (%s) copied, %s, %s", "%jd byte (%s) copied, %s, %s")
_C_SUMMARY_SI_IEC = ("%jd bytes (%s, %s) copied, %s, %s",)
_C_RECORDS = ("%jd+%jd records in\n%jd+%jd records out\n",)
_C_TRUNCATED = ("%jd truncated record\n", "%jd truncated records\n")
_INT = re.compile(r"%(?:<PRIdMAX>|jd|lu|ld|\"PRIdMAX\"|\d\$s)")
_COMMAND_RE = re.compile(r"(?:^|[\s$#>])dd((?:\s+\w+=\S+)+)")
_DIAGNOSTIC = re.compile(r"dd: ")  # dd's error messages start with its name, in any language
_LOOKBACK = 3  # lines above `records in` searched for the dd command line


def _norm(text: str) -> str:
    return unicodedata.normalize("NFKC", text).strip()


def _pattern(template: str, fields: tuple[str, ...]) -> str:
    """A printf template of dd as an anchored regex; the %s conversions get `fields` in order."""
    template = _INT.sub("\x00", _norm(template).replace("%s", "\x01"))
    out: list[str] = []
    strings = iter(fields)
    for ch in template:
        if ch == "\x00":
            out.append(r"(?P<int>\d{1,20})" if "(?P<int>" not in "".join(out) else r"\d{1,20}")
        elif ch == "\x01":
            out.append(next(strings))
        elif ch.isspace():
            if not out or out[-1] != r"\s*":
                out.append(r"\s*")
        else:
            out.append(re.escape(ch))
    return "".join(out)


_HUMAN = r"[^()]*?"
_TIME = rf"(?P<seconds>{_SECONDS})\s*(?P<unit>[^\W\d_]+)"
_RATE = r"(?P<rate>\S.*?)"


@lru_cache(maxsize=1)
def _summary_patterns() -> tuple[re.Pattern[str], ...]:
    forms = (
        (_C_SUMMARY + dd_catalogue.SUMMARY, (_TIME, _RATE)),
        (_C_SUMMARY_SI + dd_catalogue.SUMMARY_SI, (_HUMAN, _TIME, _RATE)),
        (_C_SUMMARY_SI_IEC + dd_catalogue.SUMMARY_SI_IEC, (_HUMAN, _HUMAN, _TIME, _RATE)),
    )
    patterns = {
        _pattern(template, fields) + r"\Z" for templates, fields in forms for template in templates
    }
    return tuple(re.compile(p.replace("(?P<int>", "(?P<bytes>", 1)) for p in sorted(patterns))


@lru_cache(maxsize=1)
def _records_patterns() -> tuple[tuple[re.Pattern[str], ...], tuple[re.Pattern[str], ...]]:
    ins: set[str] = set()
    outs: set[str] = set()
    for template in _C_RECORDS + dd_catalogue.RECORDS:
        first, second = template.strip("\n").split("\n")[:2]
        for line, into in ((first, ins), (second, outs)):
            pair = _INT.pattern + r"\+" + _INT.pattern
            into.add(_pattern(re.sub(pair, "%s", line), (_RECORDS_PAIR,)))
    return (
        tuple(re.compile(p + r"\Z") for p in sorted(ins)),
        tuple(re.compile(p + r"\Z") for p in sorted(outs)),
    )


_RECORDS_PAIR = r"(?P<full>\d{1,20})\+(?P<partial>\d{1,20})"


@lru_cache(maxsize=1)
def _truncated_patterns() -> tuple[re.Pattern[str], ...]:
    templates = _C_TRUNCATED + dd_catalogue.TRUNCATED
    return tuple(re.compile(_pattern(t.strip("\n"), ()) + r"\Z") for t in sorted(set(templates)))


def _summary(text: str) -> re.Match[str] | None:
    if "/s" not in text:
        return None  # every form ends in a rate (`… B/s`): a cheap first test
    text = _norm(text)
    for pattern in _summary_patterns():
        match = pattern.match(text)
        if match:
            return match
    return None


def _records(text: str, kind: str) -> re.Match[str] | None:
    if "+" not in text:
        return None
    ins, outs = _records_patterns()
    text = _norm(text)
    for pattern in ins if kind == "in" else outs:
        match = pattern.match(text)
        if match:
            return match
    return None


def _truncated(text: str) -> bool:
    text = _norm(text)
    return bool(text) and any(p.match(text) for p in _truncated_patterns())


def is_output(line: str) -> bool:
    """True for a line dd prints (records, truncated records, a summary), in any language."""
    text = line.strip()
    return bool(_records(text, "in") or _records(text, "out") or _summary(text) or _truncated(text))


def _seconds(text: str) -> float:
    return float(text.replace(",", "."))


def find(lines: list[str], source: str) -> list[tuple[int, Result]]:
    """Every dd summary in `lines`, with the index of its first line."""
    found: list[tuple[int, Result]] = []
    stripped = [line.strip() for line in lines]
    for index, text in enumerate(stripped):
        match = _summary(text)
        if match is None:
            continue
        records = _records_above(stripped, index)
        if records is None and _is_progress(stripped, index, match):
            continue
        start = records[0] if records else index
        found.append((start, _result(stripped, start, match, records, source)))
    return found


def _records_above(lines: list[str], index: int) -> tuple[int, str, str] | None:
    """(index of `records in`, records in, records out) just above a summary, if there."""
    above = index - 1
    if above >= 0 and _truncated(lines[above]):
        above -= 1
    if above < 1:
        return None
    out = _records(lines[above], "out")
    before = _records(lines[above - 1], "in")
    if out is None or before is None:
        return None
    return (
        above - 1,
        f"{before.group('full')}+{before.group('partial')}",
        f"{out.group('full')}+{out.group('partial')}",
    )


def _is_progress(lines: list[str], index: int, match: re.Match[str]) -> bool:
    """A status=progress line: whole seconds, and followed by more progress, the records or a
    `dd: …` diagnostic (an error ends the copy; the records and the real summary follow)."""
    if not match.group("seconds").isdigit():
        return False
    for text in lines[index + 1 :]:
        if not text:
            continue
        return bool(_summary(text) or _records(text, "in") or _DIAGNOSTIC.match(text))
    return False


def _result(
    lines: list[str],
    start: int,
    match: re.Match[str],
    records: tuple[int, str, str] | None,
    source: str,
) -> Result:
    total = int(match.group("bytes"))
    metrics = {"write.io_bytes": float(total)}
    seconds = _seconds(match.group("seconds"))
    if math.isfinite(seconds * 1000.0) and seconds > 0:
        metrics["write.runtime_ms"] = seconds * 1000.0
        metrics["write.bw_bytes"] = total / seconds
    options: dict[str, str] = {}
    if records is not None:
        _, records_in, records_out = records
        options["records_in"] = records_in
        options["records_out"] = records_out
        full, partial = (int(part) for part in records_out.split("+"))
        metrics["write.total_ios"] = float(full + partial)
        options.update(_operands(lines, start))
    job = Job(name="dd", metrics=dict(metrics), options=options)
    return Result(tool="dd", format="dd", source=source, metrics=metrics, jobs=[job])


def _operands(lines: list[str], start: int) -> dict[str, str]:
    """The operands (bs=, count=, oflag= ...) of a dd command line just above the records."""
    for back in range(start - 1, max(start - 1 - _LOOKBACK, -1), -1):
        command = _COMMAND_RE.search(lines[back])
        if command:
            pairs = (word.split("=", 1) for word in command.group(1).split())
            return {key: value for key, value in pairs}
    return {}
