"""`iolab parse`: what it recognises, its --json schema (docs/parse-json.md), and bad input.

Bad input of any kind must end with exit status 2 and exactly one line on stderr that names
the file.  Text and JSON written by one fio run must agree through the CLI as well.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from iolab.cli.main import cli

DATA = Path(__file__).parent / "data"
ROOT = Path(__file__).parent.parent
OUT = DATA / "fio-3.33" / "out"


def _same_run(out: Path) -> bool:
    """Text and JSON come from one fio run: fio-generate.sh says `same_run=yes` in
    generated.txt; fio-3.33/generate.sh always writes both forms at once."""
    info = out / "generated.txt"
    if info.exists():
        return "same_run=yes" in info.read_text()
    return (out.parent / "generate.sh").exists()


PAIRS = [
    (text, text.with_suffix(".json"))
    for out in sorted(DATA.glob("fio-*/out"))
    if _same_run(out)
    for text in sorted(out.glob("*.txt"))
    if ".terse" not in text.name
    and not text.name.startswith(("error", "generated"))
    and text.with_suffix(".json").exists()
]


def run(*args: str, stdin: bytes | None = None) -> Any:
    return CliRunner().invoke(cli, list(args), input=stdin)


def parse_json(*args: str, stdin: bytes | None = None) -> list[dict[str, Any]]:
    result = run("parse", "--json", *args, stdin=stdin)
    assert result.exit_code == 0, result.stderr
    doc = json.loads(result.stdout)
    assert isinstance(doc, list)
    return doc


def test_json_schema_of_one_result() -> None:
    (obj,) = parse_json(str(OUT / "two-groups.txt"))
    assert set(obj) >= {"source", "caption", "tool", "tool_version", "format", "metrics", "jobs"}
    assert obj["source"] == str(OUT / "two-groups.txt")
    assert (obj["tool"], obj["tool_version"], obj["format"]) == ("fio", "3.33", "fio-text")
    assert obj["caption"] is None
    assert all(isinstance(v, float | int) for v in obj["metrics"].values())
    assert [(j["name"], j["group"]) for j in obj["jobs"]] == [("writer", 0), ("reader", 1)]
    assert all({"name", "metrics"} <= set(j) for j in obj["jobs"])
    assert obj["metrics"]["write.iops"] == obj["jobs"][0]["metrics"]["write.iops"]


def _close(a: float, b: float, rel: float, abs_: float = 0.0) -> bool:
    return math.isclose(a, b, rel_tol=rel, abs_tol=abs_)


@pytest.mark.parametrize(
    ("text", "raw"), PAIRS, ids=[f"{t.parent.parent.name}/{t.name}" for t, _ in PAIRS]
)
def test_parse_json_of_text_and_json_agree(text: Path, raw: Path) -> None:
    """The Done-when of issue 2, through the command line."""
    (from_text,) = parse_json(str(text))
    (from_json,) = parse_json(str(raw))
    assert from_text["format"] == "fio-text" and from_json["format"].startswith("fio-json")
    assert from_text["tool_version"] == from_json["tool_version"]
    got, want = from_text["metrics"], from_json["metrics"]
    directions = [d for d in ("read", "write", "trim", "mixed") if f"{d}.iops" in want]
    assert directions == [d for d in ("read", "write", "trim", "mixed") if f"{d}.iops" in got]
    n_jobs = max(1, len(from_json["jobs"]))
    for d in directions:
        assert _close(got[f"{d}.iops"], want[f"{d}.iops"], 0.01, 0.5 * n_jobs), d
        assert _close(got[f"{d}.bw_bytes"], want[f"{d}.bw_bytes"], 0.01), d
        assert got[f"{d}.runtime_ms"] == want[f"{d}.runtime_ms"], d
        # two decimals in usec (or nsec) per job; several jobs combine their rounding
        assert _close(got[f"{d}.clat_ns.mean"], want[f"{d}.clat_ns.mean"], 1e-3, 5.0), d
        if f"{d}.clat_ns.p99" in want and f"{d}.clat_ns.p99" in got:
            assert _close(got[f"{d}.clat_ns.p99"], want[f"{d}.clat_ns.p99"], 0, 1000.0), d


def test_mail_thread_gives_two_captioned_results() -> None:
    doc = parse_json(str(DATA / "mail" / "thread-3.33.txt"))
    assert [r["caption"] for r in doc] == [
        "Fio output (5.10.162 with revert)",
        "mounted with -o iversion",
    ]
    assert all(r["metrics"]["write.clat_ns.p99"] > 0 for r in doc)


def test_several_files_in_order() -> None:
    doc = parse_json(str(OUT / "seqread.txt"), str(OUT / "seqread.json"))
    assert [r["format"] for r in doc] == ["fio-text", "fio-json"]


def test_dash_reads_stdin() -> None:
    text = (DATA / "mail" / "thread-3.33.txt").read_bytes()
    doc = parse_json("-", stdin=text)
    assert [r["source"] for r in doc] == ["-", "-"]
    table = run("parse", "-", stdin=text)
    assert table.exit_code == 0 and "2 result(s)" in table.stdout


def _bad_inputs(tmp: Path) -> dict[str, Path]:
    files = {
        "garbage": b"Lorem ipsum dolor sit amet,\nconsectetur adipiscing elit.\n",
        "empty": b"",
        "blank": b"\n \n\t\n",
        "truncated-json": (OUT / "seqread.json").read_bytes()[:700],
        "truncated-text": b"\n".join((OUT / "seqread.txt").read_bytes().splitlines()[:5]),
        "binary": bytes(range(256)) * 8,
        "binary-no-nul": bytes(range(128, 256)) * 8,
        "job-error": (OUT / "error.txt").read_bytes(),
    }
    paths = {}
    for name, data in files.items():
        path = tmp / f"{name}.out"
        path.write_bytes(data)
        paths[name] = path
    paths["missing"] = tmp / "no-such-file.txt"
    paths["directory"] = tmp
    return paths


@pytest.mark.parametrize(
    "kind",
    [
        "garbage",
        "empty",
        "blank",
        "truncated-json",
        "truncated-text",
        "binary",
        "binary-no-nul",
        "job-error",
        "missing",
        "directory",
    ],
)
def test_bad_input_exit_2_and_one_line(tmp_path: Path, kind: str) -> None:
    path = _bad_inputs(tmp_path)[kind]
    for args in (["parse", str(path)], ["parse", "--json", str(path)]):
        result = run(*args)
        assert result.exit_code == 2, (kind, result.stdout, result.stderr)
        lines = result.stderr.splitlines()
        assert len(lines) == 1, lines
        assert lines[0].startswith("iolab: ") and str(path) in lines[0]
        assert "Traceback" not in result.stderr and result.stdout == ""


def test_bad_file_among_good_ones_fails_whole_command(tmp_path: Path) -> None:
    result = run("parse", "--json", str(OUT / "seqread.txt"), str(tmp_path / "gone.txt"))
    assert result.exit_code == 2 and result.stdout == ""


def test_real_command_stdin_and_error(tmp_path: Path) -> None:
    """The installed entry point, as a user runs it: a pipe into `-`, then a bad file."""
    exe = ROOT / ".venv" / "bin" / "iolab"
    command = [str(exe)] if exe.exists() else [sys.executable, "-m", "iolab"]
    env = {**os.environ, "IOLAB_DB": str(tmp_path / "unused.db")}
    text = (DATA / "mail" / "thread-3.33.eml").read_bytes()
    done = subprocess.run(
        [*command, "parse", "--json", "-"], input=text, capture_output=True, env=env, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert len(json.loads(done.stdout)) == 2
    empty = tmp_path / "empty.txt"
    empty.write_bytes(b"")
    done = subprocess.run([*command, "parse", str(empty)], capture_output=True, env=env, timeout=60)
    assert done.returncode == 2
    assert done.stderr.decode().splitlines() == [f"iolab: {empty}: empty input, no result in it"]
