"""fio normal text against the JSON fio wrote in the same run, for every fio generation present.

The JSON side is read raw (json.load), so these tests do not lean on the JSON reader; one test
also compares the two readers once both exist.  Tolerances are the rounding of the text form:
fio prints IOPS and bandwidth with 3–4 significant digits (truncating), latency means with two
decimals and percentiles as integers in the unit it names.
"""

from __future__ import annotations

import importlib.util
import json
import math
from pathlib import Path
from typing import Any

import pytest

from iolab.errors import IngestError
from iolab.ingest import fio_text
from iolab.model.result import Result

DATA = Path(__file__).parent / "data"
VERSIONS = [d.name.removeprefix("fio-") for d in sorted(DATA.glob("fio-*")) if (d / "out").is_dir()]


def _same_run(out: Path) -> bool:
    """Text and JSON come from one fio run: fio-generate.sh says `same_run=yes` in
    generated.txt; fio-3.33/generate.sh always writes both forms at once."""
    info = out / "generated.txt"
    if info.exists():
        return "same_run=yes" in info.read_text()
    return (out.parent / "generate.sh").exists()


def _pairs() -> list[tuple[str, Path, Path]]:
    """(version, NAME.txt, NAME.json) written by one fio run."""
    pairs = []
    for version in VERSIONS:
        out = DATA / f"fio-{version}" / "out"
        if not _same_run(out):
            continue
        for text in sorted(out.glob("*.txt")):
            if (
                ".terse" in text.name
                or text.name.startswith("error")
                or text.name == "generated.txt"
            ):
                continue
            raw = text.with_suffix(".json")
            if raw.exists():
                pairs.append((version, text, raw))
    return pairs


PAIRS = _pairs()
PAIR_IDS = [f"{v}/{t.name}" for v, t, _ in PAIRS]


def read_text(path: Path) -> Result:
    found = fio_text.find(path.read_text().splitlines(), str(path))
    assert len(found) == 1, f"{path}: expected one result, found {len(found)}"
    return found[0][1]


def _close(text_value: float, json_value: float, rel: float, abs_: float = 0.0) -> bool:
    return math.isclose(text_value, json_value, rel_tol=rel, abs_tol=abs_)


def _json_direction(job: dict[str, Any], ddir: str) -> dict[str, float] | None:
    """The figures the text form also prints, from fio's JSON of any generation."""
    block = job.get(ddir)
    if not isinstance(block, dict) or not block.get("total_ios"):
        return None
    ns = "clat_ns" in block
    clat = block["clat_ns"] if ns else block["clat"]
    scale = 1.0 if ns else 1000.0
    bw = block["bw_bytes"] if "bw_bytes" in block else block["bw"] * 1024.0
    out = {
        "iops": float(block["iops"]),
        "bw_bytes": float(bw),
        "runtime_ms": float(block["runtime"]),
        "clat_ns.mean": clat["mean"] * scale,
        "clat_ns.min": clat["min"] * scale,
    }
    p99 = clat.get("percentile", {}).get("99.000000")
    if p99 is not None:
        out["clat_ns.p99"] = p99 * scale
    return out


def _check_direction(
    label: str, metrics: dict[str, float], ddir: str, want: dict[str, float]
) -> None:
    got = {k: metrics.get(f"{ddir}.{k}") for k in want}
    assert None not in got.values(), f"{label}: missing {got}"
    assert _close(got["iops"] or 0, want["iops"], 0.01, 0.5), f"{label} iops {got} {want}"
    assert _close(got["bw_bytes"] or 0, want["bw_bytes"], 0.01), f"{label} bw {got} {want}"
    assert got["runtime_ms"] == want["runtime_ms"], f"{label} runtime {got} {want}"
    # avg is printed with two decimals in nsec or usec (msec only when min > 1 ms)
    unit = 1e6 if want["clat_ns.min"] > 1e6 else 1e3
    assert _close(got["clat_ns.mean"] or 0, want["clat_ns.mean"], 0, 0.005 * unit + 1e-6), (
        f"{label} clat mean {got} {want}"
    )
    if "clat_ns.p99" in want:
        p_unit = 1e6 if want["clat_ns.p99"] >= 1e8 else 1e3
        assert _close(got["clat_ns.p99"] or 0, want["clat_ns.p99"], 0, p_unit), (
            f"{label} clat p99 {got} {want}"
        )


