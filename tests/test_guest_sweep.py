"""A guest run killed before its `finally` (kill -9, or a SIGTERM Python did not turn into
an exception) leaves its work directory in /var/tmp: a qcow2 overlay and two disk images.
The next run sweeps those whose owner and QEMU are both gone, and only those."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from iolab.guest.run import WORK_PREFIX, sweep_stale
from iolab.procs import process_start


def _dead_pid() -> int:
    child = subprocess.Popen(["true"])
    child.wait()
    return child.pid


def _work(parent: Path, name: str, owner: int | str | None, qemu: int | None = None) -> Path:
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
            me = os.getpid()
            running = _work(tmp_path, "running", f"{me} {process_start(me)}")
            old_style = _work(tmp_path, "old-style", me)  # a pid alone: still judged
            # the owner's pid now belongs to another process (another start time): gone
            reused = _work(tmp_path, "reused", f"{me} {(process_start(me) or 0) + 1}")
            orphan_qemu = _work(tmp_path, "qemu", dead, qemu=alive.pid)
            unowned = _work(tmp_path, "unowned", None)
            other = tmp_path / "unrelated"
            other.mkdir()
            (other / "owner").write_text(f"{dead}\n")
            assert sorted(sweep_stale(tmp_path)) == sorted([gone, reused])
            assert not gone.exists() and not reused.exists()
            assert running.exists() and old_style.exists()
            assert orphan_qemu.exists() and unowned.exists()
            assert other.exists()
        finally:
            alive.kill()
    assert sweep_stale(tmp_path) == [orphan_qemu]


def test_a_sigterm_stops_the_guest_and_removes_its_work_directory(tmp_path: Path) -> None:
    """`iolab guest run` told to stop with SIGTERM (a timeout's, a job runner's) ends as on
    Ctrl-C: QEMU killed, the work directory gone at once, one line, exit 5."""
    import signal
    import sys
    import time

    from iolab.guest.run import WORK_PARENT
    from iolab.procs import process_alive

    script = tmp_path / "wait.sh"
    script.write_text("sleep 600\n")
    proc = subprocess.Popen(
        [sys.executable, "-m", "iolab", "guest", "run", "--timeout", "10m", str(script)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        mine: Path | None = None
        qemu = 0
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and not qemu:
            for d in Path(WORK_PARENT).glob(f"{WORK_PREFIX}*"):
                owner = (d / "owner").read_text().split() if (d / "owner").exists() else []
                pid_file = d / "qemu.pid"
                if owner[:1] == [str(proc.pid)] and pid_file.exists():
                    text = pid_file.read_text().strip()
                    mine, qemu = d, int(text) if text else 0
            time.sleep(0.2)
        assert mine is not None and qemu, "the guest did not start"
        proc.send_signal(signal.SIGTERM)
        _out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 5, err
    assert err.strip().splitlines()[-1] == "iolab: interrupted"
    assert not mine.exists()
    assert not process_alive(qemu)
