"""fio results pasted into mail: quote prefixes, re-wrapped lines, several results, captions.

The fixtures in tests/data/mail/ were built by make_fixtures.py from the real fio outputs; each
result found in a message must read exactly as the clean output file it was made from.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from iolab.ingest import fio_text, mail
from iolab.ingest.detect import parse_text
from iolab.model.result import Result

DATA = Path(__file__).parent / "data"
MAIL = DATA / "mail"
THREADS = sorted(MAIL.glob("thread-*.txt")) + sorted(MAIL.glob("thread-*.eml"))
# (inner result, outer result) each thread was made from: make_fixtures.py
SOURCES = {
    "3.33": ("randwrite-fsync.txt", "two-groups.txt"),
    "2.16": ("randwrite-fsync.txt", "randrw-libaio-direct.txt"),
    "2.21": ("randwrite-fsync.txt", "randrw-libaio-direct.txt"),
}


def _clean(version: str, name: str) -> Result:
    path = DATA / f"fio-{version}" / "out" / name
    ((_, result),) = fio_text.find(path.read_text().splitlines(), str(path))
    return result


@pytest.mark.parametrize("path", THREADS, ids=[p.name for p in THREADS])
def test_two_quoted_results_with_captions(path: Path) -> None:
    version = path.stem.removeprefix("thread-")
    results = parse_text(path.read_text(), str(path))
    assert [r.caption for r in results] == [
        "Fio output (5.10.162 with revert)",
        "mounted with -o iversion",
    ]
    for result, name in zip(results, SOURCES[version], strict=True):
        clean = _clean(version, name)
        assert result.source == str(path)
        assert result.tool_version == version
        assert result.metrics == clean.metrics
        assert [j.metrics for j in result.jobs] == [j.metrics for j in clean.jobs]
        directions = {k.split(".")[0] for k in result.metrics if k.endswith(".iops")}
        assert directions
        for ddir in directions:
            assert result.metrics[f"{ddir}.iops"] > 0
            assert result.metrics[f"{ddir}.bw_bytes"] > 0
            for p in ("p1", "p50", "p99", "p99.99"):
                assert f"{ddir}.clat_ns.{p}" in result.metrics


def test_fixture_really_is_quoted_and_wrapped() -> None:
    """Guard against a fixture that lost what it is meant to test."""
    lines = (MAIL / "thread-3.33.txt").read_text().splitlines()
    depths = {mail.quote_depth(line) for line in lines}
    assert {0, 1, 2} <= depths
    assert any(line.startswith("> > ") for line in lines)
    assert max(len(line) for line in lines) <= 72
    assert any(line.strip().endswith("=[") for line in lines)  # a wrapped percentile row
    eml = (MAIL / "thread-3.33.eml").read_text()
    assert "format=flowed" in eml and "=3D" in eml


def test_unquote_keeps_line_count_and_content() -> None:
    lines = ["> a", ">> b", "> > c", ">>>> d", ">   write: x", "plain", "", ">", "  > e"]
    out = mail.unquote(lines)
    assert out == ["a", "b", "c", "d", "  write: x", "plain", "", "", "e"]
    assert [mail.quote_depth(x) for x in lines] == [1, 2, 2, 4, 1, 0, 0, 1, 1]


@pytest.mark.parametrize(
    ("lines", "caption"),
    [
        (["Before:", "", "fio-3.33", "Starting 4 threads", "job: (groupid=0"], "Before"),
        (
            [
                "With the patch",
                "job: (g=0): rw=write, bs=(R) 4096B-4096B, (W)",
                "4096B-4096B, (T) 4096B-4096B, ioengine=psync, iodepth=1",
                "...",
                "x",
            ],
            "With the patch",
        ),
        (["  write: IOPS=1, BW=1MiB/s", "     | 99.99th=[  412]", "", "x"], None),
        (["On Sat, 21 Nov 2026 at 07:10, Jan <j@example.org> wrote:", "x"], None),
        (["-- ", "x"], None),
        (["samples=4", "x"], None),
        (["x"], None),
    ],
)
def test_caption_for(lines: list[str], caption: str | None) -> None:
    assert mail.caption_for(lines, len(lines) - 1) == caption


def test_message_text_decodes_quoted_printable_and_flowed() -> None:
    eml = (MAIL / "thread-3.33.eml").read_text()
    body = mail.message_text(eml)
    assert "Subject:" not in body and "=3D" not in body
    unwrapped = mail.unquote(body.splitlines())
    clean = (DATA / "fio-3.33" / "out" / "randwrite-fsync.txt").read_text().splitlines()
    header = next(line for line in clean if "(groupid=" in line)
    assert header in unwrapped  # the soft-broken header line is whole again
    assert mail.message_text("plain text\nFrom: nobody\n") == "plain text\nFrom: nobody\n"


@pytest.mark.parametrize(
    "declared",
    [
        "Content-Type: text/plain; charset=us-ascii",  # the robot's 2014 mails
        "Content-Type: text/plain; charset=utf-8\nContent-Transfer-Encoding: 8bit",
        "Content-Type: text/plain; charset=utf-8\nContent-Transfer-Encoding: 7bit",
        'Content-Type: text/plain; charset="iso-8859-1"\nContent-Transfer-Encoding: 8bit',
        "Content-Type: text/plain",
        "MIME-Version: 1.0",
    ],
)
def test_message_text_keeps_plus_minus_of_a_plain_saved_mail(declared: str) -> None:
    """A .txt saved with its headers is text already: its charset is not applied again
    (it turned every `±` into U+FFFD when the header said us-ascii or utf-8)."""
    row = "  20464297 ± 49%    +227.8%   67090730 ±  2%  cpuidle..usage"
    text = f"From: kernel test robot <oliver.sang@intel.com>\nSubject: s\n{declared}\n\n{row}\n"
    assert mail.message_text(text).splitlines() == [row]


def test_message_text_still_decodes_an_encoded_part_with_its_charset() -> None:
    text = (
        "From: a <a@example.org>\nSubject: s\nContent-Type: text/plain; charset=utf-8\n"
        "Content-Transfer-Encoding: quoted-printable\n\n 1.0 =C2=B1 3%  x=\n y\n"
    )
    assert mail.message_text(text).splitlines() == [" 1.0 ± 3%  x y"]


def test_a_real_robot_mail_saved_with_latin1_headers_reads_every_stddev() -> None:
    """The 2025 ext4 mail keeps its `charset="iso-8859-1"` / 8bit headers; stored as UTF-8."""
    from iolab.ingest.comparisons import find_comparisons

    path = DATA / "reports" / "lkp" / "2025-ext4-large-folio-aim7-raid0.txt"
    text = path.read_text()
    body = mail.message_text(text)
    assert "\ufffd" not in body and body.count("±") == text.count("±") > 100
    (t,) = find_comparisons(body, str(path))
    assert len(t.rows) == 129 and t.rows[0].base_stddev_pct == 33


def test_unflow_rejoins_soft_breaks_per_quote_depth() -> None:
    body = "> one \n> two\n>> three \n>> four\nfive\n-- \nsig"
    assert mail.unflow(body).splitlines() == ["> one two", "> > three four", "five", "-- ", "sig"]


def test_prose_between_results_in_one_unquoted_paste() -> None:
    first = (DATA / "fio-3.33" / "out" / "seqread.txt").read_text()
    second = (DATA / "fio-3.33" / "out" / "verify.txt").read_text()
    text = f"Baseline run on 6.6:\n\n{first}\nand on 6.7-rc1, same box:\n{second}\n"
    results = parse_text(text, "paste")
    assert [r.caption for r in results] == ["Baseline run on 6.6", "and on 6.7-rc1, same box"]
    assert results[0].metrics == _clean("3.33", "seqread.txt").metrics
    assert results[1].metrics == _clean("3.33", "verify.txt").metrics


def test_fio_json_quoted_in_a_mail_gets_its_caption() -> None:
    """JSON pasted into a reply is captioned like text results: by the line introducing it."""
    from pathlib import Path

    from iolab.ingest.detect import parse_text

    out = Path(__file__).parent / "data" / "fio-3.33" / "out"
    first = (out / "seqread.json").read_text().splitlines()
    second = (out / "randread-3jobs.json").read_text().splitlines()
    message = "\n".join(
        ["Hi,", "", "On Mon, Jane wrote:", "> Baseline on 6.1 (fio json):"]
        + [f"> {line}" for line in first]
        + ["", "> With the patch applied:"]
        + [f"> {line}" for line in second]
    )
    results = parse_text(message, "mail")
    assert [r.caption for r in results] == ["Baseline on 6.1 (fio json)", "With the patch applied"]
    assert [len(r.jobs) for r in results] == [1, 3]
