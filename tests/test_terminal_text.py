"""User text in terminal output (issue 8): labels, tags and captions with escape sequences
are printed as visible escapes, never raw, by every command that shows them."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from iolab.textsafe import shown, shown_markup

EVIL = "ev\x1b[2J\x1b]0;owned\x07il\u202e"


def test_shown_makes_control_characters_visible() -> None:
    assert shown(EVIL) == "ev\\x1b[2J\\x1b]0;owned\\x07il\\u202e"
    assert shown("plain é ü 日本") == "plain é ü 日本"
    assert shown("a\nb", keep="\n") == "a\nb"
    assert shown_markup("[bold]x\x1b") == "\\[bold]x\\x1b"


def iolab(db: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "iolab", "--db", str(db), *args],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "COLUMNS": "200"},
    )


def test_commands_print_labels_tags_and_captions_escaped(tmp_path: Path) -> None:
    result = tmp_path / "r.txt"
    out = tmp_path / "r.json"
    subprocess.run(
        ["fio", "--name=w", "--size=256k", "--rw=write", f"--filename={tmp_path}/f.dat",
         "--output-format=json", f"--output={out}"],
        check=True, capture_output=True,
    )  # fmt: skip
    result.write_text(f"{EVIL} caption:\n" + out.read_text())
    db = tmp_path / "s.db"
    for label in (EVIL, "plain"):
        proc = iolab(db, "import", "--label", label, "--tag", f"t={EVIL}", str(result))
        assert proc.returncode == 0, proc.stderr
    runs = iolab(db, "results")
    samples = iolab(db, "results", "--run", "1")
    compare = iolab(db, "compare", f"label:{EVIL}", "label:plain", "--metric", "write.iops")
    parsed = subprocess.run(
        [sys.executable, "-m", "iolab", "parse", str(result)], capture_output=True, text=True
    )
    refused = iolab(db, "results", "--run", "1", "--label", EVIL)
    for proc in (runs, samples, compare, parsed, refused):
        text = proc.stdout + proc.stderr
        assert "\x1b" not in text and "\x07" not in text and "\u202e" not in text, text
    assert "ev\\x1b[2J" in runs.stdout
    assert "\\x1b]0;owned" in runs.stdout.replace("\n", "") or "owned" in runs.stdout
    assert "\\x1b" in compare.stdout, compare.stdout + compare.stderr
