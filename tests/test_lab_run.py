"""`iolab run` end to end with real fio on real loop devices: samples stored with KPI and
provenance, and the machine restored after a normal end, Ctrl-C, SIGTERM, and kill -9 +
`iolab cleanup`; `--resume` completes a killed run with exactly the planned samples."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from iolab.lab.commands import loop_devices_of
from iolab.lab.settings import held_original
from iolab.store import open_store

# a host-wide sysctl, read before and after each test: these tests take turns on one
# pytest-xdist worker (`make test` runs the host tests in parallel, docs/testing.md)
pytestmark = [pytest.mark.lab, pytest.mark.xdist_group("host-sysctl")]

SYSCTL = Path("/proc/sys/vm/dirty_expire_centisecs")

PLAN = """\
name: lab-test
target: {{size: 48M}}
filesystem: {{type: ext4, mkfs_options: -m 1, mount_options: "{mount}"}}
knobs:
  sysctl: {{vm.dirty_expire_centisecs: {expire}}}
  queue: {{read_ahead_kb: 64}}
workload:
  fio: |
    [w]
    filename={{mnt}}/f
    size=2M
    bs=16k
    rw=randwrite
    ioengine=psync
    fsync=1
    runtime={runtime}
    time_based=1
variants:
  a: {{fio: {{bs: 16k}}}}
  b: {{fio: {{bs: 8k}}}}
repeat: {repeat}
on_failure: {on_failure}
kpis: [write.iops]
"""


def write_plan(
    tmp_path: Path,
    *,
    repeat: int = 2,
    runtime: str = "300ms",
    mount: str = "noatime",
    on_failure: str = "continue",
    extra: str = "",
) -> Path:
    before = int(machine_value())
    expire = before - 7 if before > 100 else before + 7  # a value surely not in force now
    text = PLAN.format(
        mount=mount, expire=expire, runtime=runtime, repeat=repeat, on_failure=on_failure
    )
    path = tmp_path / "plan.yaml"
    path.write_text(text + extra)
    return path


@pytest.fixture
def lab(tmp_path: Path) -> Iterator[dict[str, str]]:
    """A private store and journal directory; whatever a test leaves is cleaned after it."""
    env = dict(os.environ)
    env["IOLAB_DB"] = str(tmp_path / "store.db")
    env["IOLAB_JOURNAL_DIR"] = str(tmp_path / "journal")
    sysctl_before = machine_value()
    try:
        yield env
    finally:
        subprocess.run([sys.executable, "-m", "iolab", "cleanup"], env=env, capture_output=True)
        # put it back only if no other iolab run (another suite) holds it: that one restores
        if (
            held_original(str(SYSCTL)) is None
            and SYSCTL.read_text().strip() != sysctl_before.strip()
        ):
            SYSCTL.write_text(sysctl_before)


def machine_value() -> str:
    """The sysctl's own value: the original another iolab run recorded while one holds it
    (a suite running beside this one), else what is in force."""
    held = held_original(str(SYSCTL))
    return SYSCTL.read_text() if held is None else held


def iolab(
    env: dict[str, str], *args: str, timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "iolab", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def _interruptible() -> None:
    """Ctrl-C reaches the child even when this suite was started with SIGINT ignored (a
    background job of a non-interactive shell, `nohup`), which a child would inherit."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def start(env: dict[str, str], *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "iolab", *args],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=_interruptible,
    )


def journal_lines(env: dict[str, str]) -> list[dict[str, object]]:
    out = []
    for path in Path(env["IOLAB_JOURNAL_DIR"]).glob("*.jsonl"):
        for line in path.read_text().splitlines():
            with contextlib.suppress(json.JSONDecodeError):
                out.append(json.loads(line))
    return out