@pytest.mark.parametrize(("version", "text", "raw"), PAIRS, ids=PAIR_IDS)
def test_text_agrees_with_json_of_the_same_run(version: str, text: Path, raw: Path) -> None:
    result = read_text(text)
    doc = json.loads(raw.read_text())
    assert result.tool == "fio" and result.format == "fio-text"
    assert result.tool_version == version
    jobs = doc["jobs"]
    assert [j.name for j in result.jobs] == [j["jobname"] for j in jobs]
    assert [j.group for j in result.jobs] == [j["groupid"] for j in jobs]
    for index, (job, raw_job) in enumerate(zip(result.jobs, jobs, strict=True)):
        for ddir in ("read", "write", "trim", "mixed"):
            want = _json_direction(raw_job, ddir)
            if want is None:
                assert f"{ddir}.iops" not in job.metrics
                continue
            _check_direction(f"{text.name} job {index} {ddir}", job.metrics, ddir, want)
        assert _close(job.metrics["cpu.sys_pct"], raw_job["sys_cpu"], 0, 0.006)
        assert job.metrics["cpu.ctx"] == raw_job["ctx"]
    # result level: sums over the jobs of a group, as fio's group report; a direction that
    # several stonewalled groups did is reported per group (group<N>.write.iops)
    groups = sorted({j["groupid"] for j in jobs})
    for ddir in ("read", "write", "mixed"):
        per_group = {
            g: [
                w
                for w in (_json_direction(j, ddir) for j in jobs if j["groupid"] == g)
                if w is not None
            ]
            for g in groups
        }
        doing = [g for g, wants in per_group.items() if wants]
        for group in doing:
            wants = per_group[group]
            name = ddir if len(doing) == 1 else f"group{group}.{ddir}"
            n_jobs = len(wants)
            total_iops = sum(w["iops"] for w in wants)
            assert _close(result.metrics[f"{name}.iops"], total_iops, 0.01, 0.5 * n_jobs)
            total_bw = sum(w["bw_bytes"] for w in wants)
            assert _close(result.metrics[f"{name}.bw_bytes"], total_bw, 0.01)
            assert result.metrics[f"{name}.runtime_ms"] == max(w["runtime_ms"] for w in wants)
            if n_jobs == 1 and "clat_ns.p99" in wants[0]:
                _check_direction(f"{text.name} result {name}", result.metrics, name, wants[0])
        if len(doing) > 1:
            assert f"{ddir}.iops" not in result.metrics


@pytest.mark.parametrize(("version", "text", "raw"), PAIRS, ids=PAIR_IDS)
def test_disk_and_sync_figures(version: str, text: Path, raw: Path) -> None:
    result = read_text(text)
    doc = json.loads(raw.read_text())
    for disk in doc.get("disk_util", []):
        prefix = f"disk.{disk['name']}"
        assert result.metrics[f"{prefix}.write_ios"] == disk["write_ios"]
        assert result.metrics[f"{prefix}.read_ticks"] == disk["read_ticks"]
        assert _close(result.metrics[f"{prefix}.util_pct"], disk["util"], 0, 0.006)
    for job, raw_job in zip(result.jobs, doc["jobs"], strict=True):
        sync = raw_job.get("sync")
        if isinstance(sync, dict) and sync.get("lat_ns", {}).get("N"):
            lat = sync["lat_ns"]
            assert _close(job.metrics["sync.lat_ns.mean"], lat["mean"], 0, 5.001)
            assert _close(job.metrics["sync.lat_ns.p99"], lat["percentile"]["99.000000"], 0, 1e3)
        else:
            assert "sync.lat_ns.mean" not in job.metrics


def _json_reader_ready() -> bool:
    return importlib.util.find_spec("iolab.ingest.fio_json") is not None


