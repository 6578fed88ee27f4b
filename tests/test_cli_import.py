"""`iolab import` and `iolab results` on real fio outputs (tests/data/fio-3.33)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result
from sqlalchemy import create_engine, text

from iolab.cli.main import cli
from iolab.ingest.detect import parse_source
from iolab.store import open_store

DATA = Path(__file__).parent / "data" / "fio-3.33" / "out"
RANDREAD = str(DATA / "randread-3jobs.json")
TWO_GROUPS = str(DATA / "two-groups.plus.json")
TABLES = ("runs", "run_tags", "samples", "metrics", "histograms")


def iolab(db: Path, *args: str, input: str | None = None) -> Result:
    return CliRunner().invoke(cli, ["--db", str(db), *args], input=input, env={"COLUMNS": "250"})


def one_line_error(result: Result) -> str:
    assert result.exit_code == 2, result.output
    assert result.stdout == ""
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("iolab: "), result.stderr
    return lines[0]


def row_counts(db: Path) -> dict[str, int]:
    if not db.exists():
        return dict.fromkeys(TABLES, 0)
    engine = create_engine(f"sqlite:///{db}")
    try:
        with engine.connect() as conn:
            return {t: conn.execute(text(f"SELECT count(*) FROM {t}")).scalar_one() for t in TABLES}
    finally:
        engine.dispose()


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return tmp_path / "iolab.db"


def test_import_then_results(db: Path) -> None:
    parsed = parse_source(RANDREAD) + parse_source(TWO_GROUPS)
    result = iolab(
        db,
        "import",
        RANDREAD,
        TWO_GROUPS,
        "--label",
        "baseline",
        "--tag",
        "kernel=6.1.0",
        "--tag",
        "fs=ext4",
    )
    assert result.exit_code == 0, result.output
    assert result.stdout.strip() == (
        f"imported {len(parsed)} results from 2 files as run 1 (label baseline)"
    )

    runs = json.loads(iolab(db, "results", "--json").stdout)
    assert len(runs) == 1
    run = runs[0]
    assert (run["id"], run["kind"], run["label"], run["status"]) == (
        1,
        "import",
        "baseline",
        "finished",
    )
    assert run["tags"] == {"fs": "ext4", "kernel": "6.1.0"}
    assert (run["n_samples"], run["n_failed"]) == (len(parsed), 0)

    samples = json.loads(iolab(db, "results", "--run", "1", "--json").stdout)
    assert len(samples) == len(parsed)
    for stored, original in zip(samples, parsed, strict=True):
        expected = original.to_json()
        assert stored["metrics"] == expected["metrics"]
        assert stored["source"] == expected["source"]
        assert (stored["tool"], stored["format"]) == (expected["tool"], expected["format"])
        assert len(stored["jobs"]) == len(expected["jobs"])
        for job, original_job in zip(stored["jobs"], expected["jobs"], strict=True):
            assert job["metrics"] == original_job["metrics"]
            assert job["name"].split("#")[0] == original_job["name"]
        assert stored["histograms"] == expected.get("histograms", {})
        assert (stored["label"], stored["tags"]["kernel"]) == ("baseline", "6.1.0")


def test_results_tables(db: Path) -> None:
    assert iolab(db, "import", RANDREAD, "--label", "base", "--tag", "k=v").exit_code == 0
    assert iolab(db, "import", TWO_GROUPS, "--label", "other").exit_code == 0
    listing = iolab(db, "results")
    assert listing.exit_code == 0
    assert "base" in listing.stdout and "other" in listing.stdout and "k=v" in listing.stdout
    only = iolab(db, "results", "--label", "other")
    assert "other" in only.stdout and "base" not in only.stdout
    samples = iolab(db, "results", "--run", "1")
    assert samples.exit_code == 0
    assert "read.iops" in samples.stdout and RANDREAD in samples.stdout.replace("\n", "")
    iops = parse_source(RANDREAD)[0].metrics["read.iops"]
    assert f"{iops:,.0f}" in samples.stdout


def test_a_bad_file_stores_nothing(db: Path, tmp_path: Path) -> None:
    assert iolab(db, "import", RANDREAD, "--label", "first").exit_code == 0
    before = row_counts(db)
    assert before["samples"] > 0
    truncated = tmp_path / "truncated.json"
    truncated.write_text(Path(RANDREAD).read_text()[:1500])
    garbage = tmp_path / "garbage.bin"
    garbage.write_bytes(bytes(range(256)) * 8)
    for bad in (truncated, garbage, tmp_path / "missing.json"):
        line = one_line_error(
            iolab(db, "import", TWO_GROUPS, str(bad), RANDREAD, "--label", "second")
        )
        assert str(bad) in line
        assert row_counts(db) == before


def test_nothing_is_created_when_the_first_import_fails(db: Path, tmp_path: Path) -> None:
    empty = tmp_path / "empty.txt"
    empty.write_text("")
    one_line_error(iolab(db, "import", RANDREAD, str(empty), "--label", "x"))
    assert row_counts(db) == dict.fromkeys(TABLES, 0)


@pytest.mark.parametrize("tag", ["novalue", "=x", "key=", "bad key=1", "k=1 --tag k=2"])
def test_bad_tags(db: Path, tag: str) -> None:
    args = ["import", RANDREAD, "--label", "x"]
    for part in tag.split(" --tag "):
        args += ["--tag", part]
    line = one_line_error(iolab(db, *args))
    assert "--tag" in line
    assert row_counts(db) == dict.fromkeys(TABLES, 0)


def test_label_is_required(db: Path) -> None:
    assert "--label" in one_line_error(iolab(db, "import", RANDREAD))


def test_standard_input(db: Path) -> None:
    result = iolab(db, "import", "-", "--label", "pasted", input=Path(TWO_GROUPS).read_text())
    assert result.exit_code == 0, result.output
    samples = json.loads(iolab(db, "results", "--run", "1", "--json").stdout)
    assert {s["source"] for s in samples} == {"-"}
    assert [s["metrics"] for s in samples] == [r.metrics for r in parse_source(TWO_GROUPS)]


def test_results_errors(db: Path, tmp_path: Path) -> None:
    open_store(str(db)).close()
    assert "no run 42" in one_line_error(iolab(db, "results", "--run", "42"))
    one_line_error(iolab(db, "results", "--run", "1", "--label", "x"))
    notes = tmp_path / "notes.txt"
    notes.write_text("not a database\n")
    assert "not an SQLite database" in one_line_error(iolab(notes, "results"))


def test_empty_store_lists_nothing(db: Path) -> None:
    open_store(str(db)).close()
    assert json.loads(iolab(db, "results", "--json").stdout) == []
    assert "no runs" in iolab(db, "results").stdout


def test_real_process_with_iolab_db(tmp_path: Path) -> None:
    """The installed entry point, the store location from $IOLAB_DB."""
    env: dict[str, Any] = {**os.environ, "IOLAB_DB": str(tmp_path / "env.db")}
    env.pop("IOLAB_DEBUG", None)
    done = subprocess.run(
        [sys.executable, "-m", "iolab", "import", RANDREAD, "--label", "p"],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    listed = subprocess.run(
        [sys.executable, "-m", "iolab", "results", "--json"],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    assert [r["label"] for r in json.loads(listed.stdout)] == ["p"]


def test_lab_run_kpis_recorded_by_the_runner_become_columns() -> None:
    """The runner records KPIs as {"metric", "direction"} objects in the run's meta."""
    from datetime import UTC, datetime

    from iolab.cli.results_cmd import kpi_columns
    from iolab.model.sample import RunInfo, Sample

    run = RunInfo(
        id=1,
        kind="lab",
        label=None,
        status="finished",
        created_at=datetime.now(UTC),
        meta={"kpis": [{"metric": "write.bw_bytes", "direction": "higher"}]},
    )
    sample = Sample(run_id=1, metrics={"write.bw_bytes": 1.0, "write.iops": 2.0})
    assert kpi_columns(run, [sample]) == ["write.bw_bytes"]