def wait_for_workloads(
    env: dict[str, str], proc: subprocess.Popen[str], count: int
) -> list[dict[str, object]]:
    """Wait until the run has started its `count`-th workload (fio running); the journal."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        lines = journal_lines(env)
        if sum(1 for line in lines if line.get("kind") == "killpg") >= count:
            return lines
        assert proc.poll() is None, proc.communicate()
        time.sleep(0.05)
    raise AssertionError("the run never started its workload")


def leftovers_of(pid: int) -> list[str]:
    """Mounts, loop devices and image files of the iolab process `pid` still present."""
    found = []
    for line in Path("/proc/mounts").read_text().splitlines():
        if f"-{pid}-" in line.split()[1] and "/run/iolab/mnt/iolab-" in line:
            found.append(f"mount {line.split()[1]}")
    for image in Path("/dev/shm").glob(f"iolab-*-{pid}-*.img"):
        found.append(f"image {image}")
        found.extend(f"loop {dev}" for dev in loop_devices_of(str(image)))
    return found


def changed_queue_settings(lines: list[dict[str, object]]) -> list[str]:
    """Queue/sysctl files the run journaled whose value is not the one it found."""
    changed = []
    for line in lines:
        undo = line.get("undo")
        if line.get("kind") == "write" and isinstance(undo, dict):
            path = Path(str(undo["path"]))
            if path.exists() and path.read_text().strip() != str(undo["value"]):
                changed.append(f"{path}={path.read_text().strip()} (was {undo['value']})")
    return changed


def test_run_stores_every_planned_sample_with_kpi_and_provenance(
    tmp_path: Path, lab: dict[str, str]
) -> None:
    sysctl_before = SYSCTL.read_text()
    ra_before = {
        p.parent.parent.name: p.read_text()
        for p in Path("/sys/block").glob("loop*/queue/read_ahead_kb")
    }
    plan = write_plan(tmp_path, repeat=2)
    proc = start(lab, "run", "-q", str(plan))  # a Popen: its pid names what it made
    stdout, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 0, stderr
    assert "4/4 samples" in stdout
    with open_store(lab["IOLAB_DB"]) as store:
        samples = store.samples(run_id=1)
        info = store.run(1)
    assert info.status == "finished"
    assert len(samples) == 4
    assert sorted((s.variant, s.block) for s in samples) == [("a", 1), ("a", 2), ("b", 1), ("b", 2)]
    for sample in samples:
        assert sample.status == "ok"
        assert sample.metrics["write.iops"] > 0
        prov = sample.provenance
        assert prov["kernel"] == os.uname().release
        assert prov["fio_version"].startswith("3.")
        assert prov["plan_sha256"] == info.plan_hash
        assert prov["seed"] == info.meta["seed"]
        assert "noatime" in prov["mount_options"][0].split(",")
        dev = prov["devices"][0]["name"]
        assert prov["settings"][f"{dev}.queue.read_ahead_kb"] == "64"
        assert prov["settings"]["vm.dirty_expire_centisecs"] != sysctl_before.strip()
        assert prov["devices"][0]["backing_fs"] == "tmpfs"
    # blocks are complete and each block's order comes from the seed
    assert {s.position for s in samples} == {1, 2}
    # the machine is as it was
    assert SYSCTL.read_text() == sysctl_before
    used = samples[0].provenance["devices"][0]["name"]
    if used in ra_before:
        assert Path(f"/sys/block/{used}/queue/read_ahead_kb").read_text() == ra_before[used]
    assert not list(Path(lab["IOLAB_JOURNAL_DIR"]).glob("*.jsonl"))
    assert leftovers_of(proc.pid) == []  # no mount, image or loop device of this process


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_interrupt_restores_the_machine(tmp_path: Path, lab: dict[str, str], sig: int) -> None:
    sysctl_before = SYSCTL.read_text()
    plan = write_plan(tmp_path, repeat=3, runtime="1s")
    proc = start(lab, "run", "-q", str(plan))
    lines = wait_for_workloads(lab, proc, 1)
    time.sleep(0.2)
    proc.send_signal(sig)
    _, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 5, stderr
    assert stderr.strip().count("\n") == 0 and "interrupted" in stderr
    assert leftovers_of(proc.pid) == []
    assert SYSCTL.read_text() == sysctl_before
    assert changed_queue_settings(lines) == []
    assert not list(Path(lab["IOLAB_JOURNAL_DIR"]).glob("*.jsonl"))
    with open_store(lab["IOLAB_DB"]) as store:
        assert store.run(1).status == "interrupted"


def test_kill_9_then_cleanup_then_resume_completes_the_run(
    tmp_path: Path, lab: dict[str, str]
) -> None:
    sysctl_before = SYSCTL.read_text()
    plan = write_plan(tmp_path, repeat=2, runtime="500ms")
    proc = start(lab, "run", "-q", str(plan))
    wait_for_workloads(lab, proc, 2)  # the first sample is stored, the second is running
    proc.kill()
    proc.communicate(timeout=30)
    lines = journal_lines(lab)
    assert leftovers_of(proc.pid), "a killed run should leave its mount and loop device"
    cleanup = iolab(lab, "cleanup")
    assert cleanup.returncode == 0, cleanup.stderr
    assert leftovers_of(proc.pid) == []
    assert SYSCTL.read_text() == sysctl_before
    assert changed_queue_settings(lines) == []
    assert not list(Path(lab["IOLAB_JOURNAL_DIR"]).glob("*.jsonl"))

    with open_store(lab["IOLAB_DB"]) as store:
        first = {(s.variant, s.block): s.id for s in store.samples(run_id=1)}
    assert 1 <= len(first) < 4
    resumed = iolab(lab, "run", "-q", "--resume", "1")
    assert resumed.returncode == 0, resumed.stderr
    with open_store(lab["IOLAB_DB"]) as store:
        samples = store.samples(run_id=1)
        assert store.run(1).status == "finished"
    keys = sorted((s.variant, s.block) for s in samples)
    assert keys == [("a", 1), ("a", 2), ("b", 1), ("b", 2)]  # exactly the plan, none twice
    assert all(first[k] in {s.id for s in samples} for k in first)  # nothing redone
    assert SYSCTL.read_text() == sysctl_before


def test_failed_samples_are_stored_with_the_kernels_reason(
    tmp_path: Path, lab: dict[str, str]
) -> None:
    plan = write_plan(
        tmp_path,
        repeat=1,
        extra="  # overrides below\n",
    )
    text = (
        plan.read_text()
        .replace(
            "  b: {fio: {bs: 8k}}",
            "  b: {filesystem: {mount_options: 'noatime,iolab_no_such_option'}}",
        )
        .replace("  a: {fio: {bs: 16k}}", "  a: {fio: {directory: '{mnt}/no-such-dir'}}")
    )
    plan.write_text(text)
    proc = iolab(lab, "run", "-q", str(plan))
    assert proc.returncode == 0, proc.stderr
    with open_store(lab["IOLAB_DB"]) as store:
        samples = {s.variant: s for s in store.samples(run_id=1, status=None)}
    assert samples["b"].status == "failed"
    assert "iolab_no_such_option" in (samples["b"].reason or "")
    assert "refused" in (samples["b"].reason or "")
    assert samples["a"].status == "failed"
    assert samples["a"].reason
    for sample in samples.values():
        assert not any(k.startswith("write.") for k in sample.metrics)


def test_on_failure_stop_ends_the_run(tmp_path: Path, lab: dict[str, str]) -> None:
    plan = write_plan(tmp_path, repeat=2, on_failure="stop", mount="noatime,iolab_bad")
    proc = iolab(lab, "run", "-q", str(plan))
    assert proc.returncode == 4, proc.stderr
    assert proc.stderr.count("\n") == 1 and "stop" in proc.stderr
    with open_store(lab["IOLAB_DB"]) as store:
        assert len(store.samples(run_id=1, status=None)) == 1
        assert store.run(1).status == "failed"


GROUPS_PLAN = """\
name: two-write-groups
target: {size: 48M}
filesystem: {type: ext4, mkfs_options: -m 1, mount_options: noatime}
workload:
  fio: |
    [global]
    filename={mnt}/f
    size=2M
    bs=16k
    ioengine=psync
    [seq]
    rw=write
    [rand]
    stonewall
    rw=randwrite
    runtime=300ms
    time_based=1
