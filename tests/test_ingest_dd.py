"""dd reader against real dd (coreutils 9.1) outputs and hand-made older forms
(tests/data/dd, see README.txt there): bytes and records must be what each command asked for,
and the time and rate agree with what dd printed."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from iolab.errors import IngestError
from iolab.ingest import dd
from iolab.ingest.detect import parse_text
from iolab.model.result import Result

DATA = Path(__file__).parent / "data" / "dd"
SI = {"": 1.0, "k": 1e3, "M": 1e6, "G": 1e9, "T": 1e12}
SUMMARY = re.compile(r"copied, (\S+) (?:s|seconds?), (?:([\d.]+) ([kMGT]?)B/s|Infinity B/s)")

CASES = [line.split("\t") for line in (DATA / "MANIFEST").read_text().splitlines()]


def read(name: str, text: str | None = None) -> list[Result]:
    if text is None:
        text = (DATA / f"{name}.txt").read_bytes().decode()  # keeps the `\r` of progress lines
    return [result for _, result in dd.find(text.splitlines(), name)]


def test_manifest_covers_the_forms() -> None:
    names = {row[0] for row in CASES}
    assert {"write-progress", "one-byte", "small-512", "read-partial", "zero-bytes"} <= names


@pytest.mark.parametrize("case", CASES, ids=lambda c: c[0])
def test_real_dd_reads_what_was_asked(case: list[str]) -> None:
    name, nbytes, records, operands = case
    text = (DATA / f"{name}.txt").read_bytes().decode()
    (result,) = read(name)
    assert result.tool == "dd" and result.format == "dd"
    m = result.metrics
    assert m["write.io_bytes"] == int(nbytes)
    full, partial = (int(x) for x in records.split("+"))
    assert m["write.total_ios"] == full + partial
    assert result.jobs[0].options["records_out"] == records
    # the last summary line is the result, not the progress lines before it
    seconds_text, rate, prefix = SUMMARY.findall(text)[-1]
    seconds = float(seconds_text)
    assert m["write.runtime_ms"] == pytest.approx(seconds * 1000)
    if int(nbytes):
        assert m["write.bw_bytes"] == pytest.approx(int(nbytes) / seconds)
        # dd rounds its rate to 2-3 digits and takes it from a finer clock than %g shows
        assert m["write.bw_bytes"] == pytest.approx(float(rate) * SI[prefix], rel=0.06)
    else:
        assert m["write.bw_bytes"] == 0
    # dd never says read or write: of=/dev/null is still reported as write (documented)
    if "of=/dev/null" in operands:
        assert not any(k.startswith("read.") for k in m)


def test_progress_lines_are_not_results() -> None:
    text = (DATA / "write-progress.txt").read_bytes().decode()
    assert text.count("\r") >= 2  # real status=progress output, several progress lines
    results = parse_text(text, "progress")
    assert len(results) == 1
    assert results[0].metrics["write.io_bytes"] == 128 * 2**20


@pytest.mark.parametrize(
    ("name", "nbytes", "seconds"),
    [
        ("old-8x-si", 1073741824, 2.50113),
        ("old-seconds", 1073741824, 2.50113),
        ("old-one-byte", 1, 1.2e-05),
        ("old-truncated", 8390656, 1.0),
    ],
)
def test_hand_made_old_forms(name: str, nbytes: int, seconds: float) -> None:
    (result,) = read(name)
    assert result.metrics["write.io_bytes"] == nbytes
    assert result.metrics["write.runtime_ms"] == pytest.approx(seconds * 1000)
    assert result.metrics["write.bw_bytes"] == pytest.approx(nbytes / seconds)


def test_infinity_rate_keeps_bytes_only() -> None:
    (result,) = read("old-infinity")
    assert result.metrics == {"write.io_bytes": 0.0, "write.total_ios": 0.0}


def test_summary_alone_and_command_operands() -> None:
    # inside a sentence it is not a summary line
    assert read("said", "dd said: 1073741824 bytes (1.1 GB, 1.0 GiB) copied, 2 s, 537 MB/s") == []
    (alone,) = read("alone", "1073741824 bytes (1.1 GB, 1.0 GiB) copied, 2 s, 537 MB/s\n")
    assert alone.metrics["write.runtime_ms"] == 2000
    real = (DATA / "write-4k-direct.txt").read_text()
    (result,) = read("cmd", f"# dd if=/dev/zero of=/mnt/f bs=4k count=4096 oflag=direct\n{real}")
    assert result.jobs[0].options["bs"] == "4k"
    assert result.jobs[0].options["oflag"] == "direct"


def test_two_quoted_runs_in_a_mail() -> None:
    first = (DATA / "write-1m-64.txt").read_text().splitlines()
    second = (DATA / "write-1m-fsync.txt").read_text().splitlines()
    mail = "\n".join(
        [
            "Without fsync:",
            *(f"> {line}" for line in first),
            "",
            "With conv=fsync:",
            *(f"> {line}" for line in second),
        ]
    )
    results = parse_text(mail, "mail")
    assert [r.metrics["write.io_bytes"] for r in results] == [64 * 2**20, 128 * 2**20]
    assert [(r.caption or "").rstrip(":") for r in results] == ["Without fsync", "With conv=fsync"]


def test_back_to_back_runs_without_command_lines() -> None:
    text = "".join((DATA / f"{n}.txt").read_text() for n in ("write-1m-64", "read-1m", "kb-1000"))
    results = read("loop", text)
    assert [r.metrics["write.io_bytes"] for r in results] == [64 * 2**20, 128 * 2**20, 1000]


FRAGMENTS = [
    "1+0 records in",
    "1+0 records out",
    "3 truncated records",
    "512 bytes copied, 0.000124543 s, 4.1 MB/s",
    "1 byte (1 B) copied, 1e-400 seconds, 1 kB/s",
    "99999999999999999999 bytes (1 ZB) copied, 1e308 s, 0 B/s",
    "9" * 400 + " bytes copied, 1 s, 1 B/s",
    "9" * 30 + "+0 records out",
    "0 bytes copied, nan s, Infinity B/s",
    "10 bytes copied, 3 s, 3 B/s",
    "dd if=/dev/zero of=x bs=1M count=1",
    "",
]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(st.sampled_from(FRAGMENTS), st.text(max_size=40)), max_size=12))
def test_any_input_gives_results_or_ingest_error(lines: list[str]) -> None:
    try:
        found = dd.find(lines, "fuzz")
    except IngestError:
        return
    for index, result in found:
        assert 0 <= index < len(lines)
        assert all(v == v and abs(v) != float("inf") for v in result.metrics.values())


@pytest.mark.skipif(shutil.which("dd") is None, reason="dd not installed")
def test_live_dd_run(tmp_path: Path) -> None:
    """Runs the machine's dd into a small file and reads back what was asked."""
    proc = subprocess.run(
        ["dd", "if=/dev/zero", f"of={tmp_path / 'f'}", "bs=64k", "count=48", "conv=fsync"],
        check=True,
        capture_output=True,
        text=True,
        env={"LC_ALL": "C", "PATH": "/usr/bin:/bin"},
    )
    (result,) = read("live", proc.stderr)
    assert result.metrics["write.io_bytes"] == 48 * 65536 == (tmp_path / "f").stat().st_size
    assert result.metrics["write.total_ios"] == 48
    assert result.metrics["write.runtime_ms"] > 0


