"""Queries stay queries: `compare` and `report` read a store on a read-only mount (a team's
published results), and only `compare --record` would write — it says in one line that it
cannot (issue 21).  The mount is real: a bind mount of the store's directory, remounted
read-only, undone by the fixture."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from test_report_formats import make_imports, make_lab_run

pytestmark = pytest.mark.lab


def _mounted(where: Path) -> bool:
    return any(
        line.split()[1] == str(where) for line in Path("/proc/mounts").read_text().splitlines()
    )


@pytest.fixture
def read_only_store(tmp_path: Path) -> Iterator[tuple[Path, int]]:
    """A store with imports (labels old/new) and a lab run (variants a/b), seen through a
    read-only bind mount of its directory."""
    source, view = tmp_path / "published", tmp_path / "ro"
    source.mkdir()
    view.mkdir()
    db = source / "team.db"
    make_imports(str(db))
    run_id = make_lab_run(str(db))
    subprocess.run(["mount", "--bind", str(source), str(view)], check=True)
    try:
        subprocess.run(["mount", "-o", "remount,bind,ro", str(view)], check=True)
        yield view / "team.db", run_id
    finally:
        subprocess.run(["umount", str(view)], check=True)
    assert not _mounted(view)


def iolab(db: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "iolab", "--db", str(db), *args],
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_the_mount_is_read_only(read_only_store: tuple[Path, int]) -> None:
    db, _ = read_only_store
    with pytest.raises(OSError, match="Read-only file system"):
        (db.parent / "probe").write_text("x")


def test_compare_and_report_read_a_read_only_store(
    read_only_store: tuple[Path, int], tmp_path: Path
) -> None:
    db, run_id = read_only_store
    before = {p.name: p.read_bytes() for p in db.parent.iterdir()}
    pair = iolab(db, "compare", "label:old", "label:new", "--format", "json")
    assert pair.returncode == 0, pair.stderr
    (group,) = json.loads(pair.stdout)["groups"]
    assert group["metrics"][0]["verdict"] == "improvement"
    by = iolab(db, "compare", str(run_id))
    assert by.returncode == 0 and "write.iops" in by.stdout, by.stderr
    html = iolab(db, "compare", f"{run_id}:a", f"{run_id}:b", "--format", "html")
    assert html.returncode == 0 and "<svg" in html.stdout, html.stderr
    page = tmp_path / "report.html"
    report = iolab(db, "report", "label:old", "label:new", "--html", str(page))
    assert report.returncode == 0, report.stderr
    assert "<svg" in page.read_text()
    assert iolab(db, "results").returncode == 0
    assert {p.name: p.read_bytes() for p in db.parent.iterdir()} == before


def test_record_on_a_read_only_store_says_so_in_one_line(
    read_only_store: tuple[Path, int],
) -> None:
    db, run_id = read_only_store
    done = iolab(db, "compare", f"{run_id}:a", f"{run_id}:b", "--record", "--ci")
    assert done.returncode == 10, done.stderr  # the comparison still decides --ci
    assert "regression" in done.stdout
    (line,) = done.stderr.splitlines()
    assert line.startswith("iolab: not recorded in the regression registry: ")
    assert "Traceback" not in done.stderr


def test_history_of_a_read_only_store_records_nothing_and_says_so(
    read_only_store: tuple[Path, int],
) -> None:
    db, _ = read_only_store
    done = iolab(db, "history", "label:new", "--format", "json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["series"]
    (line,) = done.stderr.splitlines()
    assert line.startswith("iolab: not recorded in the regression registry: ")
