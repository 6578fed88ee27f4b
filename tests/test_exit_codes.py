"""docs/exit-codes.md is the one table of exit codes: it lists exactly the codes
src/iolab/errors.py defines, every error class exits with a listed code, and real
invocations exit as the table says."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

import iolab.errors as errors

ROOT = Path(__file__).resolve().parent.parent
TABLE = ROOT / "docs" / "exit-codes.md"
FIO = ROOT / "tests" / "data" / "fio-3.33" / "out" / "randread-3jobs.json"

PLAN = """\
name: ec
target: {kind: loop, size: 64M}
filesystem: none
workload:
  fio: |
    [w]
    filename={dev0}
    rw=write
    size=1m
kpis: [write.bw_bytes]
"""


def documented() -> dict[int, str]:
    """code → its row's meaning, from the table's `| code | meaning | examples |` rows."""
    rows = re.findall(r"^\|\s*(\d+)\s*\|([^|]*)\|", TABLE.read_text(), re.MULTILINE)
    codes = {int(code): meaning.strip() for code, meaning in rows}
    assert len(codes) == len(rows), "a code listed twice"
    return codes


def test_the_table_lists_exactly_the_codes_errors_defines() -> None:
    defined = {
        name: value
        for name, value in vars(errors).items()
        if name.startswith("EXIT_") and isinstance(value, int)
    }
    assert set(documented()) == set(defined.values()), defined


def test_every_error_class_exits_with_a_documented_code() -> None:
    classes = [
        c for c in vars(errors).values() if isinstance(c, type) and issubclass(c, errors.IolabError)
    ]
    assert len(classes) > 5
    for cls in classes:
        assert cls.exit_code in documented(), cls


def iolab(tmp_path: Path, *args: str, env: dict[str, str] | None = None) -> int:
    proc = subprocess.run(
        [sys.executable, "-m", "iolab", "--db", str(tmp_path / "s.db"), *args],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
        env={**os.environ, **(env or {})},
    )
    assert "Traceback" not in proc.stderr
    return proc.returncode


def write(tmp_path: Path, text: str) -> str:
    path = tmp_path / "plan.yaml"
    path.write_text(text)
    return str(path)


@pytest.mark.parametrize(
    ("code", "args"),
    [
        (0, ["parse", str(FIO)]),
        (2, ["parse", "/no/such/file"]),
        (2, ["results", "--no-such-option"]),
        (2, ["ab", "x.yaml", "--max-time", "soon"]),
        (2, ["report", "1"]),
    ],
)
def test_invocations_exit_as_the_table_says(tmp_path: Path, code: int, args: list[str]) -> None:
    assert code in documented()
    assert iolab(tmp_path, *args) == code


def test_plans_that_cannot_run_here_2_and_3(tmp_path: Path) -> None:
    """A plan naming kernels without --fleet is bad usage (2); a requirement no lab here
    builds is a refusal (3): the table, docs/plan.md and docs/kernels.md say the same."""
    kernels = write(tmp_path, PLAN + "variants:\n  a: {kernel: 6.1.0-47-cloud-amd64}\n  b: {}\n")
    assert iolab(tmp_path, "run", kernels) == errors.EXIT_BAD_INPUT
    nvme = write(tmp_path, PLAN + "requires: {nvme: a real drive}\n")
    assert iolab(tmp_path, "run", nvme) == errors.EXIT_REFUSED
    assert iolab(tmp_path, "plan", "check", write(tmp_path, "name: [")) == errors.EXIT_BAD_INPUT
    for doc in ("plan.md", "kernels.md", "reproduce.md"):
        said = [
            int(code)
            for clause in re.split(r"[.;]\s", (ROOT / "docs" / doc).read_text())
            if re.search(r"kernel", clause) and re.search(r"without (a |`--)fleet", clause)
            for code in re.findall(r"exits? \**(\d+)", clause)
        ]
        assert said and set(said) == {errors.EXIT_BAD_INPUT}, (doc, said)


def test_cleanup_that_cannot_undo_exits_4(tmp_path: Path) -> None:
    """A dead process's journal naming a change cleanup refuses to undo: the lab could not
    restore everything (4)."""
    journals = tmp_path / "journal"
    journals.mkdir()
    keep = tmp_path / "not-ours"
    keep.mkdir()
    lines = [
        {"op": "open", "pid": 2**22 + 1, "start": 1},
        {"op": "change", "id": 1, "kind": "rmtree", "undo": {"path": str(keep)}},
    ]
    (journals / "iolab-4194305-1.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    code = iolab(tmp_path, "cleanup", env={"IOLAB_JOURNAL_DIR": str(journals)})
    assert code == errors.EXIT_LAB_FAILED and keep.is_dir()
