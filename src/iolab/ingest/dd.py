"""Reader for GNU dd transfer summaries, every coreutils form (C locale):

    64+0 records in
    64+0 records out
    67108864 bytes (67 MB, 64 MiB) copied, 0.065432 s, 1.0 GB/s      coreutils >= 8.24
    67108864 bytes (67 MB) copied, 0.065432 s, 1.0 GB/s              8.x before 8.24
    67108864 bytes (67 MB) copied, 0.065432 seconds, 1.0 GB/s        older ("1 second")
    512 bytes copied, 0.000124543 s, 4.1 MB/s                        no prefix to show
    1 byte copied, 3.6718e-05 s, 27.2 kB/s                           time is printed with %g

`status=progress` writes the same line every second, `\\r`-separated and with whole seconds,
before the records lines; those are not results.  A summary is the one after `records out`
(or standing alone, with nothing that marks it as progress).

dd does not say whether it measured reading or writing: what it reports is the bytes it
wrote to `of=` — even `of=/dev/null` — so the metrics are always `write.*`.  The rate dd
prints is rounded to 2–3 digits, so bandwidth is recomputed as bytes / seconds.
"""

from __future__ import annotations

import math
import re

from iolab.model.result import Job, Result

_RECORDS_RE = re.compile(r"(\d{1,20})\+(\d{1,20}) records (in|out)\Z")
_TRUNCATED_RE = re.compile(r"\d+ truncated records?\Z")
_SECONDS = r"(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?|inf|nan|-nan"
_SUMMARY_RE = re.compile(
    rf"(?P<bytes>\d{{1,20}}) bytes? (?:\((?P<human>[^)]*)\) )?copied, "
    rf"(?P<seconds>{_SECONDS}) (?P<unit>s|seconds?), (?P<rate>\S+(?: \S+)?)\Z"
)
_COMMAND_RE = re.compile(r"(?:^|[\s$#>])dd((?:\s+\w+=\S+)+)")
_LOOKBACK = 3  # lines above `records in` searched for the dd command line


def find(lines: list[str], source: str) -> list[tuple[int, Result]]:
    """Every dd summary in `lines`, with the index of its first line."""
    found: list[tuple[int, Result]] = []
    stripped = [line.strip() for line in lines]
    for index, text in enumerate(stripped):
        match = _SUMMARY_RE.match(text)
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
    if above >= 0 and _TRUNCATED_RE.match(lines[above]):
        above -= 1
    if above < 1:
        return None
    out = _RECORDS_RE.match(lines[above])
    before = _RECORDS_RE.match(lines[above - 1])
    if out is None or out.group(3) != "out" or before is None or before.group(3) != "in":
        return None
    return above - 1, f"{before.group(1)}+{before.group(2)}", f"{out.group(1)}+{out.group(2)}"


def _is_progress(lines: list[str], index: int, match: re.Match[str]) -> bool:
    """A status=progress line: whole seconds, and followed by more progress or the records."""
    if not match.group("seconds").isdigit():
        return False
    for text in lines[index + 1 :]:
        if not text:
            continue
        records = _RECORDS_RE.match(text)
        return bool(_SUMMARY_RE.match(text)) or bool(records and records.group(3) == "in")
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
    seconds = float(match.group("seconds"))
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
