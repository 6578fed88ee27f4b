"""Regression threads as people write them (issue 18, part 4): a result quoted again in each
reply is one result; each pasted command's output is its own result; short bullet captions;
users' one-line-per-case rows; fio's t/io_uring output; and two pasted results compared by
their captions.  The seeds are tests/data/threads (SOURCES.md says where each comes from)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from iolab.cli.main import cli
from iolab.ingest.detect import parse_text
from iolab.store import open_store

THREADS = Path(__file__).parent / "data" / "threads"
OUT = THREADS / "out"


def iolab(*args: str, input: str | None = None) -> Result:
    return CliRunner().invoke(cli, list(args), input=input, env={"COLUMNS": "250"})


def _direction_line(name: str) -> str:
    """The real `write: IOPS=…` line of one of the seed outputs."""
    (line,) = [x for x in (OUT / name).read_text().splitlines() if "write: IOPS=" in x]
    return line


def test_iversion_thread_is_two_results_not_six() -> None:
    text = (THREADS / "iversion.txt").read_text()
    assert text.count("write: IOPS=") == 6  # two runs, each quoted at depth 1 and 2
    results = parse_text(text, "iversion.txt")
    assert [(r.caption, r.quote_levels) for r in results] == [
        ("With -o iversion", [0, 1, 2]),
        ("With -o noiversion", [0, 1, 2]),
    ]
    assert [r.metrics["write.iops"] for r in results] == [219000.0, 230000.0]
    assert [r.metrics["write.runtime_ms"] for r in results] == [3040.0, 3047.0]


def test_iversion_thread_imports_two_samples(tmp_path: Path) -> None:
    db = str(tmp_path / "s.db")
    done = iolab("--db", db, "import", "--label", "iv", str(THREADS / "iversion.txt"))
    assert done.exit_code == 0, done.output
    assert done.stdout.strip() == "imported 2 results from 1 files as run 1 (label iv)"
    store = open_store(db)
    try:
        samples = store.samples(run_id=1, with_jobs=False, with_histograms=False)
    finally:
        store.close()
    assert sorted((s.caption, s.metrics["write.iops"]) for s in samples) == [
        ("With -o iversion", 219000.0),
        ("With -o noiversion", 230000.0),
    ]


def test_same_figures_at_one_depth_stay_two_results() -> None:
    """A run pasted twice unquoted is not known to be one run: both are kept."""
    body = (OUT / "iversion-on.txt").read_text()
    results = parse_text(f"first:\n\n{body}\nagain:\n\n{body}", "twice")
    assert [r.quote_levels for r in results] == [[0], [0]]


def test_two_grepped_fio_commands_are_two_results() -> None:
    on, off = _direction_line("iversion-on.txt"), _direction_line("iversion-off.txt")
    text = (
        "$ fio --name=a --rw=randwrite --bs=4k --size=64M | grep -i IOPS\n"
        f"{on}\n"
        "$ fio --name=b --rw=randwrite --bs=4k --size=64M | grep -i IOPS\n"
        f"{off}\n"
    )
    results = parse_text(text, "grep")
    assert [r.metrics["write.iops"] for r in results] == [219000.0, 230000.0]
    assert [r.metrics["write.bw_bytes"] for r in results] == [856 * 2**20, 899 * 2**20]


def test_short_bullet_captions_are_read() -> None:
    results = parse_text((THREADS / "nodelalloc.txt").read_text(), "nodelalloc")
    assert [r.caption for r in results] == ["w/o", "w/"]
    assert [round(r.metrics["write.iops"], 4) for r in results] == [88234.1755, 100798.8341]


def test_case_rows_take_their_label_as_caption() -> None:
    rows = "bs=4k    IOPS=11.1k, BW=43.2MiB/s\nbs=64k   IOPS=3081, BW=193MiB/s\n"
    command = "$ for bs in 4k 64k; do fio --name=t --rw=randwrite --bs=$bs | grep IOPS; done\n"
    results = parse_text(f"{command}\nOn 6.12:\n\n{rows}", "rows")
    assert [(r.caption, r.tool) for r in results] == [
        ("On 6.12: bs=4k", "fio"),
        ("On 6.12: bs=64k", "fio"),
    ]
    assert results[0].metrics == {"write.iops": 11100.0, "write.bw_bytes": 43.2 * 2**20}
    assert results[1].metrics == {"write.iops": 3081.0, "write.bw_bytes": 193 * 2**20}
    # nothing names a direction: fio's `mixed` (all directions), never a guess
    (alone,) = parse_text("bs=4k    IOPS=11.1k, BW=43.2MiB/s\n", "rows")
    assert sorted(alone.metrics) == ["mixed.bw_bytes", "mixed.iops"]


# Jens Axboe, "brd: mark as nowait compatible" (the stable backport's commit message, 2023):
# t/io_uring on /dev/ram0 before and after, as the mail pasted it.
IO_URING = """\
Before:

