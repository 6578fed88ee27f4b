"""Start-up: the commands people run dozens of times an hour load only what they need.

`iolab --help`, `iolab --version`, every command's and subcommand's `--help` and `iolab
parse` load neither numpy nor scipy nor SQLAlchemy nor alembic; `iolab results` on a current
store loads no scipy and no alembic (its revision is read with plain SQL).  Each case runs in
a fresh interpreter, and the modules it loaded are listed."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import click
import pytest

from iolab.cli.main import COMMANDS, cli
from iolab.ingest.detect import parse_source
from iolab.store import open_store

DATA = Path(__file__).parent / "data"
HEAVY = ("scipy", "numpy", "sqlalchemy", "alembic")

_PROBE = """
import json, runpy, sys
args, watched = json.loads(sys.argv[1]), set(json.loads(sys.argv[2]))
sys.argv = ["iolab", *args]
try:
    runpy.run_module("iolab", run_name="__main__")
except SystemExit as exc:
    code = exc.code
else:
    code = 0
heavy = sorted({m.split(".")[0] for m in sys.modules} & watched)
orm = "sqlalchemy.orm" in sys.modules
print(json.dumps({"code": code, "heavy": heavy, "orm": orm}), file=sys.stderr)
"""


def probe(tmp_path: Path, *args: str) -> dict[str, object]:
    """Run `iolab ARGS` in a fresh interpreter: its exit code, the heavy top-level packages
    it loaded, and whether SQLAlchemy's ORM was among them."""
    env = dict(os.environ, IOLAB_DB=str(tmp_path / "s.db"))
    proc = subprocess.run(
        [sys.executable, "-c", _PROBE, json.dumps(list(args)), json.dumps(HEAVY)],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    report: dict[str, object] = json.loads(proc.stderr.strip().splitlines()[-1])
    return report


def loaded(tmp_path: Path, *args: str) -> tuple[object, object]:
    report = probe(tmp_path, *args)
    return report["code"], report["heavy"]


def _help_paths() -> list[tuple[str, ...]]:
    """`iolab --help`, `--version`, and `--help` of every command and subcommand (a group's
    own callback runs before its subcommand reads --help)."""
    paths: list[tuple[str, ...]] = [("--help",), ("--version",)]
    for name in COMMANDS:
        command = cli.get_command(click.Context(cli), name)
        paths.append((name, "--help"))
        if isinstance(command, click.Group):
            subs = command.list_commands(click.Context(command))
            paths += [(name, sub, "--help") for sub in subs]
    return paths


@pytest.mark.parametrize("args", _help_paths(), ids=" ".join)
def test_help_and_version_load_nothing_heavy(tmp_path: Path, args: tuple[str, ...]) -> None:
    """Help is read while deciding what to type: no numpy or scipy (issue 21), nor
    SQLAlchemy or alembic.  A command module imports the services that load them inside
    the command's function, not at its top."""
    code, heavy = loaded(tmp_path, *args)
    assert code == 0 and heavy == [], args


def test_parse_loads_nothing_heavy(tmp_path: Path) -> None:
    fixture = DATA / "fio-3.33" / "out" / "randread-3jobs.json"
    code, heavy = loaded(tmp_path, "parse", str(fixture))
    assert code == 0 and heavy == []


def test_results_loads_nothing_heavy(tmp_path: Path) -> None:
    """A current SQLite store is listed with the standard library's sqlite3
    (iolab.store.sqlite_reader): not even SQLAlchemy is loaded."""
    fixture = DATA / "fio-3.33" / "out" / "randread-3jobs.json"
    with open_store(str(tmp_path / "s.db")) as store:  # at the newest revision
        run_id = store.import_results(parse_source(str(fixture)), "x")
    for args in (["results"], ["results", "--json"], ["results", "--run", str(run_id)]):
        code, heavy = loaded(tmp_path, *args)
        assert code == 0 and heavy == [], args


def test_results_on_another_revision_loads_no_scipy(tmp_path: Path) -> None:
    """Where the fast reader does not apply (here a store whose recorded revision is not
    this iolab's), `results` falls back to SQLAlchemy, and still loads no scipy."""
    db = tmp_path / "s.db"
    open_store(str(db)).close()
    with sqlite3.connect(db) as conn:
        conn.execute("UPDATE iolab_schema_version SET version_num = 'ffffffffffff'")
    conn.close()
    report = probe(tmp_path, "results")
    assert report["code"] != 0  # a newer iolab's store: refused, in one line
    assert report["heavy"] == ["alembic", "sqlalchemy"] and report["orm"] is False


def test_results_loads_no_orm(tmp_path: Path) -> None:
    """The store is read through SQLAlchemy Core: the ORM's import alone cost more than the
    rest of `iolab results` (docs/architecture.md, "Start-up")."""
    open_store(str(tmp_path / "s.db")).close()
    report = probe(tmp_path, "results")
    assert report["code"] == 0 and report["orm"] is False


@pytest.mark.parametrize("name", list(COMMANDS))
def test_listed_help_is_the_commands_own(name: str) -> None:
    """`iolab --help` lists commands from a table (so it imports none); each line must be
    what click would show from the command's own docstring."""
    command = cli.get_command(click.Context(cli), name)
    assert command is not None
    assert COMMANDS[name][1] == command.get_short_help_str(limit=65)  # click at 80 columns


def test_known_heads_are_alembics() -> None:
    """The fast path of opening a store reads the newest revisions from the revision files'
    text; it must find what alembic itself finds."""
    from alembic.script import ScriptDirectory

    from iolab.store.migrate import alembic_config
    from iolab.store.revision import known_heads

    assert known_heads() == set(ScriptDirectory.from_config(alembic_config()).get_heads())
