"""Real-world pasted forms (issue 13): one fio run written in two forms, a direction line
re-flowed by a mail client, group summaries pasted alone, and the captions people write
around results.  The inputs are real fio/dd outputs of this machine (tests/data/fio-two-forms,
tests/data/fio-3.33, tests/data/dd-locales) arranged by tests/data/mail/make_corpus.py; every
expected number is read from the untouched output, not typed in."""

from __future__ import annotations

from pathlib import Path

import pytest

from iolab.ingest import fio_terse, fio_text
from iolab.ingest.detect import parse_source, parse_text

DATA = Path(__file__).parent / "data"
TWO = DATA / "fio-two-forms"
CORPUS = DATA / "mail" / "corpus"
FIO = DATA / "fio-3.33" / "out"


FORMS = ("terse-normal", "normal-terse")


@pytest.mark.parametrize(
    "name", [f"{job}.{form}" for job in ("two-jobs", "grouped") for form in FORMS]
)
def test_one_run_in_two_forms_is_one_result(name: str) -> None:
    text = (TWO / f"{name}.txt").read_text()
    (result,) = parse_text(text, name)
    lines = text.splitlines()
    ((_, terse),) = fio_terse.find(lines, name)
    ((_, normal),) = fio_text.find(lines, name)
    assert [j.name for j in result.jobs] == [j.name for j in terse.jobs]
    for key, value in terse.metrics.items():
        if key.endswith((".iops", ".bw_bytes", ".io_bytes", ".runtime_ms")):
            assert result.metrics[key] == value  # terse: not rounded to 4 figures
    for key, value in normal.metrics.items():
        if "_ns." in key:
            assert result.metrics[key] == value  # text: ns, not whole µs
    assert result.tool_version == "3.33"


def test_two_forms_of_two_runs_stay_two() -> None:
    first = (TWO / "two-jobs.terse-normal.txt").read_text()
    second = (TWO / "grouped.normal-terse.txt").read_text()
    results = parse_text(first + "\n" + second, "both")
    assert [len(r.jobs) for r in results] == [2, 1]


def test_direction_line_reflowed_mid_line() -> None:
    text = (CORPUS / "reflow-direction.txt").read_text()
    assert "\n> 2026   write: IOPS=" in text
    (result,) = parse_text(text, "reflow")
    (original,) = parse_source(str(FIO / "randwrite-3jobs-group.txt"))
    for key in ("write.iops", "write.bw_bytes", "write.io_bytes", "write.clat_ns.mean"):
        assert result.metrics[key] == original.metrics[key]
    assert result.caption == "Here is the run with the patch"


def test_direction_line_lost_falls_back_to_group_summary() -> None:
    text = (FIO / "randwrite-3jobs-group.txt").read_text()
    broken = text.replace("write: IOPS=", "write: IOPS  =", 1)  # unreadable direction line
    (result,) = parse_text(broken, "broken")
    (original,) = parse_text(text, "original")
    assert result.metrics["write.bw_bytes"] == pytest.approx(
        original.metrics["write.bw_bytes"], rel=0.001
    )


def test_group_summaries_pasted_alone_are_separate_results() -> None:
    results = parse_source(str(CORPUS / "group-only.txt"))
    assert [r.caption for r in results] == ["RAID10", "RAID5", "RAID0"]
    sources = ["randwrite-3jobs-group", "seqread", "two-groups"]
    keys = ["write.bw_bytes", "read.bw_bytes", "write.bw_bytes"]
    for result, source, key in zip(results, sources, keys, strict=True):
        (full,) = parse_source(str(FIO / f"{source}.txt"))
        ddir = key.split(".")[0]
        assert {k.split(".")[0] for k in result.metrics} == {ddir}
        # group lines print 4 significant figures; the job blocks are finer
        for metric in ("bw_bytes", "io_bytes"):
            plain = full.metrics.get(f"{ddir}.{metric}")
            expected = plain or full.metrics[f"group0.{ddir}.{metric}"]
            assert result.metrics[f"{ddir}.{metric}"] == pytest.approx(expected, rel=0.003)


def test_markdown_and_short_titles_caption_results() -> None:
    results = parse_source(str(CORPUS / "captions.md"))
    assert [r.tool for r in results] == ["fio", "fio", "fio", "dd", "dd"]
    assert [r.caption for r in results] == [
        "ext4, sequential read",
        "xfs random writes",
        "Btrfs, two groups",
        "RAID10",
        None,  # right after the first dd's lines: `80+0 Datensätze ein` is not a caption
    ]
    assert [r.metrics["write.io_bytes"] for r in results[3:]] == [80 * 65536] * 2