variants: {only: {}}
repeat: 1
kpis: [write.iops]
"""


def test_missing_kpi_is_named_with_its_near_misses(tmp_path: Path, lab: dict[str, str]) -> None:
    """Two stonewalled groups that both write give group0/group1.write.iops, never a summed
    write.iops: a plan naming write.iops is told so once, with the names it could use."""
    plan = tmp_path / "groups.yaml"
    plan.write_text(GROUPS_PLAN)
    proc = iolab(lab, "run", "-q", str(plan))
    assert proc.returncode == 0, proc.stderr
    warning = (
        "warning: KPI write.iops is not among the workload's metrics; "
        "it has group0.write.iops, group1.write.iops"
    )
    assert proc.stderr.count(warning) == 1, proc.stderr
    with open_store(lab["IOLAB_DB"]) as store:
        (sample,) = store.samples(run_id=1)
    assert "write.iops" not in sample.metrics
    assert sample.metrics["group0.write.iops"] > 0 and sample.metrics["group1.write.iops"] > 0


def test_interrupted_ab_restores_the_machine_and_resumes(
    tmp_path: Path, lab: dict[str, str]
) -> None:
    """Ctrl-C during an ab run's second block: machine restored, exit 5 with the command
    that continues it; `ab --resume` then completes the budget from the next block on."""
    plan = write_plan(tmp_path, repeat=1, runtime="500ms")
    proc = start(lab, "ab", "-q", "--max-runs", "3", "--format", "json", str(plan))
    wait_for_workloads(lab, proc, 3)  # block 1 stored, block 2's first sample running
    time.sleep(0.2)
    proc.send_signal(signal.SIGINT)
    _, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 5, stderr
    assert "`iolab ab --resume 1` continues it" in stderr
    assert leftovers_of(proc.pid) == []
    with open_store(lab["IOLAB_DB"]) as store:
        assert store.run(1).status == "interrupted"
    resumed = iolab(lab, "ab", "--resume", "1", "--format", "json")
    assert resumed.returncode == 0, resumed.stderr
    assert "ab run 1 resumed at block" in resumed.stderr
    with open_store(lab["IOLAB_DB"]) as store:
        run = store.run(1)
        ok = store.samples(run_id=1)
        every = store.samples(run_id=1, status=None)
    assert run.status == "finished"
    assert max(s.block or 0 for s in every) == 3  # the budget counts every block number used
    complete = [
        b for b in {s.block for s in ok} if {s.variant for s in ok if s.block == b} == {"a", "b"}
    ]
    (state,) = json.loads(resumed.stdout)["groups"][0]["sequential"]
    assert state["n_blocks"] == len(complete) >= 2


@pytest.mark.parametrize("warmups", [0, 2])
def test_warmups_run_whole_samples_before_the_first_and_store_none(
    tmp_path: Path,
    lab: dict[str, str],
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    warmups: int,
) -> None:
    """`warmups: N`: N samples of the session's first case are prepared, run (real fio) and
    undone before its first measured one; only the planned samples are kept, the first one
    saying what came before it; nothing of the warm-ups is left on the machine."""
    import logging
    import threading

    from iolab.fleet.sinks import BufferSink
    from iolab.lab.runner import LabSession
    from iolab.plan import load_plan

    monkeypatch.setenv("IOLAB_JOURNAL_DIR", lab["IOLAB_JOURNAL_DIR"])
    path = write_plan(tmp_path, runtime="200ms", extra=f"warmups: {warmups}\n")
    plan = load_plan(str(path))
    assert plan.warmups == warmups
    sink = BufferSink(threading.Event())
    with caplog.at_level(logging.INFO, logger="iolab.lab"), LabSession(plan, sink, 1, 7) as s:
        s.run_block(1)
        s.run_block(2)
    warm = [r.getMessage() for r in caplog.records if r.name == "iolab.lab"]
    first = sink.samples[0]
    assert warm == [f"warm-up {n}/{warmups} of {first.variant}: done" for n in (1, 2)][:warmups]
    assert sorted((s.variant, s.block) for s in sink.samples) == [
        ("a", 1),
        ("a", 2),
        ("b", 1),
        ("b", 2),
    ]
    assert all(s.status == "ok" and s.metrics["write.iops"] > 0 for s in sink.samples)
    assert [s.provenance.get("warmups") for s in sink.samples] == [warmups or None, *[None] * 3]
    assert leftovers_of(os.getpid()) == []
