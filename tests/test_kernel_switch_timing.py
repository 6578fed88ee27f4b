"""A kernel switch's cost: its stamps (`iolab.kernels.timing`) read from this machine's own
clocks and turned into the parts the bench prints, and the cleanup the worker now does in its
own process after a boot."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from iolab.kernels import timing


def test_stamps_come_from_this_boot_and_order_themselves() -> None:
    requested = time.time() - 5.0
    timing.mark("worker_main")
    got = timing.stamps(requested, 2.5)
    assert got["requested_at"] == round(requested, 3) and got["install_s"] == 2.5
    # the boot started before the request here (the request was made in this boot)
    assert got["boot_at"] < requested and got["measure_s"] >= got["worker_main_s"]
    assert 0 < got["service_s"] <= got["worker_main_s"] <= got["measure_s"]
    for key in ("userspace_s", "multi_user_s"):  # systemd's, when it runs this machine
        if key in got:
            assert 0 < got[key] < got["measure_s"]


def test_systemds_marks_are_read_from_one_show_per_unit() -> None:
    """The manager's two marks come from one `systemctl show` (its Name=value lines, in
    microseconds since boot); a mark systemd has not reached (0) is left out."""
    text = "InitRDTimestampMonotonic=0\nUserspaceTimestampMonotonic=3512345\n"
    props = {"initrd_s": "InitRDTimestampMonotonic", "userspace_s": "UserspaceTimestampMonotonic"}
    assert timing.parse_show(text, props) == {"userspace_s": 3.512345}
    assert timing.parse_show("ActiveEnterTimestampMonotonic=\n", {"m": "Active"}) == {}


def test_systemds_marks_are_read_ahead_once_multi_user_is_reached(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The worker reads systemd's marks in a thread when it is ready: the thread asks until
    multi-user is reached, then the sample's stamps find them without a `systemctl`."""
    calls: list[str | None] = []
    reached = {"n": 0}

    def show(unit: str | None, **props: str) -> dict[str, float]:
        calls.append(unit)
        if unit is None:
            return {"userspace_s": 2.0}
        reached["n"] += 1
        return {"multi_user_s": 9.5} if reached["n"] >= 3 else {}

    monkeypatch.setattr(timing, "_systemd", show)
    monkeypatch.setattr(timing, "_SYSTEMD_MARKS", {})
    monkeypatch.setattr(timing, "SYSTEMD_DIR", tmp_path / "none")
    timing.prefetch_systemd_marks(every_s=0.01).join(5)
    assert calls == []  # no systemd here: nothing asked
    monkeypatch.setattr(timing, "SYSTEMD_DIR", tmp_path)
    timing.prefetch_systemd_marks(every_s=0.01).join(5)
    assert calls.count("multi-user.target") == 3
    asked = len(calls)
    assert timing.systemd_marks() == {"userspace_s": 2.0, "multi_user_s": 9.5}
    assert len(calls) == asked  # read once multi-user is known: never again


