"""Host-wide settings under concurrent runs (issue 8): two runs setting the same sysctl leave it
as it was, each sample measured under its own run's value; after kill -9, `iolab cleanup`
puts the original back.  Real fio on real loop devices."""

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

from iolab.lab import settings
from iolab.store import open_store

# a host-wide sysctl, read before and after each test: these tests take turns on one
# pytest-xdist worker (`make test` runs the host tests in parallel, docs/testing.md)
pytestmark = [pytest.mark.lab, pytest.mark.xdist_group("host-sysctl")]

PAIR = (Path("/proc/sys/vm/dirty_bytes"), Path("/proc/sys/vm/dirty_ratio"))

PLAN = """\
name: dirty-{name}
target: {{size: 32M}}
filesystem: ext4
knobs: {{sysctl: {{vm.dirty_bytes: {value}}}}}
workload:
  fio: |
    [w]
    filename={{mnt}}/f
    size=1M
    bs=64k
    rw=write
    runtime={runtime}
    time_based=1
repeat: {repeat}
kpis: [write.bw_bytes]
prepare: {{drop_caches: false}}
"""


def pair() -> tuple[str, str]:
    return PAIR[0].read_text().strip(), PAIR[1].read_text().strip()


@pytest.fixture
def machine(tmp_path: Path) -> Iterator[dict[str, str]]:
    """Env of a private store and journal; the dirty pair is put back whatever happens."""
    before = pair()
    env = dict(os.environ, IOLAB_JOURNAL_DIR=str(tmp_path / "journal"))
    try:
        yield env
    finally:
        subprocess.run([sys.executable, "-m", "iolab", "cleanup"], env=env, capture_output=True)
        if pair() != before:
            which = PAIR[0] if before[0] != "0" else PAIR[1]
            which.write_text(before[0] if which == PAIR[0] else before[1])


def start(env: dict[str, str], db: Path, plan: Path) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "iolab", "--db", str(db), "run", "-q", str(plan)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def write_plan(tmp_path: Path, name: str, value: str, repeat: int, runtime: str) -> Path:
    path = tmp_path / f"{name}.yaml"
    path.write_text(PLAN.format(name=name, value=value, repeat=repeat, runtime=runtime))
    return path


def test_two_runs_setting_the_same_sysctl_leave_it_as_it_was(
    tmp_path: Path, machine: dict[str, str]
) -> None:
    before = pair()
    values = {"a": str(100 << 20), "b": str(200 << 20), "c": str(100 << 20)}
    procs = {}
    for name, value in values.items():
        plan = write_plan(tmp_path, name, value, repeat=3, runtime="300ms")
        procs[name] = start(machine, tmp_path / f"{name}.db", plan)
    for name, proc in procs.items():
        _, err = proc.communicate(timeout=180)
        assert proc.returncode == 0, (name, err)
    assert pair() == before
    for name, value in values.items():
        with open_store(str(tmp_path / f"{name}.db")) as store:
            samples = store.samples(run_id=1)
        assert len(samples) == 3
        # every sample measured under its own run's value, whatever the others did
        assert {s.provenance["settings"]["vm.dirty_bytes"] for s in samples} == {value}
    assert not json.loads((settings.registry_dir() / settings.REGISTRY).read_text() or "{}").get(
        "vm.dirty_bytes+vm.dirty_ratio"
    )


def test_kill_9_holder_then_cleanup_restores_the_original(
    tmp_path: Path, machine: dict[str, str]
) -> None:
    before = pair()
    value = str(150 << 20)
    plan = write_plan(tmp_path, "k", value, repeat=1, runtime="20s")
    proc = start(machine, tmp_path / "k.db", plan)
    deadline = time.monotonic() + 60
    while PAIR[0].read_text().strip() != value:
        assert time.monotonic() < deadline and proc.poll() is None, proc.communicate()
        time.sleep(0.05)
    # while it holds the pair, the registry tells anyone what the machine's own value is
    in_force = 0 if before[0] != "0" else 1
    held = settings.held_original(str(PAIR[in_force]))
    assert held is not None and held.strip() == before[in_force]
    proc.send_signal(signal.SIGKILL)
    proc.communicate()
    assert PAIR[0].read_text().strip() == value  # nothing ran in the killed process
    assert settings.held_original(str(PAIR[in_force])) is None  # its holder is dead
    done = subprocess.run(
        [sys.executable, "-m", "iolab", "cleanup"], env=machine, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    assert pair() == before


def test_these_tests_take_turns_under_make_tests_workers(request: pytest.FixtureRequest) -> None:
    """The tests of this file and of test_lab_run.py read the machine's sysctls before and
    after: under `make test`'s pytest-xdist workers (`--dist loadgroup`) they run one at a
    time only if their group reached the scheduler, which reads it from the node id (a pytest
    that drops it spreads the group over both workers)."""
    if not getattr(request.config.option, "loadgroup", False):  # set in pytest-xdist workers
        pytest.skip("not under pytest-xdist --dist loadgroup")
    assert request.node.nodeid.endswith("@host-sysctl"), request.node.nodeid
