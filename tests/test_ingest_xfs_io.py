"""xfs_io reader against real xfs_io 6.1 outputs (tests/data/xfs_io, see generate.sh there):
the numbers read back must be the bytes and ops each command asked for, and agree with the
rounded figures xfs_io printed."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from iolab.errors import IngestError
from iolab.ingest import xfs_io
from iolab.ingest.detect import parse_text
from iolab.model.result import Result

DATA = Path(__file__).parent / "data" / "xfs_io"
UNITS = {"bytes": 1, "KiB": 2**10, "MiB": 2**20, "GiB": 2**30, "TiB": 2**40}


def manifest() -> list[tuple[str, list[str], list[int], list[int], str]]:
    rows = []
    for line in (DATA / "MANIFEST").read_text().splitlines():
        name, dirs, nbytes, ops, args = line.split("\t")
        rows.append(
            (
                name,
                dirs.split("+"),
                [int(b) for b in nbytes.split("+")],
                [int(o) for o in ops.split("+")],
                args,
            )
        )
    return rows


CASES = manifest()


def read(name: str, text: str | None = None) -> list[Result]:
    if text is None:
        text = (DATA / f"{name}.txt").read_text()
    return [result for _, result in xfs_io.find(text.splitlines(), name)]


def test_manifest_covers_both_forms() -> None:
    names = [row[0] for row in CASES]
    assert any(n.startswith("csv-") for n in names)
    assert any(n.startswith("pread") for n in names)
    assert len(CASES) >= 10


@pytest.mark.parametrize(
    "case", [c for c in CASES if not c[0].startswith("csv-")], ids=lambda c: c[0]
)
def test_normal_form_reads_what_was_asked(
    case: tuple[str, list[str], list[int], list[int], str],
) -> None:
    name, dirs, nbytes, ops, _ = case
    results = read(name)
    assert len(results) == len(dirs)
    text = (DATA / f"{name}.txt").read_text()
    printed = re.findall(r"ops; (\S+)(?: sec)? \(([\d.]+) (\w+)/sec and ([\d.]+) ops/sec\)", text)
    assert len(printed) == len(dirs)
    for result, d, b, o, (ptime, prate, punit, pops) in zip(
        results, dirs, nbytes, ops, printed, strict=True
    ):
        assert result.tool == "xfs_io" and result.format == "xfs_io"
        m = result.metrics
        assert m[f"{d}.io_bytes"] == b
        assert m[f"{d}.total_ios"] == o
        seconds = m[f"{d}.runtime_ms"] / 1000
        assert m[f"{d}.iops"] == pytest.approx(o / seconds)
        assert m[f"{d}.bw_bytes"] == pytest.approx(b / seconds)
        # printed figures: ops/sec to 4 decimals, the rate to 4 significant digits
        assert m[f"{d}.iops"] == pytest.approx(float(pops), abs=1e-4)
        assert m[f"{d}.bw_bytes"] == pytest.approx(float(prate) * UNITS[punit], rel=1e-3)
        # the printed time is truncated (0.NNNN sec or h:mm:ss.hh), never above the true one
        step = 0.01 if ":" in ptime else 1e-4
        parts = [float(p) for p in ptime.split(":")]
        shown = sum(v * 60**i for i, v in enumerate(reversed(parts)))
        assert shown - 1e-9 <= seconds < shown + step + 1e-9
        assert result.jobs[0].metrics == m
        assert result.jobs[0].options["requested_bytes"] == str(b)


@pytest.mark.parametrize("case", [c for c in CASES if c[0].startswith("csv-")], ids=lambda c: c[0])
def test_csv_form_reads_what_was_asked(
    case: tuple[str, list[str], list[int], list[int], str],
) -> None:
    name, dirs, nbytes, ops, args = case
    line = (DATA / f"{name}.txt").read_text().strip()
    fields = line.split(",")
    # with the command visible above it, the direction is the command's
    pasted = f"$ xfs_io {args}\n{line}\n"
    (result,) = read(name, pasted)
    d, b, o = dirs[0], nbytes[0], ops[0]
    assert result.format == "xfs_io-csv"
    m = result.metrics
    assert m[f"{d}.io_bytes"] == b and m[f"{d}.total_ios"] == o
    seconds = m[f"{d}.runtime_ms"] / 1000
    assert m[f"{d}.bw_bytes"] == pytest.approx(float(fields[3]), rel=1e-6)
    assert m[f"{d}.iops"] == pytest.approx(float(fields[4]), rel=1e-6)
    h, mi, s = (float(x) for x in fields[2].split(":"))
    assert h * 3600 + mi * 60 + s - 1e-9 <= seconds < h * 3600 + mi * 60 + s + 0.01
    # alone, the CSV line names no direction: documented default is write
    (alone,) = read(name)
    assert set(alone.metrics) == {k.replace(f"{d}.", "write.") for k in m}


def test_csv_block_takes_directions_from_the_command_in_order() -> None:
    w = (DATA / "csv-pwrite.txt").read_text().strip()
    r = (DATA / "csv-pread.txt").read_text().strip()
    text = f"# xfs_io -c 'pwrite -C 0 16m' -c 'pread -C -b 128k 0 16m' f\n{w}\n{r}\n"
    first, second = read("x", text)
    assert "write.iops" in first.metrics and "read.iops" in second.metrics


def test_detector_finds_every_xfs_io_result_in_order() -> None:
    text = "\n".join(
        [
            "pwrite, default block size:",
            (DATA / "pwrite-default.txt").read_text(),
            "and reading it back:",
            (DATA / "pread-b128k.txt").read_text(),
        ]
    )
    results = parse_text(text, "mail")
    assert [r.tool for r in results] == ["xfs_io", "xfs_io"]
    assert results[0].metrics["write.io_bytes"] == 16 * 2**20
    assert results[1].metrics["read.io_bytes"] == 64 * 2**20


def test_quoted_and_rewrapped_summary() -> None:
    head, stats = (DATA / "pwrite-dsync-long.txt").read_text().splitlines()
    cut = stats.index(" and ")
    text = f"> {head}\n> {stats[:cut]}\n> {stats[cut + 1 :]}\n"
    (result,) = parse_text(text, "mail")
    (direct,) = read("pwrite-dsync-long")
    assert result.metrics == direct.metrics


def test_old_xfsprogs_zero_fraction_uses_ops_per_second() -> None:
    # old xfsprogs printed the fraction of the time as 0: duration must come from ops/sec
    text = (
        "wrote 1073741824/1073741824 bytes at offset 0\n"
        "1 GiB, 262144 ops; 0:02:27.00 (6.951 MiB/sec and 1779.3791 ops/sec)\n"
    )
    (result,) = read("old", text)
    assert result.metrics["write.runtime_ms"] == pytest.approx(262144 / 1779.3791 * 1000)
    assert result.metrics["write.runtime_ms"] / 1000 > 147.0


def test_zero_duration_keeps_bytes_without_rates() -> None:
    stats = "4 KiB, 1 ops; 0.0000 sec (inf EiB/sec and inf ops/sec)"
    text = f"read 4096/4096 bytes at offset 0\n{stats}\n"
    (result,) = read("zero", text)
    assert result.metrics == {"read.io_bytes": 4096.0, "read.total_ios": 1.0}


def test_summary_without_statistics_line_is_an_ingest_error() -> None:
    with pytest.raises(IngestError, match="line 2: xfs_io 'wrote'"):
        xfs_io.find(["intro", "wrote 4096/4096 bytes at offset 0", "something else"], "f")


FRAGMENTS = [
    "wrote 4096/4096 bytes at offset 0",
    "read 1/2 bytes at offset 9",
    "4 KiB, 1 ops; 0.0001 sec (39.062 MiB/sec and 10000.0000 ops/sec)",
    "4 KiB, 1 ops; 0:00:00.00 (nan bytes/sec and -nan ops/sec)",
    "1048576,256,0:00:00.00,194396737.115,47460.141",
    "0,0,0:00:00.00,inf,inf",
    "9" * 400 + ",1,0:00:00.00,1.0,1.0",
    "1," + "9" * 400 + ",0:00:00.00,1.0,1.0",
    "wrote " + "9" * 400 + "/1 bytes at offset 0",
    "$ xfs_io -c 'pread -C 0 1m' f",
    "",
    "garbage ,,, 1:2:3",
]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(st.sampled_from(FRAGMENTS), st.text(max_size=40)), max_size=12))
def test_any_input_gives_results_or_ingest_error(lines: list[str]) -> None:
    try:
        found = xfs_io.find(lines, "fuzz")
    except IngestError:
        return
    for index, result in found:
        assert 0 <= index < len(lines)
        assert result.tool == "xfs_io"


@pytest.mark.skipif(shutil.which("xfs_io") is None, reason="xfs_io not installed")
def test_live_xfs_io_run(tmp_path: Path) -> None:
    """Runs the machine's xfs_io on a small file and reads back what was asked."""
    target = tmp_path / "f"
    out = subprocess.run(
        ["xfs_io", "-f", "-c", "pwrite -W -b 64k 0 3m", "-c", "pread -C -b 16k 0 3m", str(target)],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    text = f"xfs_io -c 'pwrite -W -b 64k 0 3m' -c 'pread -C -b 16k 0 3m'\n{out}"
    first, second = read("live", text)
    assert first.metrics["write.io_bytes"] == 3 * 2**20
    assert first.metrics["write.total_ios"] == 48
    assert second.format == "xfs_io-csv"
    assert second.metrics["read.io_bytes"] == 3 * 2**20
    assert second.metrics["read.total_ios"] == 192