@pytest.mark.skipif(not _json_reader_ready(), reason="the fio JSON reader is not there yet")
@pytest.mark.parametrize(("version", "text", "raw"), PAIRS, ids=PAIR_IDS)
def test_text_reader_agrees_with_json_reader(version: str, text: Path, raw: Path) -> None:
    from iolab.ingest import fio_json

    from_text = read_text(text)
    (from_json,) = fio_json.parse(raw.read_text(), str(raw))
    for ddir in ("read", "write", "trim", "mixed"):
        if f"{ddir}.iops" not in from_json.metrics:
            assert f"{ddir}.iops" not in from_text.metrics
            continue
        got, want = from_text.metrics, from_json.metrics
        assert _close(got[f"{ddir}.iops"], want[f"{ddir}.iops"], 0.01, 1.5)
        assert _close(got[f"{ddir}.bw_bytes"], want[f"{ddir}.bw_bytes"], 0.01)
        assert got[f"{ddir}.runtime_ms"] == want[f"{ddir}.runtime_ms"]
        assert _close(got[f"{ddir}.clat_ns.mean"], want[f"{ddir}.clat_ns.mean"], 0, 5e3)
        if f"{ddir}.clat_ns.p99" in want and f"{ddir}.clat_ns.p99" in got:
            assert _close(got[f"{ddir}.clat_ns.p99"], want[f"{ddir}.clat_ns.p99"], 0, 1e3)


# -- damaged text: wrapped, indentation lost, several runs, fragments ---------------------


