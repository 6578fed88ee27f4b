"""The SQLite reader (stdlib sqlite3, for `iolab results`) and `Store` (SQLAlchemy) read the
same store alike, field for field; a file the reader must not read is left to `Store`."""

from __future__ import annotations

import shutil
import sqlite3
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

import pytest

from iolab.errors import StoreError
from iolab.ingest.detect import parse_source
from iolab.model.sample import Sample
from iolab.store import Store, open_reader, open_store
from iolab.store.sqlite_reader import SQLiteReader
from store_backends import location_for

DATA = Path(__file__).parent / "data"
# real fio outputs: several jobs (numbered clones too), latency bins, fio 2.x and 3.x
IMPORTS = [
    DATA / "fio-3.33" / "out" / "randread-3jobs.json",
    DATA / "fio-3.33" / "out" / "randread-3jobs.plus.json",
    DATA / "fio-3.33" / "out" / "randwrite-3jobs-group.json",
    DATA / "fio-3.33" / "out" / "randrw-libaio-direct.plus.json",
    DATA / "fio-2.16" / "out" / "randrw-libaio-direct.json",
    *sorted((DATA / "fio-repeats" / "out").glob("A-*.json"))[:3],
]


def lab_sample(run_id: int, variant: str | None, block: int, ok: bool = True) -> Sample:
    start = datetime(2026, 3, 4, 5, 6, 7, 890123, tzinfo=timezone(timedelta(hours=-5)))
    return Sample(
        run_id=run_id,
        variant=variant,
        cell={"fs": "ext4", "writers": block % 3, "opts": ["a", "b"]},
        block=block,
        position=block % 2,
        status="ok" if ok else "failed",
        reason=None if ok else "fio exited 1: réessayer",
        tool="fio",
        tool_version="fio-3.33",
        format="fio-json+",
        source=f"run/{variant}/{block}",
        metrics={"write.iops": 1000.0 + block, "elapsed_s": 2.5} if ok else {},
        job_metrics={"w1": {"write.iops": 600.0}, "w#2": {"write.iops": 400.0}} if ok else {},
        histograms={"write.clat_ns": {1000.0: 5, 2048.5: 7}} if ok else {},
        job_histograms={"w1": {"write.clat_ns": {1000.0: 5}}} if ok else {},
        provenance={"kernel": "6.1.0", "sysctl": {"vm.dirty_bytes": 0}},
        started_at=start,
        finished_at=start + timedelta(seconds=2),
        host=f"worker-{block % 2}",
    )


def populate(store: Store) -> list[int]:
    """Imports of real fio outputs, a finished lab run with failed samples, tags and meta,
    and a run still running (no finish time, no samples)."""
    results = [r for path in IMPORTS for r in parse_source(str(path))]
    ids = [store.import_results(results, "imported", tags={"kernel": "6.1", "fs": "xfs"})]
    lab = store.create_run(
        "lab",
        label="lab ünïcode",
        tags={"kernel": "6.2"},
        plan_text="cases: []\n",
        plan_hash="abc",
        plan_path="/p.yaml",
        host="h",
        meta={"kpis": [{"metric": "write.iops"}], "nested": {"a": [1, 2.5, None]}},
    )
    for block in range(4):
        for variant in ("a", None):
            store.add_sample(lab_sample(lab, variant, block, ok=block != 2))
    store.finish_run(lab, "interrupted")
    ids.append(lab)
    ids.append(store.create_run("ab", label=None, meta={}))
    ids.append(store.import_results(results[:1], "imported"))
    return ids


@pytest.fixture(scope="module")
def populated(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, list[int]]]:
    db = tmp_path_factory.mktemp("reader") / "s.db"
    with open_store(str(db)) as store:
        ids = populate(store)
    yield db, ids


def test_runs_read_alike(populated: tuple[Path, list[int]]) -> None:
    db, ids = populated
    with open_store(str(db), read_only=True) as store, open_reader(str(db)) as reader:
        assert isinstance(reader, SQLiteReader)
        assert reader.runs() == store.runs() and len(reader.runs()) == len(ids)
        for label in ("imported", "lab ünïcode", "nope"):
            assert reader.runs(label=label) == store.runs(label=label)
        for run_id in ids:
            assert reader.run(run_id) == store.run(run_id)
        lab = reader.run(ids[1])
        assert (lab.n_samples, lab.n_failed, lab.tags) == (8, 2, {"kernel": "6.2"})
        assert lab.created_at.tzinfo is UTC and lab.finished_at is not None
        assert reader.run(ids[2]).finished_at is None


