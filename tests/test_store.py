"""The results store, run against SQLite and (marked `postgres`) a real PostgreSQL server."""

from __future__ import annotations

import multiprocessing
import os
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import fields
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import create_engine, event, text

from iolab.errors import StoreError
from iolab.model.result import Job, Result
from iolab.model.sample import RunInfo, Sample
from iolab.store import Store, convert, open_store
from iolab.store.migrate import alembic_config
from iolab.store.revision import VERSION_TABLE
from iolab.store.schema import metadata
from store_backends import BACKENDS, location_for

TABLES = (
    "runs",
    "run_tags",
    "samples",
    "metrics",
    "histograms",
    "regressions",
    "regression_events",
    "regression_keys",
    "fleet_hosts",
    "block_attempts",
    "run_cancels",
)
REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(params=BACKENDS)
def location(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    yield from location_for(request.param, tmp_path)


@pytest.fixture
def store(location: str) -> Iterator[Store]:
    with open_store(location) as opened:
        yield opened


def row_counts(store: Store) -> dict[str, int]:
    with store.engine.connect() as conn:
        return {t: conn.execute(text(f"SELECT count(*) FROM {t}")).scalar_one() for t in TABLES}


def lab_sample(run_id: int, variant: str, block: int, **cell: Any) -> Sample:
    """A sample shaped like the lab's: synthetic numbers, every field filled."""
    start = datetime(2026, 1, 2, 3, 4, 5, tzinfo=timezone(timedelta(hours=2)))
    return Sample(
        run_id=run_id,
        variant=variant,
        cell=dict(cell),
        block=block,
        position=block % 2,
        tool="fio",
        tool_version="fio-3.33",
        format="fio-json+",
        source=f"run/{variant}/{block}",
        caption=None,
        metrics={"write.iops": 1000.0 + block, "jbd2.handles_per_txn": 60.5},
        job_metrics={"w1": {"write.iops": 600.0}, "w2": {"write.iops": 400.0 + block}},
        histograms={"write.clat_ns": {1000.0: 5, 2048.5: 7}, "ext4.pages_per_writepages": {1.0: 3}},
        job_histograms={"w1": {"write.clat_ns": {1000.0: 5}}},
        provenance={"kernel": "6.1.0", "sysctl": {"vm.dirty_bytes": 0}},
        started_at=start,
        finished_at=start + timedelta(seconds=2),
    )


def fio_like_result(source: str, iops: float) -> Result:
    """A Result shaped like fio's numjobs=2: two jobs with the same name."""
    jobs = [
        Job(name="randread", metrics={"read.iops": iops / 2}, options={"rw": "randread"}),
        Job(
            name="randread",
            metrics={"read.iops": iops / 2},
            histograms={"read.clat_ns": {10.0: 1}},
        ),
    ]
    return Result(
        tool="fio",
        format="fio-json",
        source=source,
        tool_version="fio-3.33",
        caption="before the revert",
        metrics={"read.iops": iops, "read.clat_ns.p99": 123456.0},
        jobs=jobs,
        histograms={"read.clat_ns": {10.0: 2}},
        options={"bs": "4k"},
    )


# -- schema --------------------------------------------------------------------------------


def test_migrations_create_exactly_the_orm_schema(store: Store) -> None:
    with store.engine.connect() as conn:
        ctx = MigrationContext.configure(
            conn, opts={"version_table": VERSION_TABLE, "compare_type": True}
        )
        heads = ScriptDirectory.from_config(alembic_config()).get_heads()
        assert len(heads) == 1, f"the migrations must have one head, not {heads}"
        assert ctx.get_current_heads() == tuple(heads)
        assert compare_metadata(ctx, metadata) == []
        names = set(conn.dialect.get_table_names(conn))
    assert names == {*TABLES, VERSION_TABLE}


def test_reopen_keeps_data(location: str) -> None:
    with open_store(location) as first:
        run_id = first.create_run("lab", label="keep")
    with open_store(location) as second:
        assert second.run(run_id).label == "keep"


# -- runs ----------------------------------------------------------------------------------


def test_run_roundtrip_and_finish(store: Store) -> None:
    before = datetime.now(UTC)
    run_id = store.create_run(
        "lab",
        label="ext4-fsync",
        tags={"kernel": "6.1", "host": "box"},
        plan_path="examples/a.yaml",
        plan_text="target: {}\n",
        plan_hash="abc123",
        host="box",
        meta={"kpis": ["write.iops"], "seed": 7},
    )
    run = store.run(run_id)
    assert (run.kind, run.label, run.status) == ("lab", "ext4-fsync", "running")
    assert run.tags == {"kernel": "6.1", "host": "box"}
    assert (run.plan_path, run.plan_text, run.plan_hash, run.host) == (
        "examples/a.yaml",
        "target: {}\n",
        "abc123",
        "box",
    )
    assert run.meta == {"kpis": ["write.iops"], "seed": 7}
    assert run.created_at.tzinfo is not None and run.created_at.utcoffset() == timedelta(0)
    assert before - timedelta(seconds=1) <= run.created_at <= datetime.now(UTC)
    assert run.finished_at is None and run.n_samples == 0

    store.finish_run(run_id, "interrupted")
    run = store.run(run_id)
    assert run.status == "interrupted" and run.finished_at is not None
    store.finish_run(run_id, "running")  # --resume reopens it
    assert store.run(run_id).finished_at is None
    store.update_run_meta(run_id, {"blocks": 3})
    assert store.run(run_id).meta == {"kpis": ["write.iops"], "seed": 7, "blocks": 3}


def test_missing_run_is_a_store_error(store: Store) -> None:
    with pytest.raises(StoreError, match="no run 999"):
        store.run(999)
    with pytest.raises(StoreError, match="no run 999"):
        store.finish_run(999, "finished")
    with pytest.raises(StoreError, match="no run 999"):
        store.add_sample(Sample(run_id=999))


def test_runs_filter_by_label_kind_tags(store: Store) -> None:
    a = store.create_run("lab", label="a", tags={"kernel": "6.1"})
    b = store.create_run("ab", label="b", tags={"kernel": "6.2"})
    c = store.create_run("lab", label="a", tags={"kernel": "6.2", "fs": "xfs"})
    assert [r.id for r in store.runs()] == [a, b, c]
    assert [r.id for r in store.runs(label="a")] == [a, c]
    assert [r.id for r in store.runs(kind="ab")] == [b]
    assert [r.id for r in store.runs(tags={"kernel": "6.2"})] == [b, c]
    assert [r.id for r in store.runs(tags={"kernel": "6.2", "fs": "xfs"})] == [c]
    assert store.labels() == ["a", "b"]


# -- samples -------------------------------------------------------------------------------


def test_sample_roundtrip(store: Store) -> None:
    run_id = store.create_run("lab", label="L", tags={"k": "v"})
    written = lab_sample(run_id, "fsync", 3, fs="ext4", writers=10)
    sample_id = store.add_sample(written)
    [read] = store.samples(run_id=run_id)
    assert read.id == sample_id
    assert (read.label, read.tags) == ("L", {"k": "v"})
    for name in (
        "run_id",
        "status",
        "reason",
        "variant",
        "cell",
        "block",
        "position",
        "tool",
        "tool_version",
        "format",
        "source",
        "caption",
        "metrics",
        "job_metrics",
        "histograms",
        "job_histograms",
        "provenance",
        "started_at",
        "finished_at",
    ):
        assert getattr(read, name) == getattr(written, name), name
    assert read.started_at is not None and read.started_at.utcoffset() == timedelta(0)
    assert read.case_key == written.case_key


def test_failed_sample_keeps_its_reason_and_no_numbers(store: Store) -> None:
    run_id = store.create_run("lab")
    store.add_sample(
        Sample(
            run_id=run_id,
            variant="a",
            block=0,
            status="failed",
            reason="mount: wrong fs type (dmesg: EXT4-fs: bad option)",
        )
    )
    store.add_sample(lab_sample(run_id, "a", 1))
    assert len(store.samples(run_id=run_id)) == 1
    [failed] = store.samples(run_id=run_id, status="failed")
    assert failed.reason is not None and "bad option" in failed.reason
    assert failed.metrics == {}
    assert len(store.samples(run_id=run_id, status=None)) == 2
    assert (store.run(run_id).n_samples, store.run(run_id).n_failed) == (2, 1)


def test_samples_filters(store: Store) -> None:
    r1 = store.create_run("lab", label="one", tags={"kernel": "6.1"})
    r2 = store.create_run("lab", label="two", tags={"kernel": "6.2"})
    for run_id in (r1, r2):
        for block in range(2):
            for variant in ("fsync", "fdatasync"):
                for writers in (1, 10):
                    store.add_sample(lab_sample(run_id, variant, block, fs="xfs", writers=writers))
    assert len(store.samples()) == 16
    assert len(store.samples(run_id=r1)) == 8
    assert {s.run_id for s in store.samples(label="two")} == {r2}
    assert {s.run_id for s in store.samples(tags={"kernel": "6.1"})} == {r1}
    assert store.samples(tags={"kernel": "7.0"}) == []
    picked = store.samples(run_id=r1, variant="fsync", cell={"writers": "10"})
    assert [(s.variant, s.cell["writers"], s.block) for s in picked] == [
        ("fsync", 10, 0),
        ("fsync", 10, 1),
    ]
    assert store.samples(run_id=r1, cell={"fs": "ext4"}) == []
    assert len(store.samples(run_id=r1, cell={"fs": "xfs", "writers": 1})) == 4
    only = store.samples(run_id=r1, metrics=["write.iops"], with_jobs=False, with_histograms=False)
    assert all(
        set(s.metrics) == {"write.iops"} and not s.job_metrics and not s.histograms for s in only
    )
    assert store.variants(r1) == ["fsync", "fdatasync"]
    assert store.cells(r1) == [{"fs": "xfs", "writers": 1}, {"fs": "xfs", "writers": 10}]
    assert store.metric_names(run_id=r1) == ["jbd2.handles_per_txn", "write.iops"]


def test_samples_load_without_a_query_per_sample(store: Store) -> None:
    """The number of statements must not grow with the number of samples."""

    def statements_for(n: int) -> int:
        run_id = store.create_run("lab")
        for block in range(n):
            store.add_sample(lab_sample(run_id, "v", block))
        seen: list[str] = []

        def count(*args: Any) -> None:
            seen.append(args[2])

        event.listen(store.engine, "before_cursor_execute", count)
        try:
            assert len(store.samples(run_id=run_id)) == n
        finally:
            event.remove(store.engine, "before_cursor_execute", count)
        return len([s for s in seen if s.lstrip().upper().startswith("SELECT")])

    assert statements_for(2) == statements_for(40)


def test_done_keys(store: Store) -> None:
    run_id = store.create_run("lab")
    ok = lab_sample(run_id, "fsync", 0, writers=1)
    store.add_sample(ok)
    store.add_sample(
        Sample(
            run_id=run_id,
            variant="fdatasync",
            cell={"writers": 1},
            block=0,
            status="failed",
            reason="fio: error",
        )
    )
    other = store.create_run("lab")
    store.add_sample(lab_sample(other, "fsync", 5, writers=1))
    failed_key = ("writers=1|fdatasync", 0)
    assert store.done_keys(run_id) == {(ok.case_key, 0), failed_key}
    assert store.done_keys(run_id, include_failed=False) == {(ok.case_key, 0)}


def test_nan_is_not_stored_as_a_number(store: Store) -> None:
    run_id = store.create_run("lab")
    store.add_sample(Sample(run_id=run_id, metrics={"write.iops": float("nan"), "x": 1.0}))
    [sample] = store.samples(run_id=run_id)
    assert sample.metrics == {"x": 1.0}


def test_add_sample_is_one_transaction(store: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    """A failure after the sample and its metrics were sent leaves nothing of the sample."""
    run_id = store.create_run("lab")
    store.add_sample(lab_sample(run_id, "v", 0))
    before = row_counts(store)

    def broken(sample_id: int, sample: Sample) -> list[dict[str, Any]]:
        raise RuntimeError("crash between metrics and histograms")

    monkeypatch.setattr(convert, "histogram_rows", broken)
    with pytest.raises(RuntimeError):
        store.add_sample(lab_sample(run_id, "v", 1))
    assert row_counts(store) == before


def test_delete_run(store: Store) -> None:
    keep = store.create_run("lab", tags={"a": "b"})
    store.add_sample(lab_sample(keep, "v", 0))
    kept = row_counts(store)
    gone = store.create_run("lab", tags={"a": "b"})
    store.add_sample(lab_sample(gone, "v", 0))
    store.delete_run(gone)
    assert row_counts(store) == kept
    with pytest.raises(StoreError):
        store.delete_run(gone)


# -- imports -------------------------------------------------------------------------------


def test_import_results_roundtrip(store: Store) -> None:
    results = [fio_like_result("a.json", 100.0), fio_like_result("b.json", 90.0)]
    run_id = store.import_results(results, "mail-thread", {"list": "linux-ext4"})
    run = store.run(run_id)
    assert (run.kind, run.label, run.status, run.n_samples) == (
        "import",
        "mail-thread",
        "finished",
        2,
    )
    assert run.finished_at is not None and run.tags == {"list": "linux-ext4"}
    samples = store.samples(label="mail-thread")
    assert [s.source for s in samples] == ["a.json", "b.json"]
    first = samples[0]
    assert first.metrics == results[0].metrics
    assert (first.tool, first.tool_version, first.format, first.caption) == (
        "fio",
        "fio-3.33",
        "fio-json",
        "before the revert",
    )
    # numjobs clones share a name; both are kept, numbered in source order
    assert first.job_metrics == {
        "randread#1": {"read.iops": 50.0},
        "randread#2": {"read.iops": 50.0},
    }
    assert first.histograms == {"read.clat_ns": {10.0: 2}}
    assert first.job_histograms == {"randread#2": {"read.clat_ns": {10.0: 1}}}
    assert first.provenance["options"] == {"bs": "4k"}
    assert first.provenance["jobs"]["randread#1"]["options"] == {"rw": "randread"}
    assert (first.variant, first.block, first.cell) == (None, None, {})


def test_import_is_all_or_nothing(store: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    store.import_results([fio_like_result("old.json", 1.0)], "old", {})
    before = row_counts(store)
    real = convert.sample_from_result
    calls = []

    def fails_on_third(result: Result, run_id: int) -> Sample:
        calls.append(result.source)
        if len(calls) == 3:
            raise RuntimeError("disk full")
        return real(result, run_id)

    monkeypatch.setattr(convert, "sample_from_result", fails_on_third)
    results = [fio_like_result(f"{i}.json", float(i)) for i in range(4)]
    with pytest.raises(RuntimeError):
        store.import_results(results, "new", {"k": "v"})
    assert len(calls) == 3  # two samples were written before the failure
    assert row_counts(store) == before
    assert store.labels() == ["old"]


def test_job_keys() -> None:
    assert convert.job_keys(["a", "b"]) == ["a", "b"]
    assert convert.job_keys(["a", "a", "b", "a"]) == ["a#1", "a#2", "b", "a#3"]
    assert convert.job_keys([""]) == ["job#1"]


# -- location and refusal (SQLite files) ---------------------------------------------------


def test_default_location_follows_xdg(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("IOLAB_DB", raising=False)
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    with open_store(None) as opened:
        assert opened.location == str(tmp_path / "xdg" / "iolab" / "iolab.db")
    assert (tmp_path / "xdg" / "iolab" / "iolab.db").is_file()
    monkeypatch.delenv("XDG_DATA_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    with open_store(None) as opened:
        assert opened.location == str(tmp_path / "home" / ".local" / "share" / "iolab" / "iolab.db")


def test_iolab_db_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("IOLAB_DB", str(tmp_path / "env.db"))
    with open_store(None) as opened:
        opened.create_run("import", label="x")
    assert (tmp_path / "env.db").is_file()
    with open_store(f"sqlite:///{tmp_path / 'env.db'}") as by_url:
        assert by_url.labels() == ["x"]


def test_sqlite_pragmas(tmp_path: Path) -> None:
    with open_store(str(tmp_path / "p.db")) as opened, opened.engine.connect() as conn:
        assert conn.exec_driver_sql("PRAGMA journal_mode").scalar_one() == "wal"
        assert conn.exec_driver_sql("PRAGMA foreign_keys").scalar_one() == 1


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"#!/bin/sh\necho hello\n", "not an SQLite database"),
        (b"\x00\x01\x02garbage" * 100, "not an SQLite database"),
    ],
)
def test_refuses_a_file_that_is_not_sqlite(tmp_path: Path, content: bytes, message: str) -> None:
    path = tmp_path / "notes.txt"
    path.write_bytes(content)
    with pytest.raises(StoreError, match=message) as info:
        open_store(str(path))
    assert "\n" not in info.value.message and str(path) in info.value.message
    assert path.read_bytes() == content


def test_refuses_a_directory(tmp_path: Path) -> None:
    with pytest.raises(StoreError, match="is a directory"):
        open_store(str(tmp_path))


def test_refuses_another_applications_sqlite(tmp_path: Path) -> None:
    path = tmp_path / "other.db"
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE bookmarks (url TEXT)")
    with pytest.raises(StoreError, match="not an iolab store"):
        open_store(str(path))
    with sqlite3.connect(path) as conn:
        tables = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")]
    assert tables == ["bookmarks"]


def test_refuses_a_store_from_a_newer_iolab(tmp_path: Path) -> None:
    path = tmp_path / "new.db"
    open_store(str(path)).close()
    with sqlite3.connect(path) as conn:
        conn.execute(f"UPDATE {VERSION_TABLE} SET version_num = '9999'")
    with pytest.raises(StoreError, match="newer iolab"):
        open_store(str(path))


def test_unreachable_server_is_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("IOLAB_DB_WAIT_S", "0")  # refused at once, not waited for
    with pytest.raises(StoreError, match="cannot open store") as info:
        open_store("postgresql+psycopg://nobody:secret@127.0.0.1:1/none?connect_timeout=2")
    assert "\n" not in info.value.message and "secret" not in info.value.message


def test_bad_url_is_one_line() -> None:
    with pytest.raises(StoreError):
        open_store("nosuchdb+driver://x/y")


def _writer(path: str, variant: str, n: int) -> None:
    with open_store(path) as opened:
        run_id = opened.runs(label="race")[0].id
        for block in range(n):
            opened.add_sample(lab_sample(run_id, variant, block))


def test_concurrent_writers_on_one_sqlite_file(tmp_path: Path) -> None:
    """Two processes writing samples at once (two lab runs, one store) both succeed."""
    path = str(tmp_path / "race.db")
    with open_store(path) as opened:
        run_id = opened.create_run("lab", label="race")
    ctx = multiprocessing.get_context("spawn")
    procs = [ctx.Process(target=_writer, args=(path, v, 25)) for v in ("a", "b")]
    for proc in procs:
        proc.start()
    for proc in procs:
        proc.join(120)
    assert [proc.exitcode for proc in procs] == [0, 0]
    with open_store(path) as opened:
        assert len(opened.samples(run_id=run_id)) == 50


def test_alembic_command_line_uses_the_shipped_ini(tmp_path: Path) -> None:
    """Developers run `alembic -c src/iolab/store/alembic.ini ...` against $IOLAB_DB."""
    path = tmp_path / "cli.db"
    ini = REPO / "src" / "iolab" / "store" / "alembic.ini"
    env = {**os.environ, "IOLAB_DB": str(path)}
    subprocess.run(
        [sys.executable, "-m", "alembic", "-c", str(ini), "upgrade", "head"],
        check=True,
        env=env,
        capture_output=True,
    )
    engine = create_engine(f"sqlite:///{path}")
    try:
        with engine.connect() as conn:
            ctx = MigrationContext.configure(conn, opts={"version_table": VERSION_TABLE})
            assert compare_metadata(ctx, metadata) == []
    finally:
        engine.dispose()


def test_fields_stored_as_they_are_have_a_column_of_their_name() -> None:
    """`convert` copies these by name both ways: a renamed field or column must fail here."""
    samples, runs = metadata.tables["samples"], metadata.tables["runs"]
    for names, model, table in (
        (convert.SAMPLE_AS_IS, Sample, samples),
        (convert.RUN_AS_IS, RunInfo, runs),
    ):
        assert set(names) <= {f.name for f in fields(model)} & set(table.c.keys())
