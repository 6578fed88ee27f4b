"""docs/api.md's example, executed as written: it runs a plan and an A/B through
`iolab.api` on a real loop device with real fio, reads the samples back and compares."""

from __future__ import annotations

import contextlib
import io
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from iolab import api
from iolab.errors import EXIT_BAD_INPUT, IolabError

pytestmark = pytest.mark.lab

DOC = Path(__file__).resolve().parents[1] / "docs" / "api.md"


@pytest.fixture
def journal(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setenv("IOLAB_JOURNAL_DIR", str(tmp_path / "journal"))
    try:
        yield
    finally:  # whatever a failed run left behind, from this test's journal only
        subprocess.run(
            [sys.executable, "-m", "iolab", "cleanup"],
            env=dict(os.environ, IOLAB_JOURNAL_DIR=str(tmp_path / "journal")),
            capture_output=True,
        )


def test_the_documented_example_runs(journal: None) -> None:
    (code,) = re.findall(r"```python\n(.*?)```", DOC.read_text(), re.S)
    namespace: dict[str, Any] = {}
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(code, str(DOC), "exec"), namespace)
    printed = out.getvalue()
    outcome, result, db = namespace["outcome"], namespace["result"], namespace["db"]
    assert outcome.status == "finished" and outcome.held == outcome.planned == 4
    assert f"run {outcome.run_id} finished: 4/4 samples" in printed
    assert result.status == "finished" and not result.interrupted
    assert result.report is not None and result.report.sequential
    assert 1 <= max(s.n_blocks for ss in result.states.values() for s in ss) <= 3
    kinds = [(r.kind, r.status) for r in api.runs(db=db)]
    assert kinds == [("lab", "finished"), ("ab", "finished")]
    stored = api.samples(result.run_id, db=db)
    assert {s.variant for s in stored} == {"big", "small"}
    assert all(s.provenance["mount_options_requested"] == "noatime" for s in stored)
    shutil.rmtree(namespace["work"])


def test_errors_are_one_line_with_an_exit_code(tmp_path: Path) -> None:
    with pytest.raises(IolabError) as caught:
        api.compare("run:", db=str(tmp_path / "none.db"))
    assert caught.value.exit_code == EXIT_BAD_INPUT and "\n" not in caught.value.message
