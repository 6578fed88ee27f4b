"""Bad input to every command: one `iolab: ...` line on stderr, the documented exit code
(docs/exit-codes.md), no traceback, and nothing half-written in the store.

Nothing here touches the machine: every `run` / `ab` case fails before the lab starts (a
missing or invalid plan, a bad option), and is built so that it would still fail at plan
validation if the check under test regressed.
"""

from __future__ import annotations

import codecs
import importlib.util
import json
import sqlite3
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from iolab.cli.main import cli
from iolab.errors import EXIT_BAD_INPUT
from iolab.store import open_store

DATA = Path(__file__).parent / "data" / "fio-3.33" / "out"
GOOD_JSON = DATA / "randread-3jobs.json"
GOOD_TEXT = DATA / "randread-3jobs.txt"
HUGE_ID = str(2**70)  # more than any database integer column holds

ONE_VARIANT_PLAN = """\
name: one-variant
target: {kind: loop, size: 64M, backing: ram}
filesystem: {type: ext4}
workload:
  fio: |
    [w]
    directory={mnt}
    size=1M
    rw=write
variants:
  only: {}
repeat: 2
kpis: [write.iops]
"""


def iolab(db: Path | str, *args: str, input: bytes | None = None) -> Result:
    return CliRunner().invoke(cli, ["--db", str(db), *args], input=input)


def one_line_error(result: Result, code: int = EXIT_BAD_INPUT) -> str:
    """The single stderr line of a refused command, after checking the standard."""
    assert result.exit_code == code, (result.exit_code, result.output, result.exception)
    assert "Traceback" not in result.stderr
    assert result.stdout == ""
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("iolab: "), result.stderr
    return lines[0]


def run_rows(db: Path) -> int:
    if not db.exists():
        return 0
    with sqlite3.connect(db) as conn:
        return int(conn.execute("SELECT count(*) FROM runs").fetchone()[0])


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return tmp_path / "store.db"


@pytest.fixture
def stored(db: Path) -> Path:
    """A store holding one import (run 1, label `old`)."""
    result = iolab(db, "import", str(GOOD_JSON), "--label", "old")
    assert result.exit_code == 0, result.output
    return db


# -- parse / import: the inputs of issue 2 item 6 ----------------------------------------


@pytest.mark.parametrize(
    ("content", "reason"),
    [
        (None, "no such file"),
        (b"", "empty input"),
        (b"\x7fELF\x02\x01\x01\x00" + bytes(range(256)) * 4, "binary data"),
        (GOOD_JSON.read_bytes()[:3000], "truncated fio JSON"),
        (b"hello, world\n", "no fio, xfs_io or dd result"),
        ((DATA / "error.json").read_bytes(), "reported error 28"),
    ],
    ids=["missing", "empty", "binary", "truncated", "garbage", "job-error"],
)
@pytest.mark.parametrize("command", ["parse", "import"])
def test_unreadable_input(
    tmp_path: Path, db: Path, command: str, content: bytes | None, reason: str
) -> None:
    bad = tmp_path / "input.txt"
    if content is not None:
        bad.write_bytes(content)
    args = [command, str(GOOD_JSON), str(bad)] + (["--label", "x"] if command == "import" else [])
    line = one_line_error(iolab(db, *args))
    assert line.startswith(f"iolab: {bad}: ") and reason in line
    assert run_rows(db) == 0  # the good file before it was not stored either


@pytest.mark.parametrize(
    ("args", "reason"),
    [
        (["--tag", "novalue"], "bad --tag 'novalue'"),
        (["--tag", "k="], "bad --tag 'k='"),
        (["--tag", "a b=c"], "bad --tag 'a b=c'"),
        (["--tag", "k=1", "--tag", "k=2"], "--tag k given twice"),
    ],
)
def test_import_bad_tag(db: Path, args: list[str], reason: str) -> None:
    line = one_line_error(iolab(db, "import", str(GOOD_JSON), "--label", "x", *args))
    assert reason in line
    assert run_rows(db) == 0


def test_import_needs_label(db: Path) -> None:
    assert "--label" in one_line_error(iolab(db, "import", str(GOOD_JSON)))
    assert run_rows(db) == 0


# -- the store location -------------------------------------------------------------------


