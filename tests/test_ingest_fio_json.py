"""fio JSON / json+ reader against real fio outputs: every number is checked against the raw
JSON of the same file, loaded independently with json.load."""

from __future__ import annotations

import json
import math
import os
from pathlib import Path
from typing import Any

import pytest

from iolab.errors import IngestError
from iolab.ingest import fio_json
from iolab.model.metrics import percentile_name
from iolab.model.result import Result
from iolab.stats.bins import histogram_percentiles

DATA = Path(__file__).parent / "data"
# fio-3.33, fio-2.16, fio-2.21 (when built), fio-json-extra: every directory with outputs
OUT_DIRS = sorted(p / "out" for p in DATA.glob("fio-*") if (p / "out").is_dir())
JSON_FILES = sorted(f for d in OUT_DIRS for f in d.glob("*.json"))
GOOD = [f for f in JSON_FILES if not f.name.startswith("error")]
ERRORS = [f for f in JSON_FILES if f.name.startswith("error")]
PLUS = [f for f in GOOD if ".plus." in f.name]
EXTRA = DATA / "fio-json-extra" / "out"
DIRS = ("read", "write", "trim", "mixed")


def _ids(paths: list[Path]) -> list[str]:
    return [f"{p.parent.parent.name}/{p.name}" for p in paths]


def raw_json(path: Path) -> dict[str, Any]:
    """The fio document, loaded with the standard library (skipping text before it)."""
    text = path.read_text()
    start = 0 if text.startswith("{") else text.index("\n{") + 1
    doc: dict[str, Any] = json.loads(text[start:])
    return doc


def raw_entries(doc: dict[str, Any]) -> list[dict[str, Any]]:
    if "jobs" in doc:
        return list(doc["jobs"])
    return [e for e in doc["client_stats"] if e["jobname"] != "All clients"]


def lat_object(block: dict[str, Any], kind: str) -> tuple[dict[str, Any] | None, float]:
    """(latency object, factor to ns): fio 3.x `clat_ns` in ns, fio 2.x `clat` in µs."""
    if f"{kind}_ns" in block:
        return block[f"{kind}_ns"], 1.0
    if kind in block:
        return block[kind], 1000.0
    return None, 1.0


def io_bytes(block: dict[str, Any]) -> float:
    return float(block["io_bytes"]) if "io_kbytes" in block else block["io_bytes"] * 1024.0


def active(block: dict[str, Any]) -> bool:
    return bool(block["total_ios"]) or bool(block["io_bytes"])


def parse_one(path: Path) -> Result:
    results = fio_json.parse(path.read_text(), str(path))
    assert len(results) == 1
    return results[0]


def test_fixtures_present() -> None:
    assert len(GOOD) >= 20 and ERRORS and PLUS


