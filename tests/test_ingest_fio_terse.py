"""fio terse reader against real fio outputs: each NAME.terseV.txt is checked against the JSON
that the same fio run wrote (NAME.terseV.json), loaded independently with json.load."""

from __future__ import annotations

import json
import math
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pytest

from iolab.errors import IngestError
from iolab.ingest import fio_terse
from iolab.model.metrics import percentile_name
from iolab.model.result import Result

DATA = Path(__file__).parent / "data"
OUT_DIRS = sorted(p / "out" for p in DATA.glob("fio-*") if (p / "out").is_dir())


def _same_run(out: Path) -> bool:
    """Did one fio run write both NAME.terseV.txt and NAME.terseV.json?  fio versions without
    comma lists in --output-format could not; generated.txt says which (fio-generate.sh writes
    it when done), the hand-made directories say so in their generator or README."""
    info = out / "generated.txt"
    if info.exists():
        return "same_run=yes" in info.read_text()
    return (out.parent / "generate.sh").exists() or (out.parent / "README.md").exists()


TERSE = sorted(f for d in OUT_DIRS for f in d.glob("*.terse[2-5].txt"))
GOOD = [f for f in TERSE if not f.name.startswith("error")]
PAIRED = [f for f in GOOD if _same_run(f.parent) and f.with_suffix(".json").exists()]
ERRORS = [f for f in TERSE if f.name.startswith("error")]
DIRS = ("read", "write", "trim", "mixed")


def _ids(paths: list[Path]) -> list[str]:
    return [f"{p.parent.parent.name}/{p.name}" for p in paths]


def version_of(path: Path) -> int:
    return int(path.name.rsplit(".terse", 1)[1][0])


def raw_json(path: Path) -> dict[str, Any]:
    text = path.read_text()
    start = 0 if text.startswith("{") else text.index("\n{") + 1
    doc: dict[str, Any] = json.loads(text[start:])
    return doc


def find_one(path: Path) -> Result:
    found = fio_terse.find(path.read_text().splitlines(), str(path))
    assert [start for start, _ in found] == [0]
    return found[0][1]


def lat(block: dict[str, Any], kind: str) -> tuple[dict[str, Any], float]:
    if f"{kind}_ns" in block:
        return block[f"{kind}_ns"], 1.0
    return block[kind], 1000.0


def terse_direction(json_dir: str, metrics: dict[str, float], path: Path, mixed: bool) -> str:
    """fio 2.x terse has no mixed block: with unified_rw_reporting it puts the sums in the
    read block (fio 3.x prints a single block, read as `mixed`)."""
    if mixed and json_dir == "mixed" and "mixed.iops" not in metrics and "/fio-2." in str(path):
        return "read"
    return json_dir


def test_fixtures_present() -> None:
    assert {version_of(f) for f in GOOD} >= {2, 3, 4, 5}
    assert len(PAIRED) >= 30


@pytest.mark.parametrize("path", PAIRED, ids=_ids(PAIRED))
def test_terse_agrees_with_json_of_the_same_run(path: Path) -> None:
    """Within terse's rounding: iops and bw are truncated integers (bw KiB/s), runtime exact,
    latencies µs with 6 decimals (mean) or truncated to whole µs (percentiles)."""
    doc = raw_json(path.with_suffix(".json"))
    result = find_one(path)
    version = version_of(path)
    fio_version = doc["fio version"].removeprefix("fio-")
    assert result.format == "fio-terse"
    assert result.tool_version == (None if version == 2 else fio_version)
    assert len(result.jobs) == len(doc["jobs"])
    totals: dict[tuple[int, str], float] = {}
    for job, raw in zip(result.jobs, doc["jobs"], strict=True):
        assert job.name == raw["jobname"]
        assert job.group == raw["groupid"]
        assert job.metrics["cpu.ctx"] == raw["ctx"]
        assert job.metrics["cpu.usr_pct"] == pytest.approx(raw["usr_cpu"], abs=1e-5)
        for json_dir in DIRS:
            block = raw.get(json_dir)
            ddir = terse_direction(json_dir, job.metrics, path, "mixed" in raw)
            if not block or not block["total_ios"]:
                if "mixed" not in raw or ddir != "read":
                    assert f"{ddir}.iops" not in job.metrics
                continue
            m = job.metrics
            assert 0 <= block["iops"] - m[f"{ddir}.iops"] < 1 + 1e-6
            bw_bytes = block.get("bw_bytes", block["bw"] * 1024)
            assert abs(bw_bytes - m[f"{ddir}.bw_bytes"]) < 1024
            assert m[f"{ddir}.runtime_ms"] == block["runtime"]
            clat, scale = lat(block, "clat")
            assert m[f"{ddir}.clat_ns.mean"] == pytest.approx(clat["mean"] * scale, abs=1.0)
            assert m[f"{ddir}.clat_ns.stddev"] == pytest.approx(clat["stddev"] * scale, abs=1.0)
            for key in ("50.000000", "99.000000", "99.900000"):
                exact = clat["percentile"][key] * scale
                assert 0 <= exact - m[f"{ddir}.clat_ns.{percentile_name(float(key))}"] < 1000
            totals[(raw["groupid"], ddir)] = totals.get((raw["groupid"], ddir), 0.0) + block["iops"]
    assert totals
    for (group, ddir), total in totals.items():
        name = f"{group_prefix(totals, group, ddir)}{ddir}.iops"
        assert 0 <= total - result.metrics[name] < len(result.jobs) + 1e-6
    for disk in doc.get("disk_util", []):
        if version >= 3:
            util = result.metrics[f"disk.{disk['name']}.util_pct"]
            assert util == pytest.approx(disk["util"], abs=0.006)
            assert result.metrics[f"disk.{disk['name']}.write_ios"] == disk["write_ios"]


