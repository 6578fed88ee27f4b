"""Opening a store (issue 8, and issue 13's read-only item): a damaged or header-only SQLite
file is one line and exit 2 and is not written; a store on a read-only mount is listed; a
read-only command creates nothing, not even at the default location."""

from __future__ import annotations

import hashlib
import os
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from iolab.errors import EXIT_BAD_INPUT
from iolab.ingest.detect import parse_source
from iolab.store import open_store


def iolab(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "iolab", *args],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, **(env or {})},
    )


def a_result(tmp_path: Path) -> Path:
    out = tmp_path / "r.json"
    subprocess.run(
        ["fio", "--name=w", "--size=256k", "--rw=write", f"--filename={tmp_path}/f.dat",
         "--output-format=json", f"--output={out}"],
        check=True, capture_output=True,
    )  # fmt: skip
    return out


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_header_only_file_is_one_line(tmp_path: Path) -> None:
    db = tmp_path / "hdr.db"
    db.write_bytes(b"SQLite format 3\x00" + b"\x07" * 200)
    before = digest(db)
    for args in (["results"], ["import", "--label", "x", str(a_result(tmp_path))]):
        proc = iolab("--db", str(db), *args)
        assert proc.returncode == EXIT_BAD_INPUT
        assert proc.stderr.count("\n") == 1 and "damaged or not an iolab store" in proc.stderr
    assert digest(db) == before


def test_damaged_store_is_not_written(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    result = a_result(tmp_path)
    with open_store(str(db)) as store:
        for n in range(3):
            store.import_results(parse_source(str(result)), f"l{n}")
    with sqlite3.connect(db) as conn:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        page_size = conn.execute("PRAGMA page_size").fetchone()[0]
        root = conn.execute(
            "SELECT rootpage FROM sqlite_master WHERE name = 'ix_metrics_name'"
        ).fetchone()[0]
    conn.close()
    with open(db, "r+b") as fh:  # scribble over the index's page, past its header
        fh.seek((root - 1) * page_size + 8)
        fh.write(b"\xff" * 64)
    before = digest(db)
    proc = iolab("--db", str(db), "import", "--label", "more", str(result))
    assert proc.returncode == EXIT_BAD_INPUT, proc.stderr
    assert proc.stderr.count("\n") == 1 and "PRAGMA quick_check" in proc.stderr
    assert digest(db) == before


@pytest.fixture
def read_only_copy(tmp_path: Path) -> Iterator[Path]:
    """The directory of a store, bind-mounted read-only (root cannot write it either)."""
    rw, ro = tmp_path / "rw", tmp_path / "ro"
    rw.mkdir()
    ro.mkdir()
    assert (
        iolab(
            "--db", str(rw / "s.db"), "import", "--label", "ro", str(a_result(tmp_path))
        ).returncode
        == 0
    )
    subprocess.run(["mount", "--bind", str(rw), str(ro)], check=True)
    try:
        subprocess.run(["mount", "-o", "remount,ro,bind", str(ro)], check=True)
        yield ro / "s.db"
    finally:
        subprocess.run(["umount", str(ro)], check=False)


@pytest.mark.lab
def test_read_only_store_is_listed(read_only_copy: Path) -> None:
    proc = iolab("--db", str(read_only_copy), "results", "--json")
    assert proc.returncode == 0, proc.stderr
    assert '"ro"' in proc.stdout
    with open_store(str(read_only_copy), read_only=True) as store:
        assert [run.label for run in store.runs()] == ["ro"]
    proc = iolab("--db", str(read_only_copy), "import", "--label", "x", str(read_only_copy))
    assert proc.returncode == EXIT_BAD_INPUT and proc.stderr.count("\n") == 1


def test_read_only_commands_create_nothing(tmp_path: Path) -> None:
    xdg = tmp_path / "xdg"
    env = {"XDG_DATA_HOME": str(xdg), "IOLAB_DB": ""}
    for args in (["results"], ["export", "label:a"]):
        proc = iolab(*args, env=env)
        assert proc.returncode == EXIT_BAD_INPUT
        assert "no iolab store there" in proc.stderr and proc.stderr.count("\n") == 1
    assert not xdg.exists()
