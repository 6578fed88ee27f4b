"""A workload starts only after iolab journaled its process group (`lab.workload._gated`):
killed in between, iolab must leave nothing running that its journal does not name — fio's
job processes would otherwise keep a mount busy for their whole runtime, and `iolab cleanup`
could not unmount it."""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

from iolab.lab.workload import _gated


def _start(marker: Path) -> tuple[subprocess.Popen[bytes], int]:
    read, write = os.pipe()
    proc = subprocess.Popen(_gated(["sh", "-c", f'echo $$ > "{marker}"']), stdin=read)
    os.close(read)
    return proc, write


def test_the_workload_runs_in_the_same_process_once_the_gate_opens(tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    proc, gate = _start(marker)
    time.sleep(0.3)
    assert not marker.exists()  # waiting at the gate
    os.write(gate, b"go\n")
    os.close(gate)
    assert proc.wait(timeout=30) == 0
    assert int(marker.read_text()) == proc.pid  # exec'd: the journaled pid is the workload's


def test_a_gate_closed_unopened_never_starts_the_workload(tmp_path: Path) -> None:
    """iolab died before its journal entry: the gate's end of file ends the shell."""
    marker = tmp_path / "ran"
    proc, gate = _start(marker)
    os.close(gate)
    assert proc.wait(timeout=30) != 0
    assert not marker.exists()