LOCALES = Path(__file__).parent / "data" / "dd-locales"
LOCALE_CASES = [
    row.split("\t")
    for row in (LOCALES / "MANIFEST").read_text().splitlines()
    if not row.startswith("progress-error")
]
# The time as dd printed it: %g in the locale's number format, before its unit "s".
LOCAL_TIME = re.compile(r"[,，]\s*(\d+(?:[.,]\d+)?(?:e[-+]\d+)?) s[,，]")


def test_every_translated_language_has_real_fixtures() -> None:
    from iolab.ingest import dd_catalogue

    langs = {row[0].rsplit("-", 1)[0] for row in LOCALE_CASES}
    assert set(dd_catalogue.LANGUAGES) <= langs
    assert len(dd_catalogue.LANGUAGES) >= 5


@pytest.mark.parametrize("case", LOCALE_CASES, ids=lambda c: c[0])
def test_real_dd_in_other_languages(case: list[str]) -> None:
    name, nbytes, records, _env, _operands = case
    text = (LOCALES / f"{name}.txt").read_text()
    results = parse_text(text, name)
    assert len(results) == 1, text
    m = results[0].metrics
    assert m["write.io_bytes"] == int(nbytes)
    assert results[0].jobs[0].options["records_out"] == records
    seconds = float(LOCAL_TIME.findall(text)[-1].replace(",", "."))
    assert m["write.runtime_ms"] == pytest.approx(seconds * 1000)
    assert m["write.bw_bytes"] == pytest.approx(int(nbytes) / seconds)
    assert results[0].caption is None  # a records line is never a caption


@pytest.mark.parametrize("lang", ["C", "de"])
def test_progress_then_error_is_one_result(lang: str) -> None:
    """status=progress lines, then `dd: error writing …`, then the records and the summary of
    what was copied before the error: one result, the final summary."""
    text = (LOCALES / f"progress-error-{lang}.txt").read_bytes().decode()  # keeps the `\r`
    assert text.count("\r") >= 1 and "dd: " in text
    (result,) = parse_text(text, lang)
    last = text.strip().splitlines()[-1]
    assert result.metrics["write.io_bytes"] == int(last.split()[0])
    assert result.metrics["write.runtime_ms"] != 3000  # not the whole-second progress line


@pytest.mark.parametrize(
    ("line", "nbytes", "seconds"),
    [
        # forms quoted in issue 13, from other coreutils versions and pasting tools
        ("4034920448 Bytes (4,0 GB, 3,8 GiB) kopiert, 293,807 s, 13,7 MB/s", 4034920448, 293.807),
        ("5120000字节（5.1 MB，4.9 MiB）已复制，0.0313203 s，163 MB/s", 5120000, 0.0313203),
        ("1073741824 bytes (1,1 GB, 1,0 GiB) copied, 365,951 s, 2,9 MB/s", 1073741824, 365.951),
    ],
)
def test_variant_spacing_and_punctuation(line: str, nbytes: int, seconds: float) -> None:
    (result,) = read("variant", line)
    assert result.metrics["write.io_bytes"] == nbytes
    assert result.metrics["write.runtime_ms"] == pytest.approx(seconds * 1000)