def test_unusable_stores(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # a server store that does not answer is waited for (docs/fleet.md, cold starts); with
    # no waiting budget the refusal is one line at once
    monkeypatch.setenv("IOLAB_DB_WAIT_S", "0")
    not_sqlite = tmp_path / "notes.db"
    not_sqlite.write_text("my notes\n")
    cases = {
        str(tmp_path): "is a directory, not an iolab store",
        str(not_sqlite): "not an SQLite database",
        "/proc/version": "not an SQLite database",
        "postgresql+psycopg://x@127.0.0.1:1/db": "cannot open store",
    }
    for location, reason in cases.items():
        line = one_line_error(iolab(location, "import", str(GOOD_JSON), "--label", "x"))
        assert reason in line, (location, line)
    assert not_sqlite.read_text() == "my notes\n"


@pytest.mark.skipif(
    importlib.util.find_spec("MySQLdb") is not None, reason="the MySQL driver is installed"
)
def test_store_url_without_driver(db: Path) -> None:
    """Regression: a URL whose DBAPI module is missing was an internal error (exit 1)."""
    line = one_line_error(iolab("mysql://x@127.0.0.1:1/db", "results"))
    assert "driver is not installed" in line


# -- results / compare ---------------------------------------------------------------------


@pytest.mark.parametrize("command", [["results"], ["compare", "label:a", "label:b"]])
def test_reading_a_mistyped_store_names_it(tmp_path: Path, command: list[str]) -> None:
    """Regression: reading commands created an empty store at a mistyped --db and answered
    from it; now they name the path and create nothing."""
    missing = tmp_path / "typo" / "iolab.db"
    line = one_line_error(iolab(missing, *command))
    assert line == f"iolab: {missing}: no iolab store there (nothing was imported or run into it)"
    assert not missing.parent.exists()


def test_results_unknown_run(stored: Path) -> None:
    assert one_line_error(iolab(stored, "results", "--run", "999")) == (
        "iolab: no run 999 in the store"
    )


def test_run_id_beyond_any_integer_column(stored: Path) -> None:
    """Regression: an over-long run id was an OverflowError (internal error, exit 1)."""
    assert "no run" in one_line_error(iolab(stored, "results", "--run", HUGE_ID))
    assert "no run" in one_line_error(iolab(stored, "results", "--run", HUGE_ID, "--json"))
    assert "no run" in one_line_error(iolab(stored, "compare", f"run:{HUGE_ID}", "1"))
    assert "no run" in one_line_error(iolab(stored, "compare", f"{HUGE_ID}:a", "1"))


@pytest.mark.parametrize(
    ("args", "reason"),
    [
        (["lbl:old", "label:old"], "cannot read 'lbl:old'"),
        (["label:", "label:old"], "needs a name"),
        (["run:abc", "label:old"], "is not a number"),
        (["label:old//x=1", "label:old"], "empty term"),
        (["fs=xfs", "label:old"], "names no run, label or tag"),
        (["label:nope", "label:old"], "selects no samples"),
        (["tag:k=9", "label:old"], "selects no samples"),
        (["run:999", "label:old"], "no run 999"),
        (["label:old", "label:old", "--metric", "zzz.*"], "no metric"),
        (["label:old", "label:old", "--margin", "-1"], "--margin -1"),
        (["label:old", "label:old", "--alpha", "0"], "--alpha 0"),
        (["label:old", "label:old", "--alpha", "1.5"], "--alpha 1.5"),
        (["1"], "run 1 has no variants"),
    ],
)
def test_compare_bad_input(stored: Path, args: list[str], reason: str) -> None:
    assert reason in one_line_error(iolab(stored, "compare", *args))


# -- run / ab: everything fails before the machine is touched -----------------------------


@pytest.fixture
def one_variant(tmp_path: Path) -> Path:
    path = tmp_path / "one.yaml"
    path.write_text(ONE_VARIANT_PLAN)
    return path


@pytest.mark.parametrize(
    ("plan", "reason"),
    [
        ('name: x\nworkload: {fio: "[a]\n', "yaml:3: not valid YAML"),
        (ONE_VARIANT_PLAN + "bogus_key: 1\n", "yaml:14: bogus_key: unknown key 'bogus_key'"),
        (ONE_VARIANT_PLAN.replace("64M", "64Q"), "yaml:2: target.size: must be a size"),
        ("", "the plan is empty"),
    ],
    ids=["yaml-syntax", "unknown-key", "bad-size", "empty"],
)
@pytest.mark.parametrize("command", ["run", "ab"])
def test_invalid_plan(tmp_path: Path, db: Path, command: str, plan: str, reason: str) -> None:
    path = tmp_path / "plan.yaml"
    path.write_text(plan)
    assert reason in one_line_error(iolab(db, command, str(path)))
    assert run_rows(db) == 0


@pytest.mark.parametrize("command", ["run", "ab"])
def test_missing_plan_leaves_no_store(tmp_path: Path, db: Path, command: str) -> None:
    """Regression (run): the store was created before the plan was even read."""
    line = one_line_error(iolab(db, command, str(tmp_path / "nope.yaml")))
    assert "cannot read the plan" in line
    assert not db.exists()


@pytest.mark.parametrize("command", ["run", "ab"])
def test_binary_plan(tmp_path: Path, db: Path, command: str) -> None:
    """Regression: a binary plan showed Python's codec message."""
    path = tmp_path / "plan.yaml"
    path.write_bytes(b"name: caf\xe9\n")
    assert one_line_error(iolab(db, command, str(path))) == (
        f"iolab: {path}: not UTF-8 text (byte 0xe9 at offset 9)"
    )


@pytest.mark.parametrize(
    ("tags", "reason"),
    [
        (["--tag", "a b=c"], "bad --tag 'a b=c'"),
        (["--tag", "k="], "bad --tag 'k='"),
        (["--tag", "k=1", "--tag", "k=2"], "--tag k given twice"),
    ],
)
@pytest.mark.parametrize("command", ["run", "ab"])
def test_run_tags_checked_like_import(
    tmp_path: Path, db: Path, command: str, tags: list[str], reason: str
) -> None:
    """Regression: run/ab accepted tags import refuses (and run only checked them after
    the preflight).  Tags are checked first; the plan does not exist, so a regression
    still stops at the plan, never in the lab."""
    line = one_line_error(iolab(db, command, str(tmp_path / "nope.yaml"), *tags))
    assert reason in line
    assert not db.exists()


@pytest.mark.parametrize("extra", [["--label", "x"], ["--tag", "k=v"]])
def test_run_resume_refuses_new_names(db: Path, extra: list[str]) -> None:
    """Regression: --resume silently ignored --label and --tag."""
    line = one_line_error(iolab(db, "run", "--resume", "3", *extra))
    assert line == "iolab: --label and --tag name a new run; run 3 keeps its own"
    assert not db.exists()


def test_run_resume_unknown(db: Path) -> None:
    """Resuming names a stored run: a --db that holds no store is named (as `ab --resume`
    does) and not created; in a store without that run, the run is named."""
    assert "no iolab store there" in one_line_error(iolab(db, "run", "--resume", "999"))
    assert not db.exists()
    open_store(str(db)).close()
    assert one_line_error(iolab(db, "run", "--resume", "999")) == "iolab: no run 999 in the store"
    assert "no run" in one_line_error(iolab(db, "run", "--resume", HUGE_ID))
    assert run_rows(db) == 0


def test_run_usage_errors(db: Path, one_variant: Path) -> None:
    assert "not both" in one_line_error(iolab(db, "run", str(one_variant), "--resume", "1"))
    assert "missing PLAN" in one_line_error(iolab(db, "run"))
    assert run_rows(db) == 0


def test_ab_one_variant(db: Path, one_variant: Path) -> None:
    line = one_line_error(iolab(db, "ab", str(one_variant)))
    assert "needs a plan with at least two variants" in line
    assert run_rows(db) == 0


@pytest.mark.parametrize(
    ("args", "reason"),
    [
        (["--alpha", "0"], "--alpha 0"),
        (["--margin", "-1"], "--margin -1"),
        (["--max-time", "soon"], "--max-time 'soon'"),
        (["--max-time", "0"], "must be longer than 0s"),
    ],
)
def test_ab_bad_options(db: Path, one_variant: Path, args: list[str], reason: str) -> None:
    assert reason in one_line_error(iolab(db, "ab", str(one_variant), *args))
    assert run_rows(db) == 0


# -- encodings that are not bad input ------------------------------------------------------


@pytest.mark.parametrize(
    "encode",
    [
        lambda b: codecs.BOM_UTF8 + b,
        lambda b: codecs.BOM_UTF16_LE + b.decode().encode("utf-16-le"),
        lambda b: codecs.BOM_UTF16_BE + b.decode().encode("utf-16-be"),
    ],
    ids=["utf8-bom", "utf16le-bom", "utf16be-bom"],
)
@pytest.mark.parametrize("original", [GOOD_JSON, GOOD_TEXT], ids=["json", "text"])
def test_byte_order_marks(
    tmp_path: Path, db: Path, original: Path, encode: Callable[[bytes], bytes]
) -> None:
    """Regression: a UTF-8 BOM (Notepad) gave 'no fio JSON object found', UTF-16 from
    PowerShell's `>` 'binary data'; both read as the plain file does."""
    path = tmp_path / original.name
    path.write_bytes(encode(original.read_bytes()))
    plain = iolab(db, "parse", "--json", str(original))
    marked = iolab(db, "parse", "--json", str(path))
    assert plain.exit_code == 0 and marked.exit_code == 0, marked.output
    assert [r["metrics"] for r in json.loads(marked.stdout)] == [
        r["metrics"] for r in json.loads(plain.stdout)
    ]


def test_utf16_without_bom_is_binary(tmp_path: Path, db: Path) -> None:
    path = tmp_path / "u16.txt"
    path.write_bytes(GOOD_TEXT.read_text().encode("utf-16-be"))
    assert "binary data" in one_line_error(iolab(db, "parse", str(path)))