def test_a_mark_is_taken_once_per_process() -> None:
    code = (
        "import time; from iolab.kernels import timing\n"
        "timing.mark('x'); first = timing._MARKS['x']; time.sleep(0.05); timing.mark('x')\n"
        "assert timing._MARKS['x'] == first; print(first)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert 0 < float(out.stdout) <= timing.since_boot()


def test_parts_split_the_switch_and_the_total_runs_to_the_sample() -> None:
    boot_at = 1_000_000.0
    stamps = {
        "install_s": 140.0,
        "requested_at": boot_at - 4.0,
        "boot_at": boot_at,
        "userspace_s": 3.0,
        "multi_user_s": 15.0,
        "service_s": 12.0,
        "worker_main_s": 20.0,
        "worker_ready_s": 23.0,
        "task_s": 25.5,
        "measure_s": 27.0,
    }
    got = timing.parts(stamps, sample_started_at=boot_at + 30.0)
    assert got == {
        "shutdown and kexec": 4.0,
        "kernel": 3.0,
        "systemd to multi-user": 12.0,
        "worker start": 8.0,
        "worker connects": 3.0,
        "controller sends the block": 2.5,
        "task to sample": 1.5,
        "fetch and install (dpkg -i)": 140.0,
        "multi_user": 15.0,
        "total": 34.0,
    }
    # the task's claim and checks, marked by a fleet worker: a part within the task's way
    checked = timing.parts({**stamps, "checked_s": 26.1})
    assert checked["of which claim and checks"] == 0.6 and checked["task to sample"] == 1.5
    # a stamp missing (no systemd): its parts are left out, not guessed
    partial = {k: v for k, v in stamps.items() if k != "multi_user_s"}
    assert "systemd to multi-user" not in timing.parts(partial)
    assert "multi_user" not in timing.parts(partial)
    # the boot command's start known: the time before the jump splits at it
    fired = timing.parts({**stamps, "fired_at": boot_at - 2.5}, sample_started_at=boot_at + 30.0)
    assert fired["load and hand-over"] == 1.5 and fired["shutdown and kexec"] == 2.5
    assert fired["from the boot command"] == 32.5 and fired["total"] == 34.0
    # warm-ups before the sample: the switch ends where the lab began (measure_s), and the
    # warm-up is its own part
    warm = timing.parts(
        {**stamps, "fired_at": boot_at - 2.5}, sample_started_at=boot_at + 52.0, warmed=True
    )
    assert warm["warm-up (not measured)"] == 25.0
    assert warm["total"] == 31.0 and warm["from the boot command"] == 29.5


def test_the_worker_undoes_a_killed_processs_changes_in_its_own_process(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What `iolab cleanup` did before the worker started (a second Python start after every
    kernel switch) the worker does itself: a dead process's journaled change is undone, a
    live one's is left alone."""
    from iolab.fleet.service import undo_leftovers
    from iolab.guest.hosts import default_command

    monkeypatch.setenv("IOLAB_JOURNAL_DIR", str(tmp_path / "journal"))
    made = tmp_path / "made-by-a-killed-run"
    code = (
        "import os, sys; from iolab.lab.journal import Journal\n"
        "j = Journal.open(); j.record('unlink', path=sys.argv[1]); open(sys.argv[1], 'w')\n"
        "os._exit(0)  # killed: nothing undone"
    )
    subprocess.run([sys.executable, "-c", code, str(made)], check=True, env=dict(os.environ))
    assert made.exists()
    undo_leftovers()
    assert not made.exists()
    assert "cleanup" not in default_command("g1", "c")  # the guest starts the worker only


def test_a_process_to_end_is_gone_before_the_boot_commands_run(tmp_path: Path) -> None:
    """With `end`, the boot's shell kills that process (a worker before a direct jump, its
    connections closed by its exit) and runs the commands only once it is gone."""
    import subprocess
    import threading

    from iolab.kernels import switch

    victim = subprocess.Popen(["sleep", "1000"])
    reaper = threading.Thread(target=victim.wait)  # what systemd does for a worker
    reaper.start()
    ran = tmp_path / "ran"
    gone = f"! kill -0 {victim.pid} 2>/dev/null && touch {ran}"
    try:
        switch.fire([["sh", "-c", gone]], delay_s=0, end=victim.pid)
        reaper.join(timeout=30)
        deadline = time.monotonic() + 30
        while not ran.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
    finally:
        victim.kill()
        reaper.join()
    assert victim.returncode == -9
    assert ran.exists()  # the command saw no such process


def test_the_boot_is_fired_by_a_shell_in_order_and_stops_at_a_failure(tmp_path: Path) -> None:
    """`switch.fire` runs the boot commands in a session of its own (no systemd here), one
    after the other, each word as given (no shell reads a placeholder's value), and none
    after one that failed."""
    from iolab.kernels import switch

    odd = tmp_path / "a file; with $(words)"
    stamps = tmp_path / "stamps"
    stamps.mkdir()
    stamp = stamps / "fired; $(x)"
    began = time.time()
    switch.fire([["touch", str(odd)], ["touch", str(tmp_path / "second")]], delay_s=0, stamp=stamp)
    switch.fire([["false"], ["touch", str(tmp_path / "never")]], delay_s=0)
    deadline = time.monotonic() + 30
    while not (tmp_path / "second").exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert odd.exists() and (tmp_path / "second").exists()
    time.sleep(0.5)  # the failed one had as long, and more, to run its second command
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "a file; with $(words)",
        "second",
        "stamps",
    ]
    # the commands' start, stamped before the first of them ran
    fired = float(stamp.read_text())
    assert began - 1 <= fired <= odd.stat().st_mtime + 0.01


NICENESS = """
import os, sys, threading, time
from iolab.fleet.service import default_priority
stop = threading.Event()
early = threading.Thread(target=stop.wait)  # a thread started before the worker is ready
early.start()
before = sorted(os.getpriority(os.PRIO_PROCESS, int(t)) for t in os.listdir("/proc/self/task"))
default_priority()
later = []
threading.Thread(target=lambda: later.append(os.getpriority(os.PRIO_PROCESS, 0))).start()
time.sleep(0.2)
after = sorted(os.getpriority(os.PRIO_PROCESS, int(t)) for t in os.listdir("/proc/self/task"))
stop.set()
print(before, after, later)
"""


@pytest.mark.skipif(os.geteuid() != 0, reason="a negative niceness needs root")
@pytest.mark.parametrize(("started", "expected"), [(-10, 0), (5, 5)])
def test_a_worker_started_at_a_raised_priority_measures_at_the_default_one(
    started: int, expected: int
) -> None:
    """A guest's unit starts the worker at Nice=-10; once ready, every thread of it is back
    at 0 (fio inherits the niceness of the thread that starts it), threads started later
    too.  A worker started at a lowered priority keeps it."""
    out = subprocess.run(
        ["nice", "-n", str(started), sys.executable, "-c", NICENESS],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split("] [")
    assert out[0] == f"[{started}, {started}"
    assert out[1] == f"{expected}, {expected}"
    assert out[2].strip() == f"{expected}]"
