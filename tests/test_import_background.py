"""`iolab import` of many files: parsed by a second process while the first stores them
(ingest.background), on real fio outputs.  It must store exactly what parsing in-process
stores, keep the import all-or-nothing, and report a bad file — or a parser process that
died — in one line."""

from __future__ import annotations

import itertools
import math
import multiprocessing
import os
import pickle
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result
from sqlalchemy import text

from iolab.cli.main import cli
from iolab.errors import IngestError
from iolab.ingest import background, detect
from iolab.ingest.detect import parse_source
from iolab.model.result import Job
from iolab.model.result import Result as ParsedResult
from iolab.model.sample import Sample
from iolab.runs import imports
from iolab.store import convert, open_store
from iolab.store.store import _insert_indexed
from store_backends import BACKENDS, location_for

DATA = Path(__file__).parent / "data"
SOURCES = sorted(
    f
    for d in ("fio-3.33", "fio-2.16", "fio-json-extra")
    for f in (DATA / d / "out").glob("*.json")
    if not f.name.startswith("error")
)
COUNT = 260  # chunks of 50, 100 and 110 files: three batches


def runnable(sources: list[Path]) -> list[Path]:
    good = []
    for src in sources:
        try:
            parse_source(str(src))
        except IngestError:
            continue
        good.append(src)
    return good


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> list[str]:
    """COUNT copies of the fixtures, cycled (several fio versions, json+ with bins)."""
    directory = tmp_path_factory.mktemp("many")
    out = []
    for i, src in zip(range(COUNT), itertools.cycle(runnable(SOURCES)), strict=False):
        dst = directory / f"{i:04d}-{src.name}"
        shutil.copyfile(src, dst)
        out.append(str(dst))
    return out


@pytest.fixture(autouse=True)
def two_cpus() -> None:
    if len(os.sched_getaffinity(0)) < 2:
        pytest.skip("one CPU: imports parse in-process (background.worth_it)")


