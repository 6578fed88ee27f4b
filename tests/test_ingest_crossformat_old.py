"""fio 2.16 and 2.21: the normal text and the JSON of the SAME run (and terse and JSON of the
same run) must agree on iops, bw_bytes, runtime_ms, clat mean and clat p99 within the rounding
of the text (or terse) form.

The tolerance of each text figure is taken from the text itself: one unit of its last printed
digit (fio 2.x truncates some figures rather than rounding them), scaled by the unit it printed,
so a 3-digit `IOPS=102k` is allowed 1k and `iops=300264` is allowed 1.  Fixtures were made by
tests/data/fio-generate.sh with fio built from the fio-2.16 and fio-2.21 tags.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from iolab.ingest.detect import parse_text
from iolab.model.result import Job, Result

DATA = Path(__file__).parent / "data"
VERSIONS = ("2.16", "2.21")
SIZE = {"B": 1, "KB": 2**10, "MB": 2**20, "GB": 2**30, "KiB": 2**10, "MiB": 2**20, "GiB": 2**30}
TIME_NS = {"nsec": 1, "usec": 1_000, "msec": 1_000_000}
COUNT = {"": 1, "k": 1_000, "M": 1_000_000}

JOB_RE = re.compile(r"^\S.*: \(groupid=\d+, jobs=\d+\): err=")
OLD_DIR_RE = re.compile(  # fio <= 2.16
    r"^\s*(read|write|trim|mixed)\s*: io=[^,]+, bw=([\d.]+)([KMG]?B)/s, "
    r"iops=([\d.]+)([kM]?), runt=\s*(\d+)msec"
)
NEW_DIR_RE = re.compile(  # fio 2.17 and later
    r"^\s*(read|write|trim|mixed)\s*: IOPS=([\d.]+)([kM]?), BW=([\d.]+)([KMG]?i?B)/s "
    r"\([^)]*\)\([^/]*/(\d+)msec\)"
)
CLAT_RE = re.compile(r"^\s*clat \((\w+)\): min=[^,]*, max=[^,]*, avg=\s*([\d.]+)")
PCT_HEAD_RE = re.compile(r"^\s*clat percentiles \((\w+)\)")
P99_RE = re.compile(r"99\.00th=\[\s*(\d+)\]")


@dataclass
class Printed:
    """One direction of one job as the text printed it: value and tolerance per metric."""

    values: dict[str, float] = field(default_factory=dict)
    tolerance: dict[str, float] = field(default_factory=dict)

    version: str = ""

    def put(self, metric: str, token: str, scale: float) -> None:
        self.values[metric] = float(token) * scale
        self.tolerance[metric] = last_digit(token, self.version) * scale


def last_digit(token: str, version: str) -> float:
    """How far a printed figure may be from the true one (fio's lib/num2str.c):

    - no fraction: one unit (`300264` → 1; fio truncates some figures, rounds others);
    - fio <= 2.16 prints the remainder of its division by 1024, not a decimal fraction
      (`1172.1` for 1172.9), so a fraction there is worth one unit of the integer part;
    - fio 2.17+ prints a real decimal fraction but drops the carry when it rounds up to 1
      (`4.0` for 4.97), so an all-zero fraction is worth one unit of the integer part too.
    """
    if "." not in token:
        return 1.0
    fraction = token.split(".")[1]
    if version == "2.16" or not fraction.strip("0"):
        return 1.0
    return 10.0 ** -len(fraction)


def printed_jobs(text: str, version: str) -> list[dict[str, Printed]]:
    """Per job, per direction, what the normal text printed."""
    jobs: list[dict[str, Printed]] = []
    current: Printed | None = None
    pct_unit: str | None = None
    for line in text.splitlines():
        if JOB_RE.match(line):
            jobs.append({})
            current = None
            continue
        if not jobs:
            continue
        old, new = OLD_DIR_RE.match(line), NEW_DIR_RE.match(line)
        if old:
            current = jobs[-1].setdefault(old.group(1), Printed(version=version))
            current.put("bw_bytes", old.group(2), SIZE[old.group(3)])
            current.put("iops", old.group(4), COUNT[old.group(5)])
            current.put("runtime_ms", old.group(6), 1)
        elif new:
            current = jobs[-1].setdefault(new.group(1), Printed(version=version))
            current.put("iops", new.group(2), COUNT[new.group(3)])
            current.put("bw_bytes", new.group(4), SIZE[new.group(5)])
            current.put("runtime_ms", new.group(6), 1)
        elif current is not None and (clat := CLAT_RE.match(line)):
            current.put("clat_ns.mean", clat.group(2), TIME_NS[clat.group(1)])
        elif current is not None and (head := PCT_HEAD_RE.match(line)):
            pct_unit = head.group(1)
        elif current is not None and pct_unit and (p99 := P99_RE.search(line)):
            current.put("clat_ns.p99", p99.group(1), TIME_NS[pct_unit])
            pct_unit = None
    return jobs


def pairs(second: str) -> list[tuple[str, str]]:
    """(version, job name) of every fixture with a same-run `second` form, error job aside."""
    out = []
    for version in VERSIONS:
        out_dir = DATA / f"fio-{version}" / "out"
        assert "same_run=yes" in (out_dir / "generated.txt").read_text()
        for job in sorted((DATA / f"fio-{version}" / "jobs").glob("*.fio")):
            if job.stem != "error" and (out_dir / f"{job.stem}{second}").exists():
                out.append((version, job.stem))
    return out


def parse_one(path: Path) -> Result:
    results = parse_text(path.read_text(), path.name)
    assert len(results) == 1, f"{path}: {len(results)} results"
    return results[0]


def directions(job: Job) -> list[str]:
    """Directions that did I/O in this (JSON) job."""
    return [
        d
        for d in ("read", "write", "trim", "mixed")
        if job.metrics.get(f"{d}.iops", 0) > 0 or job.metrics.get(f"{d}.io_bytes", 0) > 0
    ]


def test_every_version_has_text_and_terse_pairs() -> None:
    for version in VERSIONS:
        assert sum(v == version for v, _ in pairs(".txt")) >= 9
        assert sum(v == version for v, _ in pairs(".terse3.txt")) >= 9


@pytest.mark.parametrize(("version", "name"), pairs(".txt"), ids=lambda x: x)
def test_text_agrees_with_json_of_the_same_run(version: str, name: str) -> None:
    out_dir = DATA / f"fio-{version}" / "out"
    text = (out_dir / f"{name}.txt").read_text()
    from_text, from_json = parse_one(out_dir / f"{name}.txt"), parse_one(out_dir / f"{name}.json")
    assert from_text.tool_version == from_json.tool_version
    assert version in (from_text.tool_version or "")
    printed = printed_jobs(text, version)
    assert len(from_text.jobs) == len(from_json.jobs) == len(printed)
    checked = 0
    for tjob, jjob, pjob in zip(from_text.jobs, from_json.jobs, printed, strict=True):
        assert tjob.name == jjob.name
        for d in directions(jjob):
            shown = pjob[d]
            for metric, tolerance in shown.tolerance.items():
                key = f"{d}.{metric}"
                if key not in jjob.metrics and metric == "clat_ns.p99":
                    continue
                truth = jjob.metrics[key]
                # the text as printed is within its last digit of the JSON ...
                assert abs(shown.values[metric] - truth) <= tolerance + 1e-9 * truth, key
                # ... and so must be what the text reader made of it
                assert tjob.metrics[key] == pytest.approx(truth, abs=tolerance + 1e-9 * truth), key
                checked += 1
    assert checked >= 4
    # result level: sums of the jobs' figures, so the jobs' tolerances add up
    for d in directions(from_json.jobs[0]):
        for metric in ("iops", "bw_bytes"):
            key = f"{d}.{metric}"
            slack = sum(p[d].tolerance[metric] for p in printed if d in p)
            truth = from_json.metrics[key]
            assert from_text.metrics[key] == pytest.approx(truth, abs=slack + 1e-6 * truth), key


@pytest.mark.parametrize("terse", ["terse2", "terse3", "terse4"])
@pytest.mark.parametrize(("version", "name"), pairs(".terse3.txt"), ids=lambda x: x)
def test_terse_agrees_with_json_of_the_same_run(version: str, name: str, terse: str) -> None:
    out_dir = DATA / f"fio-{version}" / "out"
    if not (out_dir / f"{name}.{terse}.txt").exists():
        pytest.skip(f"no {terse} output for this fio")
    from_terse = parse_one(out_dir / f"{name}.{terse}.txt")
    from_json = parse_one(out_dir / f"{name}.{terse}.json")
    assert from_terse.format == "fio-terse"
    assert len(from_terse.jobs) == len(from_json.jobs)
    # terse prints integers for iops (truncated), KiB/s and ms, 6 decimals of usec for means
    tolerance = {"iops": 1.0, "bw_bytes": 1024.0, "runtime_ms": 1.0, "clat_ns.mean": 1.0}
    tolerance["clat_ns.p99"] = 0.5
    for tjob, jjob in zip(from_terse.jobs, from_json.jobs, strict=True):
        assert tjob.name == jjob.name
        for d in directions(jjob):
            if terse == "terse2" and d == "trim":
                continue
            for metric, tol in tolerance.items():
                key = f"{d}.{metric}"
                if key not in jjob.metrics:
                    assert metric == "clat_ns.p99", key
                    continue
                truth = jjob.metrics[key]
                got = tjob.metrics[terse_key(tjob, key)]
                assert got == pytest.approx(truth, abs=tol + 1e-9 * truth), key
    for d in directions(from_json.jobs[0]):
        for metric in ("iops", "bw_bytes", "runtime_ms"):
            key = f"{d}.{metric}"
            slack = tolerance[metric] * len(from_json.jobs)
            truth = from_json.metrics[key]
            got = from_terse.metrics[terse_key(from_terse, key)]
            assert got == pytest.approx(truth, abs=slack + 1e-9 * truth), key


def terse_key(item: Job | Result, key: str) -> str:
    """Terse has no `mixed` slot: with unified_rw_reporting fio prints the mixed figures in
    the read fields, and nothing in the line says so."""
    if key.startswith("mixed.") and key not in item.metrics:
        return "read." + key.removeprefix("mixed.")
    return key


SIZED_JOBS = {"seqread": "read", "seqwrite-fdatasync": "write"}  # size-based, one job each


def job_size(job_file: Path) -> int:
    """The `size=` a job file asks for, in bytes (`64m` → 64 MiB, as fio reads it)."""
    match = re.search(r"^size=(\d+)([kmg]?)$", job_file.read_text(), re.MULTILINE)
    assert match, job_file
    return int(match.group(1)) * {"": 1, "k": 2**10, "m": 2**20, "g": 2**30}[match.group(2)]


@pytest.mark.parametrize("version", [*VERSIONS, "2.2.10"])
@pytest.mark.parametrize(("name", "direction"), SIZED_JOBS.items())
def test_every_form_reads_back_the_size_the_job_asked_for(
    version: str, name: str, direction: str
) -> None:
    """Also for fio 2.2.10, whose formats come from separate runs (it takes one output format
    per run): a size-based job moves exactly `size` bytes in every run."""
    base = DATA / f"fio-{version}"
    if not base.exists():
        pytest.skip(f"no fio-{version} fixtures")
    size = job_size(base / "jobs" / f"{name}.fio")
    files = sorted((base / "out").glob(f"{name}.*"))
    assert len(files) >= 5
    for path in files:
        result = parse_one(path)
        assert result.metrics[f"{direction}.io_bytes"] == size, path.name