@pytest.mark.parametrize(
    "options",
    [
        {},
        {"status": None},
        {"status": "failed"},
        {"with_jobs": False},
        {"with_histograms": False},
        {"metrics": ["write.iops", "read.clat_ns.p99", "absent"]},
        {"metrics": []},
        # the selectors' filters (`compare`, `report` and `export` read through the reader)
        {"label": "lab ünïcode"},
        {"label": "imported", "with_jobs": False},
        {"label": "nope"},
        {"variant": "a", "status": None},
        {"cell": {"fs": "ext4", "writers": "1"}},
        {"cell": {"writers": 2}, "variant": "a"},
        {"cell": {"fs": "xfs"}},
        {"tags": {"kernel": "6.1", "fs": "xfs"}},
        {"tags": {"kernel": "6.2"}, "status": "failed"},
        {"tags": {"kernel": "6.1", "fs": "ext4"}},
        {"host": "worker-1", "status": None},
        {"host": "worker-0", "variant": "a"},
        {"host": "nope"},
        {"block": 2, "status": None},
        {"block": 3, "variant": "a"},
        {"block": 9},
    ],
    ids=repr,
)
def test_samples_read_alike(populated: tuple[Path, list[int]], options: dict[str, object]) -> None:
    db, ids = populated
    with open_store(str(db), read_only=True) as store, open_reader(str(db)) as reader:
        for run_id in [*ids, None]:
            want = store.samples(run_id=run_id, **options)  # type: ignore[arg-type]
            got = reader.samples(run_id=run_id, **options)  # type: ignore[arg-type]
            assert got == want
    # the comparison above means something only if it compared real content
    with open_reader(str(db)) as reader:
        imported = reader.samples(run_id=ids[0])
        assert imported and all(s.metrics for s in imported)
        assert any(s.job_histograms for s in imported) and any(s.histograms for s in imported)
        assert any(len(s.job_metrics) > 1 for s in imported)
        lab = reader.samples(run_id=ids[1], status=None)
        assert {s.status for s in lab} == {"ok", "failed"} and lab[0].started_at is not None
        assert lab[0].started_at.tzinfo is UTC and lab[0].cell["opts"] == ["a", "b"]


def test_selector_helpers_read_alike(populated: tuple[Path, list[int]]) -> None:
    """What a selector's hints read: labels, a run's variants and cells."""
    db, ids = populated
    with open_store(str(db), read_only=True) as store, open_reader(str(db)) as reader:
        assert reader.labels() == store.labels() == ["imported", "lab ünïcode"]
        for run_id in ids:
            assert reader.variants(run_id) == store.variants(run_id)
            assert reader.cells(run_id) == store.cells(run_id)
        assert reader.variants(ids[1]) == ["a"] and len(reader.cells(ids[1])) == 3


def test_an_absent_run_is_one_line(populated: tuple[Path, list[int]]) -> None:
    db, _ = populated
    with open_reader(str(db)) as reader:
        for run_id in (999, 2**40, -(2**70)):
            with pytest.raises(StoreError, match=f"no run {run_id} in the store"):
                reader.run(run_id)


def test_what_the_reader_leaves_to_store(populated: tuple[Path, list[int]], tmp_path: Path) -> None:
    """Missing, foreign, damaged and other-revision files are not read here; `open_reader`
    then gives them to `open_store`, whose messages say what is wrong."""
    db, _ = populated
    assert SQLiteReader.open(tmp_path / "missing.db") is None
    assert SQLiteReader.open(tmp_path) is None
    header_only = tmp_path / "hdr.db"
    header_only.write_bytes(b"SQLite format 3\x00" + b"\x07" * 200)
    assert SQLiteReader.open(header_only) is None
    foreign = tmp_path / "foreign.db"
    with sqlite3.connect(foreign) as conn:
        conn.execute("CREATE TABLE t (x)")
    conn.close()
    assert SQLiteReader.open(foreign) is None
    with pytest.raises(StoreError, match="not an iolab store"):
        open_reader(str(foreign))
    older = tmp_path / "older.db"
    shutil.copy(db, older)
    with sqlite3.connect(older) as conn:
        conn.execute("UPDATE iolab_schema_version SET version_num = '0003'")
    conn.close()
    before = older.read_bytes()
    assert SQLiteReader.open(older) is None
    assert older.read_bytes() == before  # the reader wrote nothing
    with pytest.raises(StoreError, match="no iolab store there"):
        open_reader(str(tmp_path / "missing.db"))


def test_reading_leaves_no_wal_files_and_cannot_write(
    populated: tuple[Path, list[int]], tmp_path: Path
) -> None:
    """Both readers of a store the user could write open it read-write but query-only: a
    statement that writes is refused, and closing removes the -wal and -shm files any reader
    of a WAL database makes (a `mode=ro` reader left them after every `compare`)."""
    from sqlalchemy import text
    from sqlalchemy.exc import OperationalError

    source, ids = populated
    db = tmp_path / "copy.db"
    shutil.copy(source, db)
    before = db.read_bytes()
    with open_reader(str(db)) as reader:
        assert isinstance(reader, SQLiteReader)
        assert len(reader.runs()) == len(ids)
        assert sorted(p.name for p in tmp_path.iterdir())[1:] == ["copy.db-shm", "copy.db-wal"]
        with pytest.raises(sqlite3.OperationalError, match="readonly"):
            reader._db.execute("DELETE FROM runs")
    with open_store(str(db), read_only=True) as store:
        assert len(store.runs()) == len(ids)
        with store.engine.connect() as conn, pytest.raises(OperationalError, match="readonly"):
            conn.execute(text("DELETE FROM runs"))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["copy.db"]
    assert db.read_bytes() == before


@pytest.fixture(params=["sqlite-url", pytest.param("postgres", marks=pytest.mark.postgres)])
def url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    if request.param == "sqlite-url":
        yield f"sqlite:///{tmp_path / 'u.db'}"
    else:
        yield from location_for(request.param, tmp_path)


def test_urls_are_read_through_store(url: str) -> None:
    with open_store(url) as store:
        run_id = store.import_results(parse_source(str(IMPORTS[0])), "u")
    with open_reader(url) as reader:
        assert isinstance(reader, Store)
        assert [r.id for r in reader.runs()] == [run_id]
