"""A guest run killed before its `finally` (kill -9, or a SIGTERM Python did not turn into
an exception) leaves its work directory in /var/tmp: a qcow2 overlay and two disk images.
The next run sweeps those whose owner and QEMU are both gone, and only those."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from iolab.guest.run import WORK_PREFIX, sweep_stale


def _dead_pid() -> int:
    child = subprocess.Popen(["true"])
    child.wait()
    return child.pid


def _work(parent: Path, name: str, owner: int | None, qemu: int | None = None) -> Path:
    d = parent / f"{WORK_PREFIX}{name}"
    d.mkdir()
    (d / "root.qcow2").write_bytes(b"\0" * 4096)
    if owner is not None:
        (d / "owner").write_text(f"{owner}\n")
    if qemu is not None:
        (d / "qemu.pid").write_text(f"{qemu}\n")
    return d


def test_only_the_dead_owners_directories_go(tmp_path: Path) -> None:
    dead = _dead_pid()
    with subprocess.Popen(["sleep", "30"]) as alive:
        try:
            gone = _work(tmp_path, "gone", dead)
            running = _work(tmp_path, "running", os.getpid())
            orphan_qemu = _work(tmp_path, "qemu", dead, qemu=alive.pid)
            unowned = _work(tmp_path, "unowned", None)
            other = tmp_path / "unrelated"
            other.mkdir()
            (other / "owner").write_text(f"{dead}\n")
            assert sweep_stale(tmp_path) == [gone]
            assert not gone.exists()
            assert running.exists() and orphan_qemu.exists() and unowned.exists()
            assert other.exists()
        finally:
            alive.kill()
    assert sweep_stale(tmp_path) == [orphan_qemu]