@pytest.mark.parametrize("path", GOOD, ids=_ids(GOOD))
def test_values_match_raw_json(path: Path) -> None:
    doc = raw_json(path)
    result = parse_one(path)
    entries = raw_entries(doc)
    assert result.tool == "fio"
    assert result.tool_version == doc["fio version"].removeprefix("fio-")
    assert result.options == {k: str(v) for k, v in doc.get("global options", {}).items()}
    assert len(result.jobs) == len(entries)
    sums: dict[tuple[int, str], float] = {}
    for job, raw in zip(result.jobs, entries, strict=True):
        assert job.name.endswith(raw["jobname"])
        assert job.group == raw["groupid"]
        assert job.options == {k: str(v) for k, v in raw.get("job options", {}).items()}
        assert job.metrics["cpu.usr_pct"] == pytest.approx(raw["usr_cpu"])
        assert job.metrics["cpu.sys_pct"] == pytest.approx(raw["sys_cpu"])
        assert job.metrics["cpu.ctx"] == raw["ctx"]
        for ddir in DIRS:
            block = raw.get(ddir)
            if block is None or not active(block):
                assert f"{ddir}.iops" not in job.metrics  # no read.iops=0 for a write job
                continue
            m = job.metrics
            assert m[f"{ddir}.iops"] == pytest.approx(block["iops"])
            bw = block["bw_bytes"] if "bw_bytes" in block else block["bw"] * 1024
            assert m[f"{ddir}.bw_bytes"] == pytest.approx(bw)
            assert m[f"{ddir}.io_bytes"] == pytest.approx(io_bytes(block))
            assert m[f"{ddir}.runtime_ms"] == block["runtime"]
            assert m[f"{ddir}.total_ios"] == block["total_ios"]
            assert m[f"{ddir}.short_ios"] == block["short_ios"]
            sums[(raw["groupid"], ddir)] = sums.get((raw["groupid"], ddir), 0.0) + block["iops"]
            for kind in ("clat", "lat", "slat"):
                stats, scale = lat_object(block, kind)
                if stats is None or stats.get("N", 1) == 0 or stats["max"] == 0:
                    assert f"{ddir}.{kind}_ns.mean" not in m
                    continue
                for stat in ("min", "max", "mean", "stddev"):
                    assert m[f"{ddir}.{kind}_ns.{stat}"] == pytest.approx(stats[stat] * scale)
                for key, value in stats.get("percentile", {}).items():
                    if float(key) > 0:
                        name = f"{ddir}.{kind}_ns.{percentile_name(float(key))}"
                        assert m[name] == pytest.approx(value * scale)
        sync = raw.get("sync")
        if sync and sync["total_ios"]:
            assert job.metrics["sync.total_ios"] == sync["total_ios"]
            assert job.metrics["sync.lat_ns.mean"] == pytest.approx(sync["lat_ns"]["mean"])
            p99 = sync["lat_ns"]["percentile"]["99.000000"]
            assert job.metrics["sync.lat_ns.p99"] == p99
    # stonewalled groups ran one after the other: a direction several groups did is
    # reported per group (group<N>.write.iops), never summed across them
    for (group, ddir), total in sums.items():
        groups_doing = sum(1 for g, d in sums if d == ddir)
        name = f"{ddir}.iops" if groups_doing == 1 else f"group{group}.{ddir}.iops"
        assert result.metrics[name] == pytest.approx(total)
        if groups_doing > 1:
            assert f"{ddir}.iops" not in result.metrics
    for disk in doc.get("disk_util", []):
        names = [k for k in result.metrics if k.startswith(f"disk.{disk['name']}")]
        assert any(result.metrics[k] == pytest.approx(disk["util"]) for k in names)


@pytest.mark.parametrize("path", GOOD, ids=_ids(GOOD))
def test_format_names_json_plus(path: Path) -> None:
    has_bins = '"bins"' in path.read_text()
    if "/fio-3" in str(path):
        assert has_bins == (".plus." in path.name)
    assert parse_one(path).format == ("fio-json+" if has_bins else "fio-json")


@pytest.mark.parametrize("path", ERRORS, ids=_ids(ERRORS))
def test_job_error_is_reported(path: Path) -> None:
    raw = raw_entries(raw_json(path))[0]
    with pytest.raises(IngestError) as caught:
        fio_json.parse(path.read_text(), "error.json")
    message = str(caught.value)
    assert message.startswith("error.json: ")
    assert "\n" not in message
    if raw["error"]:
        assert f"'{raw['jobname']}'" in message
        assert f"error {raw['error']} ({os.strerror(raw['error'])})" in message
    else:  # fio 2.21 gives up on /dev/full before any I/O and reports no error number
        assert "no job did any I/O" in message


@pytest.mark.parametrize("fraction", [0.1, 0.5, 0.9, 0.999])
@pytest.mark.parametrize("path", GOOD[:4] + PLUS[:2], ids=_ids(GOOD[:4] + PLUS[:2]))
def test_truncated_json(path: Path, fraction: float) -> None:
    text = path.read_text()
    cut = text[: int(len(text) * fraction)]
    with pytest.raises(IngestError, match="truncated fio JSON"):
        fio_json.parse(cut, "cut.json")


def test_malformed_json_is_not_called_truncated() -> None:
    text = (DATA / "fio-3.33" / "out" / "seqread.json").read_text()
    broken = text.replace('"iops" :', '"iops" =', 1)
    with pytest.raises(IngestError, match="malformed fio JSON at line") as caught:
        fio_json.parse(broken, "bad.json")
    assert "truncated" not in str(caught.value)


