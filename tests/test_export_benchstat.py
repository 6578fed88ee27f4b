"""`iolab export` writes raw samples in Go's benchmark format that the real benchstat reads
(issue 13): two sides of imported real fio runs (tests/data/fio-repeats) are exported, fed to
golang.org/x/perf/cmd/benchstat, and benchstat's medians must equal iolab's, its p-values
iolab's raw p to benchstat's 3 decimals (both exact Mann–Whitney, with ties).

benchstat is installed with `go install` into a cache directory (IOLAB_TEST_CACHE, default
~/.cache/iolab-tests) once; later runs reuse it.  If Go or the module proxy is unavailable the
test fails: it is not skipped."""

from __future__ import annotations

import csv
import io
import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner

from iolab.cli.main import cli

DATA = Path(__file__).parent / "data" / "fio-repeats" / "out"
CACHE = Path(os.environ.get("IOLAB_TEST_CACHE", Path.home() / ".cache" / "iolab-tests"))
BENCHSTAT = "golang.org/x/perf/cmd/benchstat@latest"


def benchstat_binary() -> Path:
    gobin = CACHE / "gobin"
    binary = gobin / "benchstat"
    if binary.exists():
        return binary
    go = shutil.which("go") or "/usr/local/go/bin/go"
    gobin.mkdir(parents=True, exist_ok=True)
    env = {
        **os.environ,
        "GOBIN": str(gobin),
        "GOPATH": str(CACHE / "gopath"),
        "GOCACHE": str(CACHE / "gocache"),
    }
    subprocess.run([go, "install", BENCHSTAT], check=True, env=env, timeout=900)
    assert binary.exists()
    return binary


def iolab(db: Path, *args: str) -> str:
    result = CliRunner().invoke(cli, ["--db", str(db), *args], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result.output


def benchstat_tables(text: str) -> dict[str, tuple[float, float, str]]:
    """metric → (A centre, B centre, the P cell) from `benchstat -format csv`."""
    out: dict[str, tuple[float, float, str]] = {}
    for block in text.strip().split("\n\n"):
        rows = list(csv.reader(io.StringIO(block)))
        if len(rows) < 3 or rows[2][0] != "Iolab":
            continue
        unit = rows[1][1]
        out[unit] = (float(rows[2][1]), float(rows[2][3]), rows[2][6])
    return out


def test_benchstat_reads_the_export_and_agrees(tmp_path: Path) -> None:
    binary = benchstat_binary()
    db = tmp_path / "store.db"
    iolab(db, "import", "--label", "old", *map(str, sorted(DATA.glob("A-*.json"))))
    iolab(db, "import", "--label", "new", *map(str, sorted(DATA.glob("B-*.json"))))
    old, new = tmp_path / "old.txt", tmp_path / "new.txt"
    old.write_text(iolab(db, "export", "label:old"))
    new.write_text(iolab(db, "export", "label:new"))
    assert old.read_text().count("\nBenchmarkIolab 1 ") == 8

    done = subprocess.run(
        [str(binary), "-format", "csv", str(old), str(new)],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    tables = benchstat_tables(done.stdout)
    report = json.loads(iolab(db, "compare", "label:old", "label:new", "--format", "json", "--all"))
    rows = {m["name"]: m for m in report["groups"][0]["metrics"]}
    assert {"read.iops", "read.bw_bytes", "read.clat_ns.p99"} <= rows.keys() & tables.keys()
    for name, row in rows.items():
        a_median, b_median, p_cell = tables[name]
        assert a_median == pytest.approx(row["a"]["median"], rel=1e-9), name
        assert b_median == pytest.approx(row["b"]["median"], rel=1e-9), name
        p_benchstat = float(p_cell.split()[0].removeprefix("p="))
        assert abs(p_benchstat - row["p_value"]) <= 0.0005 + 1e-12, (name, p_cell, row["p_value"])


def test_export_filters_metrics_and_marks_directions(tmp_path: Path) -> None:
    db = tmp_path / "store.db"
    iolab(db, "import", "--label", "old", *map(str, sorted(DATA.glob("A-*.json"))))
    text = iolab(db, "export", "label:old", "--metric", "read.iops", "--metric", "*.p99")
    lines = text.splitlines()
    assert "Unit read.iops better=higher" in lines
    assert "Unit read.clat_ns.p99 better=lower" in lines
    benchmarks = [line.split() for line in lines if line.startswith("Benchmark")]
    assert len(benchmarks) == 8
    assert all(
        fields[1] == "1" and fields[3::2] == ["read.clat_ns.p99", "read.iops"]
        for fields in benchmarks
    )