submitter=0, tid=453, file=/dev/ram0, node=-1
polled=0, fixedbufs=1/0, register_files=1, buffered=0, QD=128
Engine=io_uring, sq_ring=128, cq_ring=128
IOPS=440.03K, BW=1718MiB/s, IOS/call=32/31
IOPS=428.96K, BW=1675MiB/s, IOS/call=32/32
IOPS=442.59K, BW=1728MiB/s, IOS/call=32/31
IOPS=419.65K, BW=1639MiB/s, IOS/call=32/32
IOPS=426.82K, BW=1667MiB/s, IOS/call=32/31

and after:

submitter=0, tid=354, file=/dev/ram0, node=-1
polled=0, fixedbufs=1/0, register_files=1, buffered=0, QD=128
Engine=io_uring, sq_ring=128, cq_ring=128
IOPS=3.37M, BW=13.15GiB/s, IOS/call=32/31
IOPS=3.45M, BW=13.46GiB/s, IOS/call=32/31
IOPS=3.43M, BW=13.42GiB/s, IOS/call=32/32
IOPS=3.43M, BW=13.39GiB/s, IOS/call=32/31
IOPS=3.43M, BW=13.38GiB/s, IOS/call=32/31

or about an 8x in difference.
"""


def test_io_uring_runs_are_read_with_their_captions() -> None:
    before, after = parse_text(IO_URING, "brd")
    assert (before.tool, before.caption, after.caption) == ("t/io_uring", "Before", "and after")
    assert before.metrics["read.iops"] == pytest.approx(
        (440.03 + 428.96 + 442.59 + 419.65 + 426.82) * 1000 / 5
    )
    assert before.metrics["read.iops_max"] == 442590.0
    assert before.metrics["read.runtime_ms"] == 5000.0
    # `13.15GiB/s` is t/io_uring's MiB/s figure divided by 1000: 3.37M 4 KiB reads a second
    # are 13164 MiB/s, which it prints as 13.16 — read as 13150 MiB/s, not 13.15 * 1024.
    assert after.metrics["read.bw_bytes"] == pytest.approx(
        (13.15 + 13.46 + 13.42 + 13.39 + 13.38) * 1000 / 5 * 2**20
    )
    assert after.metrics["read.iops"] / (after.metrics["read.bw_bytes"] / 4096) == pytest.approx(
        1.0, abs=0.01
    )


def test_io_uring_maximum_line_ends_a_run() -> None:
    text = (
        "IOPS=4.99M, BW=2.44GiB/s, IOS/call=32/31\n"
        "IOPS=5.02M, BW=2.45GiB/s, IOS/call=32/32\n"
        "Exiting on timeout\n"
        "Maximum IOPS=5.03M\n"
    )
    (result,) = parse_text(text, "max")
    assert result.metrics["read.iops_max"] == 5030000.0
    assert result.metrics["read.iops"] == pytest.approx(5005000.0)


def test_parse_json_keeps_every_results_tool(tmp_path: Path) -> None:
    mixed = tmp_path / "mixed.txt"
    dd_line = "1073741824 bytes (1.1 GB, 1.0 GiB) copied, 2.5 s, 429 MB/s"
    mixed.write_text(
        (THREADS / "nodelalloc.txt").read_text()
        + "\nfio:\n\n"
        + (OUT / "iversion-on.txt").read_text()
        + "\ndd:\n\n"
        + dd_line
        + "\n\n"
        + IO_URING
    )
    done = iolab("parse", "--json", str(mixed))
    assert done.exit_code == 0, done.output
    tools = [r["tool"] for r in json.loads(done.stdout)]
    assert tools == ["xfs_io", "xfs_io", "fio", "dd", "t/io_uring", "t/io_uring"]


def test_two_captions_one_sample_each_verdict_not_known(tmp_path: Path) -> None:
    db = str(tmp_path / "s.db")
    done = iolab("--db", db, "import", "--label", "nod", str(THREADS / "nodelalloc.txt"))
    assert done.exit_code == 0, done.output
    shown = iolab("--db", db, "compare", "label:nod/caption=w/o", "label:nod/caption=w/")
    assert shown.exit_code == 0, shown.output
    lines = shown.stdout.splitlines()
    at = next(i for i, x in enumerate(lines) if x.startswith("write.iops"))
    row = lines[at + 1]  # side B's row under the metric's name
    assert "+14.2%" in row and row.rstrip().endswith("inconclusive")
    assert (
        "write.iops: 1 vs 1 samples can never reach p <= 0.05 (smallest possible p 1); "
        "need >= 4 per side" in shown.stdout
    )
    missing = iolab("--db", db, "compare", "label:nod/caption=w/o", "label:nod/caption=with")
    assert missing.exit_code == 2
    assert "captions there: 'w/', 'w/o'" in missing.stderr