def test_text_before_json() -> None:
    path = DATA / "fio-3.33" / "out" / "randrw-libaio-direct.json"
    text = path.read_text()
    noise = (
        "fio: pid=4242, err=5/file:io_u.c:1876, func=io_u error, error=Input/output error\n"
        "note: both iodepth >= 1 and synchronous I/O engine are selected\n"
    )
    with_noise = fio_json.parse(noise + text, "noisy.json")
    assert [r.metrics for r in with_noise] == [r.metrics for r in fio_json.parse(text, "x")]
    assert fio_json.looks_like(noise + text)


def test_real_text_before_json_from_client_mode() -> None:
    path = EXTRA / "client-server-2hosts.json"
    assert not path.read_text().startswith("{")
    result = parse_one(path)
    doc = raw_json(path)
    entries = raw_entries(doc)
    # two servers on one host: the port keeps the job names apart
    assert len({job.name for job in result.jobs}) == len(entries) == 2
    for job, raw in zip(result.jobs, entries, strict=True):
        assert job.name == f"{raw['hostname']}:{raw['port']}:{raw['jobname']}"
    assert result.metrics["read.iops"] == pytest.approx(sum(e["read"]["iops"] for e in entries))


@pytest.mark.parametrize("name", ["client-server.json", "client-server.plus.json"])
def test_client_server(name: str) -> None:
    doc = raw_json(EXTRA / name)
    assert "client_stats" in doc and "jobs" not in doc
    result = parse_one(EXTRA / name)
    everyone = [e for e in doc["client_stats"] if e["jobname"] == "All clients"]
    assert everyone, "fixture lost its aggregate entry"
    entries = raw_entries(doc)
    assert [j.name for j in result.jobs] == [f"{e['hostname']}:{e['jobname']}" for e in entries]
    assert result.metrics["write.iops"] == pytest.approx(sum(e["write"]["iops"] for e in entries))
    assert result.metrics["write.total_ios"] == sum(e["write"]["total_ios"] for e in entries)


def test_concatenated_documents() -> None:
    out = DATA / "fio-3.33" / "out"
    first, second = out / "seqread.json", out / "two-groups.json"
    text = first.read_text() + "\n" + second.read_text()
    results = fio_json.parse(text, "both.json")
    assert len(results) == 2
    assert results[0].metrics == parse_one(first).metrics
    assert results[1].metrics == parse_one(second).metrics


def test_multi_job_without_group_reporting() -> None:
    path = DATA / "fio-3.33" / "out" / "randread-3jobs.json"
    entries = raw_entries(raw_json(path))
    result = parse_one(path)
    assert len(result.jobs) == 3
    total = sum(e["read"]["iops"] for e in entries)
    assert result.metrics["read.iops"] == pytest.approx(total)
    assert result.metrics["read.bw_bytes"] == sum(e["read"]["bw_bytes"] for e in entries)
    assert result.metrics["read.io_bytes"] == sum(e["read"]["io_bytes"] for e in entries)
    # plain JSON has no bins: percentiles of three jobs cannot be merged, so none are invented
    assert not any(".p" in k for k in result.metrics if k.startswith("read.clat_ns"))
    # the mean combines exactly, weighted by I/O count
    n = [e["read"]["clat_ns"]["N"] for e in entries]
    mean = sum(c * e["read"]["clat_ns"]["mean"] for c, e in zip(n, entries, strict=True)) / sum(n)
    assert result.metrics["read.clat_ns.mean"] == pytest.approx(mean)


def test_group_reporting_gives_one_job() -> None:
    path = DATA / "fio-3.33" / "out" / "randwrite-3jobs-group.json"
    result = parse_one(path)
    assert len(result.jobs) == 1
    raw = raw_entries(raw_json(path))[0]
    assert result.metrics["write.clat_ns.p99"] == raw["write"]["clat_ns"]["percentile"]["99.000000"]


def test_two_groups() -> None:
    path = DATA / "fio-3.33" / "out" / "two-groups.json"
    result = parse_one(path)
    assert [j.group for j in result.jobs] == [e["groupid"] for e in raw_entries(raw_json(path))]
    # each direction was measured by one job: its percentiles are the result's
    for job in result.jobs:
        for key, value in job.metrics.items():
            if ".clat_ns.p" in key:
                assert result.metrics[key] == value