def _make_fixtures_module() -> Any:
    spec = importlib.util.spec_from_file_location(
        "make_fixtures", DATA / "mail" / "make_fixtures.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


WRAP = _make_fixtures_module().wrap_line


@pytest.mark.parametrize("width", [72, 60, 48])
@pytest.mark.parametrize(("version", "text", "raw"), PAIRS[::3], ids=PAIR_IDS[::3])
def test_rewrapped_text_reads_the_same(version: str, text: Path, raw: Path, width: int) -> None:
    clean = read_text(text)
    wrapped: list[str] = []
    for line in text.read_text().splitlines():
        wrapped.extend(WRAP(line, "", width=width))
    assert len(wrapped) > len(text.read_text().splitlines())
    (found,) = fio_text.find(wrapped, "wrapped")
    assert found[1].metrics == clean.metrics
    assert [j.metrics for j in found[1].jobs] == [j.metrics for j in clean.jobs]


TEXTS = [
    p
    for v in VERSIONS
    for p in sorted((DATA / f"fio-{v}" / "out").glob("*.txt"))
    if not (".terse" in p.name or p.name.startswith("error") or p.name == "generated.txt")
]


@pytest.mark.parametrize("text", TEXTS, ids=[f"{p.parent.parent.name}/{p.name}" for p in TEXTS])
def test_every_text_fixture_reads(text: Path) -> None:
    result = read_text(text)
    assert any(k.endswith(".iops") for k in result.metrics)
    assert all(math.isfinite(v) for v in result.metrics.values())


@pytest.mark.parametrize(("version", "text", "raw"), PAIRS, ids=PAIR_IDS)
def test_lost_indentation_reads_the_same(version: str, text: Path, raw: Path) -> None:
    clean = read_text(text)
    flat = [line.lstrip() for line in text.read_text().splitlines()]
    (found,) = fio_text.find(flat, "flat")
    assert found[1].metrics == clean.metrics


def test_several_runs_in_one_text_are_told_apart() -> None:
    texts = [p for _, p, _ in PAIRS]
    first, second = texts[0], texts[-1]
    lines = first.read_text().splitlines() + second.read_text().splitlines()
    found = fio_text.find(lines, "two")
    assert [r.metrics for _, r in found] == [read_text(first).metrics, read_text(second).metrics]
    assert found[1][0] >= len(first.read_text().splitlines())


def test_job_blocks_pasted_without_summary_split_at_prose() -> None:
    text = next(p for _, p, _ in PAIRS if p.name == "randwrite-fsync.txt")
    block = text.read_text().split("\n\nRun status")[0].splitlines()
    job_block = block[block.index(next(line for line in block if "(groupid=" in line)) :]
    lines = ["Before:", *job_block, "", "After the fix:", *job_block]
    found = fio_text.find(lines, "pasted")
    assert len(found) == 2
    assert found[0][1].metrics == found[1][1].metrics
    assert found[1][0] == len(job_block) + 3


def test_group_summary_alone_is_a_result() -> None:
    text = next(p for v, p, _ in PAIRS if v == "3.33" and p.name == "two-groups.txt")
    lines = text.read_text().splitlines()
    summary = lines[next(i for i, line in enumerate(lines) if line.startswith("Run status")) :]
    (found,) = fio_text.find(summary, "summary")
    full = read_text(text)
    for key in ("write.bw_bytes", "read.bw_bytes", "write.io_bytes"):
        assert _close(found[1].metrics[key], full.metrics[key], 0.01)
    assert found[1].jobs == []


def test_direction_block_without_header() -> None:
    text = next(p for v, p, _ in PAIRS if v == "3.33" and p.name == "seqread.txt")
    lines = text.read_text().splitlines()
    start = next(i for i, line in enumerate(lines) if "read: IOPS" in line)
    (found,) = fio_text.find(lines[start : start + 12], "bare")
    assert found[1].metrics["read.iops"] == read_text(text).metrics["read.iops"]
    assert found[1].metrics["read.clat_ns.p99"] == read_text(text).metrics["read.clat_ns.p99"]


@pytest.mark.parametrize("version", VERSIONS)
def test_job_error_names_job_and_error(version: str) -> None:
    path = DATA / f"fio-{version}" / "out" / "error.txt"
    if not path.exists():
        pytest.skip("no error fixture")
    with pytest.raises(IngestError) as info:
        fio_text.find(path.read_text().splitlines(), str(path))
    message = info.value.message
    assert "'error' reported error 28 (No space left on device)" in message or (
        "error: failed to" in message  # fio 2.21 gave up before the job started
    )
    assert str(path) in info.value.message


def test_units_and_suffixes() -> None:
    """Unit handling on a hand-made block (3.x form; msec latencies, suffixed counts)."""
    lines = [
        "big: (groupid=0, jobs=1): err= 0: pid=1: Mon Jan  1 00:00:00 2024",
        "  write: IOPS=1794k, BW=7008MiB/s (7348MB/s)(6.84GiB/1000msec)",
        "    clat (msec): min=3, max=2666.0k, avg=12.50, stdev= 1.25",
        "    clat percentiles (msec):",
        "     |  1.00th=[    4], 50.00th=[   12], 99.00th=[   40], 99.90th=[   41]",
        "  write: io=431280KB, bw=7186.3KB/s, iops=449, runt= 60015msec",
    ]
    found = fio_text.find(lines, "units")
    job = found[0][1].jobs[0]
    assert job.metrics["write.iops"] == 1794e3
    assert job.metrics["write.bw_bytes"] == 7008 * 2**20
    assert job.metrics["write.io_bytes"] == pytest.approx(6.84 * 2**30)
    assert job.metrics["write.clat_ns.max"] == 2666.0e3 * 1e6
    assert job.metrics["write.clat_ns.mean"] == pytest.approx(12.5e6)
    assert job.metrics["write.clat_ns.p99.9"] == 41e6
    # the 2.16 line is a second write block: a job of its own, KB meaning KiB
    old = found[0][1].jobs[1]
    assert old.metrics["write.bw_bytes"] == pytest.approx(7186.3 * 1024)
    assert old.metrics["write.io_bytes"] == 431280 * 1024
    assert old.metrics["write.runtime_ms"] == 60015


@pytest.mark.parametrize(
    "lines",
    [
        [],
        [""],
        ["hello world", "nothing to see"],
        ["write: IOPS="],
        ["x: (groupid=", "err="],
        ["  write: IOPS=1e999, BW=1MiB/s (1MB/s)(1MiB/1msec)"],
        ["     | 99.00th=[", "]", "clat percentiles (usec):", "| 1.00th=[ 9e9999]"],
        ["Disk stats (read/write):", "  sda: ios=1/2, merge=0/0, ticks=0/0, in_queue=0, util=1%"],
        [
            "Run status group 0 (all jobs):",
            "  WRITE: bw=1MiB/s, io=9" + "9" * 5000 + "B, run=1-1msec",
        ],
    ],
)
def test_odd_input_gives_results_or_ingest_error(lines: list[str]) -> None:
    try:
        found = fio_text.find(lines, "odd")
    except IngestError:
        return
    for _, result in found:
        assert all(math.isfinite(v) for v in result.metrics.values())