def group_prefix(doing: Iterable[tuple[int, str]], group: int, ddir: str) -> str:
    """How result-level names of a direction start: plainly when one group did it, else
    per group, `group<N>.` (iolab.ingest.aggregate)."""
    groups_doing = sum(1 for _, d in doing if d == ddir)
    return "" if groups_doing == 1 else f"group{group}."


@pytest.mark.parametrize("path", PAIRED, ids=_ids(PAIRED))
def test_result_clat_mean_agrees_with_json(path: Path) -> None:
    """Several jobs: the result's mean combines the jobs' means (weighted by bytes, which
    terse has, standing in for I/O counts, which it has not: equal block sizes here)."""
    doc = raw_json(path.with_suffix(".json"))
    result = find_one(path)
    groups = sorted({j["groupid"] for j in doc["jobs"]})
    doing = [
        (g, d)
        for g in groups
        for d in DIRS
        if any(j["groupid"] == g and d in j and j[d]["total_ios"] for j in doc["jobs"])
    ]
    for group, json_dir in doing:
        blocks = [
            j[json_dir]
            for j in doc["jobs"]
            if j["groupid"] == group and json_dir in j and j[json_dir]["total_ios"]
        ]
        plain = terse_direction(json_dir, result.metrics, path, "mixed" in doc["jobs"][0])
        ddir = group_prefix(doing, group, json_dir) + plain
        stats = [lat(b, "clat") for b in blocks]
        n = sum(
            s["N"] if "N" in s else b["total_ios"] for (s, _), b in zip(stats, blocks, strict=True)
        )
        mean = sum(
            (s["N"] if "N" in s else b["total_ios"]) * s["mean"] * k
            for (s, k), b in zip(stats, blocks, strict=True)
        )
        assert math.isclose(result.metrics[f"{ddir}.clat_ns.mean"], mean / n, rel_tol=1e-3)


@pytest.mark.parametrize("path", ERRORS, ids=_ids(ERRORS))
def test_job_error_is_reported(path: Path) -> None:
    lines = path.read_text().splitlines()
    first = next(line for line in lines if line[:2] in ("2;", "3;", "4;", "5;")).split(";")
    error = int(first[3] if version_of(path) == 2 else first[4])
    with pytest.raises(IngestError) as caught:
        fio_terse.find(path.read_text().splitlines(), "e.txt")
    message = str(caught.value)
    assert message.startswith("e.txt: ") and "\n" not in message
    if error:
        assert f"error {error} ({os.strerror(error)})" in message
    else:
        assert "no job did any I/O" in message


def test_consecutive_lines_are_one_run_and_groups_are_kept() -> None:
    path = DATA / "fio-3.33" / "out" / "two-groups.terse3.txt"
    result = find_one(path)
    assert [j.group for j in result.jobs] == [0, 1]
    assert [j.name for j in result.jobs] == ["writer", "reader"]


def test_several_runs_in_one_text_with_other_lines() -> None:
    out = DATA / "fio-3.33" / "out"
    first = (out / "seqread.terse3.txt").read_text().splitlines()
    second = (out / "randread-3jobs.terse5.txt").read_text().splitlines()
    third = (out / "two-groups.terse2.txt").read_text().splitlines()
    lines = [
        "Here are the numbers, first the baseline:",
        *first,
        "3;this line only looks like terse",
        "",
        "and with the patch:",
        *second,
        *third,  # another terse version right after: another run
    ]
    found = fio_terse.find(lines, "mail")
    assert [start for start, _ in found] == [1, 5, 8]
    assert [len(r.jobs) for _, r in found] == [1, 3, 2]
    assert found[0][1].metrics == find_one(out / "seqread.terse3.txt").metrics


@pytest.mark.parametrize("width", [72, 998])
def test_hard_wrapped_lines_are_joined(width: int) -> None:
    path = DATA / "fio-3.33" / "out" / "randrw-libaio-direct.terse5.txt"
    line = path.read_text().splitlines()[0]
    wrapped = [line[i : i + width] for i in range(0, len(line), width)]
    assert len(wrapped) > 1
    found = fio_terse.find(["Result:", *wrapped, "-- ", "sig"], "mail")
    assert [start for start, _ in found] == [1]
    assert found[0][1].metrics == find_one(path).metrics


def test_unified_both_and_description() -> None:
    """unified_rw_reporting=both: read, write, (trim) and mixed blocks; a description is the
    last field, and terse v2 prints it on a line of its own."""
    out = DATA / "fio-json-extra" / "out"
    for version in (2, 3, 5):
        path = out / f"unified-both.terse{version}.txt"
        lines = path.read_text().splitlines()
        if version == 2:
            assert lines[1].startswith(";")
        doc = raw_json(path.with_suffix(".json"))
        metrics = find_one(path).metrics
        for ddir in ("read", "write", "mixed"):
            assert 0 <= doc["jobs"][0][ddir]["iops"] - metrics[f"{ddir}.iops"] < 1


def test_text_that_is_not_terse_is_ignored() -> None:
    lines = [
        "3;2;1",
        "5;" + ";".join(["x"] * 200),
        "2;a;0;0" + ";1" * 157,
        "4;fio-3.33;job;0;0",
    ]
    assert fio_terse.find(lines, "t") == []