@pytest.mark.parametrize("path", PLUS, ids=_ids(PLUS))
def test_json_plus_bins(path: Path) -> None:
    result = parse_one(path)
    for job, raw in zip(result.jobs, raw_entries(raw_json(path)), strict=True):
        for ddir in (*DIRS, "sync"):
            block = raw.get(ddir)
            if not block or not block["total_ios"]:
                continue
            for kind in ("clat", "lat", "slat"):
                stats, scale = lat_object(block, kind)
                if stats is None or "bins" not in stats:
                    continue
                hist = job.histograms[f"{ddir}.{kind}_ns"]
                assert sum(hist.values()) == stats.get("N", block["total_ios"])
                assert min(hist) <= stats["min"] * scale * 1.02
                assert max(hist) >= stats["max"] * scale * 0.98
                # fio's own percentiles are the nearest-rank buckets of these very bins
                ours = histogram_percentiles(hist)
                for key, value in stats.get("percentile", {}).items():
                    if float(key) > 0:
                        assert ours[percentile_name(float(key))] == pytest.approx(value * scale)


def test_json_plus_merges_percentiles_of_several_jobs() -> None:
    path = DATA / "fio-3.33" / "out" / "randread-3jobs.plus.json"
    entries = raw_entries(raw_json(path))
    assert len(entries) == 3
    result = parse_one(path)
    merged: dict[float, int] = {}
    for entry in entries:
        for key, count in entry["read"]["clat_ns"]["bins"].items():
            merged[float(key)] = merged.get(float(key), 0) + count
    total = sum(merged.values())
    assert result.histograms["read.clat_ns"] == merged
    for p in (50, 90, 99, 99.9):
        # the smallest bucket value with at least p% of all I/Os at or below it
        reached = [
            v
            for v in sorted(merged)
            if sum(c for k, c in merged.items() if k <= v) >= p / 100 * total
        ]
        value = result.metrics[f"read.clat_ns.{percentile_name(p)}"]
        assert value == reached[0]
        per_job = [e["read"]["clat_ns"]["percentile"][f"{p:.6f}"] for e in entries]
        assert min(per_job) <= value <= max(per_job)


def test_bucket_index_to_value_matches_fio_3_bins() -> None:
    """fio 2.3–2.19 keyed json+ bins by index; 3.x keys them by the value the same bucket
    layout gives (6 bits per group).  Every 3.x key must be one of those values."""
    values = {fio_json.plat_index_to_value(i, 6) for i in range(1856)}
    keys = {
        float(k)
        for f in PLUS
        if "/fio-3" in str(f)
        for e in raw_entries(raw_json(f))
        for d in DIRS
        if d in e and "bins" in e[d]["clat_ns"]
        for k in e[d]["clat_ns"]["bins"]
    }
    assert keys and keys <= values
    ordered = [fio_json.plat_index_to_value(i, 6) for i in range(1216)]
    assert ordered == sorted(set(ordered))


def test_fio_2_index_bins_are_converted() -> None:
    """A fio 2.x json+ block keyed by bucket index, as fio 2.16 prints it (µs)."""
    bins = {str(i): 0 for i in range(1216)}
    bins.update({"100": 3, "130": 1})
    bins.update({"FIO_IO_U_PLAT_BITS": 6, "FIO_IO_U_PLAT_VAL": 64, "FIO_IO_U_PLAT_NR": 1216})
    clat = {"min": 100, "max": 133, "mean": 108.0, "stddev": 1.0, "percentile": {"0.00": 0}}
    clat["bins"] = bins
    zero = {"min": 0, "max": 0, "mean": 0.0, "stddev": 0.0}
    block = {
        "io_bytes": 16,
        "bw": 4,
        "iops": 1.0,
        "runtime": 4000,
        "total_ios": 4,
        "short_ios": 0,
        "slat": zero,
        "clat": clat,
        "lat": zero,
    }
    doc = {
        "fio version": "fio-2.16",
        "jobs": [{"jobname": "j", "groupid": 0, "error": 0, "write": block}],
    }
    result = fio_json.parse(json.dumps(doc, indent=1), "old.json")[0]
    assert result.jobs[0].histograms["write.clat_ns"] == {
        100_000.0: 3,
        fio_json.plat_index_to_value(130) * 1000: 1,
    }
    assert result.metrics["write.io_bytes"] == 16 * 1024  # KiB before fio 2.21
    assert result.metrics["write.bw_bytes"] == 4 * 1024
    assert result.metrics["write.clat_ns.mean"] == 108_000.0
    assert "write.clat_ns.p0" not in result.metrics  # fio 2.x padding
    assert "write.slat_ns.mean" not in result.metrics  # zeros: not measured
    assert result.format == "fio-json+"


