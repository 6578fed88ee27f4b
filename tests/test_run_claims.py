"""Concurrent resumes (issue 8): two `iolab run --resume` of one killed run end with exactly
the planned samples, and a live run 1 in one store does not block run 1 of another store.
Real fio on real loop devices."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from iolab.errors import EXIT_REFUSED
from iolab.store import open_store

pytestmark = pytest.mark.lab

PLAN = """\
name: claims
target: {size: 32M}
filesystem: ext4
workload:
  fio: |
    [w]
    filename={mnt}/f
    size=1M
    bs=64k
    rw=write
    runtime=200ms
    time_based=1
variants: {a: {}, b: {fio: {bs: 32k}}}
repeat: 2
kpis: [write.bw_bytes]
prepare: {drop_caches: false}
"""


@pytest.fixture
def env(tmp_path: Path) -> Iterator[dict[str, str]]:
    environ = dict(os.environ, IOLAB_JOURNAL_DIR=str(tmp_path / "journal"))
    try:
        yield environ
    finally:
        subprocess.run([sys.executable, "-m", "iolab", "cleanup"], env=environ, capture_output=True)


def start(
    env: dict[str, str], db: Path, *args: str, barrier: Path | None = None
) -> subprocess.Popen[str]:
    """`iolab --db DB run -q ARGS`; with `barrier`, the process starts Python and imports the
    command, says it is ready (BARRIER.ready.PID), and waits for BARRIER to exist."""
    argv = ["--db", str(db), "run", "-q", *args]
    if barrier is None:
        command = [sys.executable, "-m", "iolab", *argv]
    else:
        command = [sys.executable, "-c", _AT_THE_BARRIER, str(barrier), *argv]
    return subprocess.Popen(
        command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )


_AT_THE_BARRIER = """\
import os, sys, time
from pathlib import Path
import iolab.cli.main, iolab.cli.run_cmd
barrier = Path(sys.argv[1])
Path(f"{barrier}.ready.{os.getpid()}").touch()
while not barrier.exists():
    time.sleep(0.001)
sys.argv = ["iolab", *sys.argv[2:]]
iolab.cli.main.main()
"""


def start_together(
    env: dict[str, str], runs: list[tuple[Path, tuple[str, ...]]], barrier: Path
) -> list[subprocess.Popen[str]]:
    """Start every `iolab run` at once: each waits, ready, until all are (a barrier)."""
    procs = [start(env, db, *args, barrier=barrier) for db, args in runs]
    deadline = time.monotonic() + 120
    while len(list(barrier.parent.glob(f"{barrier.name}.ready.*"))) < len(procs):
        assert time.monotonic() < deadline, [p.poll() for p in procs]
        assert all(p.poll() is None for p in procs), [p.communicate() for p in procs]
        time.sleep(0.01)
    barrier.touch()
    return procs


def workloads_started(env: dict[str, str], pid: int) -> int:
    count = 0
    for path in Path(env["IOLAB_JOURNAL_DIR"]).glob(f"iolab-{pid}-*.jsonl"):
        for line in path.read_text().splitlines():
            if '"killpg"' in line and json.loads(line).get("kind") == "killpg":
                count += 1
    return count


def killed_in_its_second_sample(env: dict[str, str], db: Path, plan: Path) -> None:
    proc = start(env, db, str(plan))
    deadline = time.monotonic() + 90
    while workloads_started(env, proc.pid) < 2:  # the second sample's workload runs
        assert time.monotonic() < deadline and proc.poll() is None, proc.communicate()
        time.sleep(0.05)
    proc.send_signal(signal.SIGKILL)
    proc.communicate()


def test_concurrent_resumes_store_exactly_the_planned_samples(
    tmp_path: Path, env: dict[str, str]
) -> None:
    plan = tmp_path / "plan.yaml"
    plan.write_text(PLAN)
    store_a, store_b = tmp_path / "a.db", tmp_path / "b.db"
    killed_in_its_second_sample(env, store_a, plan)
    killed_in_its_second_sample(env, store_b, plan)
    done = subprocess.run(
        [sys.executable, "-m", "iolab", "cleanup"], env=env, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    # two resumes of run 1 in store A, and run 1 of store B, all at once (a barrier: each
    # has started Python and imported iolab before any of them claims)
    resume = ("--resume", "1")
    procs = start_together(
        env, [(store_a, resume), (store_a, resume), (store_b, resume)], tmp_path / "go"
    )
    results = [(proc.wait(timeout=180), proc.communicate()) for proc in procs]
    codes = [code for code, _ in results]
    assert codes[2] == 0, results[2]  # another store's live run 1 does not block this one
    # released together, both claim within milliseconds, while the winner's two remaining
    # samples take seconds: the other is refused (both finishing would mean no race was run)
    assert sorted(codes[:2]) == [0, EXIT_REFUSED], results
    refused = next(err for code, (_, err) in results[:2] if code == EXIT_REFUSED)
    assert "run 1 is still running (pid" in refused and refused.count("\n") == 1
    for db in (store_a, store_b):
        with open_store(str(db)) as store:
            samples = store.samples(run_id=1, status=None)
            info = store.run(1)
        keys = [(s.case_key, s.block) for s in samples]
        assert len(keys) == 4 and len(set(keys)) == 4, keys
        assert info.status == "finished"