@pytest.fixture(params=BACKENDS)
def location(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    yield from location_for(request.param, tmp_path)


def iolab(location: str, *args: str) -> Result:
    return CliRunner().invoke(cli, ["--db", location, *args])


def stored(location: str, run_id: int) -> dict[str, list[tuple[Any, ...]]]:
    """A run's samples, metrics and bins, each keyed by the sample's place in the run."""
    place = "s.id - (SELECT min(id) FROM samples t WHERE t.run_id = s.run_id)"
    queries = {
        "samples": f"SELECT {place}, source, tool, tool_version, format, caption, started_at, "
        "provenance, jobs, cell_key, case_key FROM samples s WHERE s.run_id = :r ORDER BY 1",
        "metrics": f"SELECT {place}, m.job, m.name, m.value FROM metrics m "
        "JOIN samples s ON s.id = m.sample_id WHERE s.run_id = :r ORDER BY 1, 2, 3",
        "histograms": f"SELECT {place}, h.job, h.name, h.bin, h.count FROM histograms h "
        "JOIN samples s ON s.id = h.sample_id WHERE s.run_id = :r ORDER BY 1, 2, 3, 4",
    }
    with open_store(location) as store, store.engine.connect() as conn:
        return {
            name: [tuple(row) for row in conn.execute(text(query), {"r": run_id})]
            for name, query in queries.items()
        }


def counts(location: str) -> dict[str, int]:
    with open_store(location) as store, store.engine.connect() as conn:
        return {
            t: conn.execute(text(f"SELECT count(*) FROM {t}")).scalar_one()
            for t in ("runs", "samples", "metrics", "histograms")
        }


def test_many_files_are_parsed_in_background(files: list[str]) -> None:
    assert background.worth_it(files)
    assert not background.worth_it(files[: background.MIN_FILES - 1])
    assert not background.worth_it([*files, "-"])  # standard input stays in-process
    assert [len(c) for c in background.chunks(files)] == [50, 100, 110]


@pytest.fixture
def used(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """How many files each background parse was given (the real one runs)."""
    calls: list[int] = []
    real = background.parsed_in_background

    def spy(paths: Any) -> Any:
        calls.append(len(paths))
        return real(paths)

    monkeypatch.setattr(background, "parsed_in_background", spy)
    return calls


def test_background_import_stores_what_an_in_process_one_stores(
    files: list[str],
    location: str,
    monkeypatch: pytest.MonkeyPatch,
    used: list[int],
) -> None:
    open_store(location).close()  # an existing store: a new one is only made by a success
    done = iolab(location, "import", *files, "--label", "many")
    assert used == [COUNT]
    assert done.exit_code == 0, done.output
    expected_results = [r for f in files for r in parse_source(f)]
    assert done.stdout.strip() == (
        f"imported {len(expected_results)} results from {COUNT} files as run 1 (label many)"
    )
    monkeypatch.setattr(background, "MIN_FILES", 10**9)
    assert not background.worth_it(files)
    assert iolab(location, "import", *files, "--label", "reference").exit_code == 0
    assert used == [COUNT]  # the reference, run 2, was parsed in-process
    ours, theirs = stored(location, 1), stored(location, 2)
    assert len(ours["samples"]) == len(expected_results)
    assert len(ours["histograms"]) > 0
    assert ours == theirs


def test_a_bad_file_in_a_later_chunk_stores_nothing(
    files: list[str], location: str, tmp_path: Path, used: list[int]
) -> None:
    assert iolab(location, "import", *files[:3], "--label", "first").exit_code == 0
    before = counts(location)
    bad = tmp_path / "truncated.json"
    bad.write_text(Path(files[0]).read_text()[:700])
    many = [*files[:200], str(bad), *files[200:]]  # in the third chunk
    done = iolab(location, "import", *many, "--label", "second")
    assert done.exit_code == 2, done.output
    assert done.stdout == ""
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"iolab: {bad}: "), done.stderr
    assert counts(location) == before
    assert used == [len(many)]
    assert multiprocessing.active_children() == []


def test_a_bad_first_file_stops_before_the_store_is_opened(
    files: list[str], tmp_path: Path, used: list[int], monkeypatch: pytest.MonkeyPatch
) -> None:
    db = tmp_path / "iolab.db"
    open_store(str(db)).close()
    opened: list[str] = []
    monkeypatch.setattr(imports, "open_store", lambda where: opened.append(where))
    missing = str(tmp_path / "missing.json")
    done = iolab(str(db), "import", missing, *files, "--label", "x")
    assert done.exit_code == 2
    assert done.stderr.strip() == f"iolab: {missing}: no such file"
    assert used == [COUNT + 1] and opened == []


def test_a_new_store_is_made_only_by_an_import_that_succeeds(
    files: list[str], tmp_path: Path, used: list[int]
) -> None:
    """Into a store that does not exist yet, every file is parsed before it is created."""
    db = tmp_path / "new" / "iolab.db"
    bad = tmp_path / "empty.json"
    bad.write_text("")
    done = iolab(str(db), "import", *files[:220], str(bad), *files[220:], "--label", "x")
    assert done.exit_code == 2
    assert done.stderr.strip() == f"iolab: {bad}: empty input, no result in it"
    assert not db.exists() and used == []
    assert iolab(str(db), "import", *files, "--label", "x").exit_code == 0
    assert used == [] and counts(str(db))["samples"] >= COUNT


def test_a_parser_process_that_dies_is_one_line(
    files: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Killed (out of memory, say) while parsing: the import stops, nothing is stored."""
    doomed = files[120]
    real = detect.parse_source

    def dies_on_one(path: str) -> list[Any]:
        if path == doomed:
            os._exit(9)  # in the forked parser only: the test process never reads it
        return real(path)

    monkeypatch.setattr(background, "parse_source", dies_on_one)
    db = str(tmp_path / "iolab.db")
    assert iolab(db, "import", *files[:3], "--label", "first").exit_code == 0
    before = counts(db)
    done = iolab(db, "import", *files, "--label", "second")
    assert done.exit_code == 2, done.output
    assert "stopped unexpectedly; nothing stored" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1
    assert counts(db) == before
    assert multiprocessing.active_children() == []


def test_a_parser_bug_is_an_internal_error(
    files: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(path: str) -> list[Any]:
        raise ZeroDivisionError("a bug")

    monkeypatch.setattr(background, "parse_source", broken)
    monkeypatch.delenv("IOLAB_DEBUG", raising=False)
    db = str(tmp_path / "iolab.db")
    open_store(db).close()
    done = iolab(db, "import", *files, "--label", "x")
    assert done.exit_code == 1
    assert "ZeroDivisionError: a bug" in done.stderr


def test_ingest_error_crosses_processes_intact() -> None:
    error = pickle.loads(pickle.dumps(IngestError("a.json", "truncated fio JSON")))
    assert isinstance(error, IngestError)
    assert (error.source, error.reason, error.message) == (
        "a.json",
        "truncated fio JSON",
        "a.json: truncated fio JSON",
    )


def test_rows_follow_ids_that_are_not_consecutive(location: str) -> None:
    """The store adds a batch's first id to each row's sample index when the ids it got
    are consecutive; when they are not (another writer drew from the sequence), each row
    gets the id its index names."""
    results = [r for f in SOURCES[:3] for r in parse_source(str(f))][:3]
    batch = convert.import_batch(results)
    with open_store(location) as store:
        run_id = store.create_run("import", label="x")
        ids = [store.add_sample(Sample(run_id=run_id, source=f"s{i}")) for i in range(3)]
        given = [ids[2], ids[0], ids[1]]  # index 0 → the third sample, and so on
        with store._session(write=True) as conn:
            _insert_indexed(conn, "metrics", convert.METRIC_COLUMNS, given, batch.metrics)
            conn.commit()
        by_id = {s.id: s.metrics for s in store.samples(run_id=run_id, with_jobs=False)}
    assert [by_id[i] for i in given] == [r.metrics for r in results]
    assert all(len(r.metrics) > 10 for r in results)


def test_import_batch_columns_are_the_row_functions_rows() -> None:
    """ImportBatch builds its columns level by level; they must hold exactly the rows of
    metric_tuples / histogram_tuples (NaN left out), sample by sample."""
    results = [r for f in SOURCES for r in parse_source(str(f))]
    odd = ParsedResult(
        tool="fio",
        format="fio-json",
        source="odd",
        metrics={"a": math.nan, "b": 2.0, "c": math.inf, "d": -math.inf},
        jobs=[Job("j", metrics={"x": 1, "y": math.nan}), Job("j", metrics={"x": 3.5})],
        histograms={"read.clat_ns": {1.0: 2, 2.5: 1}},
    )
    results.append(odd)
    batch = convert.import_batch(results)
    metrics: list[tuple[Any, ...]] = []
    bins: list[tuple[Any, ...]] = []
    for index, result in enumerate(results):
        sample = convert.sample_from_result(result, 0)
        metrics.extend(convert.metric_tuples(index, sample))
        bins.extend(convert.histogram_tuples(index, sample))
    assert list(batch.metrics.rows()) == metrics
    assert list(batch.histograms.rows()) == bins
    odd_rows = {(job, name) for i, job, name, _ in metrics if i == len(results) - 1}
    assert odd_rows == {("", "b"), ("", "c"), ("", "d"), ("j#1", "x"), ("j#2", "x")}
    assert len(batch.samples) == len(results) and len(bins) > 1000