def test_nan_values_are_left_out() -> None:
    text = (DATA / "fio-3.33" / "out" / "seqread.json").read_text()
    raw = raw_entries(raw_json(DATA / "fio-3.33" / "out" / "seqread.json"))[0]
    stddev = f'"stddev" : {raw["read"]["clat_ns"]["stddev"]:.6f}'
    assert stddev in text
    result = parse_one_text(text.replace(stddev, '"stddev" : -nan', 1))
    assert "read.clat_ns.stddev" not in result.metrics
    assert result.metrics["read.iops"] == pytest.approx(raw["read"]["iops"])


def parse_one_text(text: str) -> Result:
    results = fio_json.parse(text, "t.json")
    assert len(results) == 1
    return results[0]


@pytest.mark.parametrize(
    "text",
    [
        '{"fio version": "fio-3.33"}',
        '{"fio version": "fio-3.33", "jobs": []}',
        '{"fio version": "fio-3.33", "jobs": {"a": 1}}',
        '{"fio version": "fio-3.33", "jobs": [1, 2]}',
        "no json here",
    ],
)
def test_broken_documents_raise_ingest_error(text: str) -> None:
    with pytest.raises(IngestError):
        fio_json.parse(text, "b.json")


def test_looks_like() -> None:
    text = (DATA / "fio-3.33" / "out" / "seqread.json").read_text()
    assert fio_json.looks_like(text)
    assert not fio_json.looks_like("seqread: (g=0): rw=read, bs=(R) 64.0KiB")
    # still quoted in a mail: the caller un-quotes first
    assert not fio_json.looks_like("\n".join("> " + line for line in text.splitlines()))


def test_groups_that_both_wrote_are_reported_apart() -> None:
    """Regression: a sequential write group then a random write group (stonewall) were
    summed into one write.iops of twice either phase's rate."""
    from iolab.model.metrics import Direction, direction_prefixes, metric_info

    path = DATA / "fio-3.33" / "out" / "two-write-groups.json"
    (result,) = fio_json.parse(path.read_text(), str(path))
    seq, rand = result.jobs
    assert (seq.group, rand.group) == (0, 1)
    assert "write.iops" not in result.metrics
    assert result.metrics["group0.write.iops"] == seq.metrics["write.iops"]
    assert result.metrics["group1.write.iops"] == rand.metrics["write.iops"]
    assert result.metrics["group1.write.clat_ns.mean"] == rand.metrics["write.clat_ns.mean"]
    assert direction_prefixes(result.metrics) == ["group0.write", "group1.write"]
    info = metric_info("group1.write.iops")
    assert (info.unit, info.direction) == ("ops/s", Direction.HIGHER)
    assert metric_info("group1.cpu.sys_pct").direction is Direction.NEUTRAL  # not a rate name
    path = DATA / "fio-3.33" / "out" / "two-groups.json"
    (both,) = fio_json.parse(path.read_text(), str(path))
    assert direction_prefixes(both.metrics) == ["read", "write"]  # one group each: plain


def test_microsecond_figure_beyond_doubles_is_dropped() -> None:
    """Regression (found by the property test): a fio 2.x latency in µs near the largest
    double became inf when scaled to ns."""
    doc = {
        "fio version": "fio-2.16",
        "jobs": [{"jobname": "j", "read": {"io_bytes": 1, "slat": {"max": 1.797693134862316e305}}}],
    }
    (result,) = fio_json.parse(json.dumps(doc), "huge.json")
    assert "read.slat_ns.max" not in result.metrics
    assert all(math.isfinite(v) for v in result.metrics.values())
