"""Monitors on a real kernel: an ext4 loop image of our own, a short fsync-heavy fio job.

Each test checks that the evidence is there (transactions, handles, write I/Os, histogram
bins that add up to their count) and that nothing is left behind: no trace instance of this
process, no bpftrace child, no private tracefs mount, every journal entry undone.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from iolab.errors import LabError
from iolab.lab.journal import Journal
from iolab.monitors import hist as hist_module
from iolab.monitors import registry
from iolab.monitors.base import MonitorContext, Reading
from iolab.monitors.bpftrace import BpftraceSession
from iolab.monitors.hist import HistMonitor
from iolab.monitors.procfs import kernel_dev_t
from iolab.monitors.tracepoints import Probe, probes_for
from iolab.procs import process_stats

pytestmark = [
    pytest.mark.lab,
    pytest.mark.skipif(os.geteuid() != 0, reason="needs root"),
    pytest.mark.skipif(shutil.which("fio") is None, reason="needs fio"),
]
HAS_BPFTRACE = shutil.which("bpftrace") is not None


@dataclass
class RecordingJournal:
    """A test double of the ChangeJournal protocol: remembers what was recorded and undone."""

    entries: list[tuple[str, dict[str, str]]] = field(default_factory=list)
    undone_ids: set[int] = field(default_factory=set)

    def record(self, kind: str, **undo: str) -> int:
        self.entries.append((kind, undo))
        return len(self.entries)

    def undone(self, entry_id: int) -> None:
        self.undone_ids.add(entry_id)


@dataclass
class Ext4:
    device: str  # kernel name, e.g. "loop5"
    mountpoint: Path
    workdir: Path


def _run(*argv: str) -> str:
    return subprocess.run(argv, check=True, capture_output=True, text=True).stdout.strip()


@pytest.fixture
def ext4() -> Iterator[Ext4]:
    base = Path(f"/dev/shm/iolab-montest-{os.getpid()}")
    image, mnt, work = base / "img", base / "mnt", base / "work"
    base.mkdir()
    loop = ""
    try:
        mnt.mkdir()
        work.mkdir()
        _run("truncate", "-s", "128M", str(image))
        _run("mkfs.ext4", "-q", "-F", "-b", "4096", str(image))
        loop = _run("losetup", "-f", "--show", str(image))
        _run("mount", loop, str(mnt))
        yield Ext4(os.path.basename(loop), mnt, work)
    finally:
        subprocess.run(["umount", str(mnt)], capture_output=True, check=False)
        # detach only loop devices backed by our own image
        for dev in _run("losetup", "-j", str(image), "-O", "NAME", "-n").split():
            subprocess.run(["losetup", "-d", dev], capture_output=True, check=False)
        shutil.rmtree(base, ignore_errors=True)


def _fio(mountpoint: Path) -> None:
    """Four writers of 16 KiB random buffered writes with fsync after each, 0.5 s."""
    _run(
        "fio", "--name=mon", f"--directory={mountpoint}", "--rw=randwrite", "--bs=16k",
        "--size=1m", "--fsync=1", "--numjobs=4", "--runtime=0.5", "--time_based",
        "--output-format=terse",
    )  # fmt: skip


def _children_named(comm: str) -> list[int]:
    """Live (not zombie) processes whose parent is this test process and whose name is comm."""
    me = os.getpid()
    return [p.pid for p in process_stats() if p.comm == comm and p.ppid == me and p.state != "Z"]


def _our_trace_instances(pid: int | None = None) -> list[str]:
    """Instances named after this process (or pid), looked up in a private tracefs mount."""
    script = "mount -t tracefs nodev /sys/kernel/tracing && ls /sys/kernel/tracing/instances"
    out = _run("unshare", "--mount", "--propagation", "private", "sh", "-c", script)
    return [n for n in out.split() if n.startswith(f"iolab-{pid or os.getpid()}-")]


def _assert_nothing_left(journal: RecordingJournal) -> None:
    assert _children_named("bpftrace") == []
    assert _our_trace_instances() == []
    assert not list(Path("/tmp").glob(f"iolab-tracefs-{os.getpid()}-*"))
    assert journal.undone_ids == set(range(1, len(journal.entries) + 1))


def _measure(ctx: MonitorContext, names: list[str]) -> dict[str, Reading]:
    monitors = registry.create(names)
    for m in monitors:
        assert m.unavailable(ctx) is None, m.name
    started = []
    try:
        for m in monitors:
            m.start(ctx)
            started.append(m)
        _fio(ctx.mountpoint or Path("/nonexistent"))
    finally:
        readings = {m.name: m.stop(ctx) for m in reversed(started)}
    return readings


def _check_histograms(reading: Reading) -> None:
    assert reading.warnings == []
    assert set(reading.histograms) == {
        "hist.ext4_writepages_pages",
        "hist.jbd2_handles_per_txn",
        "hist.rq_issue_bytes",
    }
    for name, bins in reading.histograms.items():
        assert bins and all(count > 0 for count in bins.values())
        assert sum(bins.values()) == reading.metrics[f"{name}.count"]
        mean = sum(v * c for v, c in bins.items()) / sum(bins.values())
        assert reading.metrics[f"{name}.mean"] == pytest.approx(mean)
    # 16 KiB writes on 4 KiB pages: every writepages call wrote at most a few pages
    assert reading.metrics["hist.ext4_writepages_pages.mean"] >= 1


@pytest.mark.parametrize(
    "hist_name",
    [
        pytest.param(
            "hist@bpftrace",
            marks=pytest.mark.skipif(not HAS_BPFTRACE, reason="bpftrace not installed"),
        ),
        "hist@tracefs",
    ],
)
def test_all_monitors_on_a_real_ext4_sample(ext4: Ext4, hist_name: str) -> None:
    journal = RecordingJournal()
    ctx = MonitorContext([ext4.device], ext4.mountpoint, "ext4", journal, ext4.workdir)
    try:
        readings = _measure(ctx, ["jbd2", "diskstats", "vmstat", "cpu_sys", hist_name])
    finally:
        _assert_nothing_left(journal)
    jbd2 = readings["jbd2"].metrics
    assert jbd2["jbd2.transactions"] > 0
    assert jbd2["jbd2.handles_per_txn"] > 0
    assert jbd2["jbd2.avg_commit_ms"] > 0
    disk = readings["diskstats"].metrics
    assert disk[f"diskstats.{ext4.device}.write_ios"] > 0
    assert disk[f"diskstats.{ext4.device}.flush_ios"] > 0  # fsync reaches the device
    assert readings["vmstat"].metrics["vmstat.nr_dirtied_pages"] > 0
    assert readings["cpu_sys"].metrics["cpu_sys.system_s"] > 0
    hist = readings["hist"]
    _check_histograms(hist)
    # both count the same commits, give or take one at each edge of the traced window
    commits = hist.metrics["hist.jbd2_handles_per_txn.count"]
    assert abs(commits - jbd2["jbd2.transactions"]) <= 2 + 0.05 * jbd2["jbd2.transactions"]
    # only the target's requests were counted: at most what the device saw
    issued = hist.metrics["hist.rq_issue_bytes.count"]
    assert (
        issued
        <= disk[f"diskstats.{ext4.device}.write_ios"]
        + disk[f"diskstats.{ext4.device}.read_ios"]
        + disk[f"diskstats.{ext4.device}.flush_ios"]
        + 16
    )
    kinds = {kind for kind, _ in journal.entries}
    assert kinds == ({"killpg"} if hist_name == "hist@bpftrace" else {"rmdir", "umount"})


def test_auto_falls_back_to_tracefs_without_bpftrace(
    ext4: Ext4, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(hist_module, "bpftrace_path", lambda: None)
    journal = RecordingJournal()
    ctx = MonitorContext([ext4.device], ext4.mountpoint, "ext4", journal, ext4.workdir)
    monitor = HistMonitor()
    try:
        monitor.start(ctx)
        _fio(ext4.mountpoint)
        reading = monitor.stop(ctx)
    finally:
        _assert_nothing_left(journal)
    assert monitor.used == "tracefs"
    _check_histograms(reading)


_CHILD = """
import sys, time
from pathlib import Path
from iolab.lab.journal import Journal
from iolab.monitors.base import MonitorContext
from iolab.monitors.hist import HistMonitor
jdir, dev, mnt, work, backend = sys.argv[1:]
journal = Journal.open(Path(jdir))
ctx = MonitorContext([dev], Path(mnt), "ext4", journal, Path(work))
HistMonitor(backend).start(ctx)
print("started", flush=True)
time.sleep(600)
"""


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


@pytest.mark.parametrize(
    "backend",
    [
        pytest.param("bpftrace", marks=pytest.mark.skipif(not HAS_BPFTRACE, reason="no bpftrace")),
        "tracefs",
    ],
)
def test_cleanup_after_kill_9_removes_what_a_monitor_set_up(
    ext4: Ext4, backend: str, tmp_path: Path
) -> None:
    """An iolab process killed with -9 while its monitor runs: the bpftrace child dies with it
    (PDEATHSIG) and the journal alone removes the trace instance and the private tracefs
    mount, as `iolab cleanup` does."""
    import signal
    import sys

    from iolab.lab.journal import cleanup_leftover, leftovers

    child = subprocess.Popen(
        [sys.executable, "-c", _CHILD, str(tmp_path), ext4.device, str(ext4.mountpoint),
         str(ext4.workdir), backend],
        stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert child.stdout is not None and child.stdout.readline().strip() == "started"
        (left,) = leftovers(tmp_path)
        if backend == "tracefs":
            assert _our_trace_instances(child.pid)
            assert {e.kind for e in left.entries} == {"rmdir", "umount"}
        else:
            (entry,) = left.entries
            assert entry.kind == "killpg" and _alive(int(entry.args["pgid"]))
        child.send_signal(signal.SIGKILL)
        child.wait(timeout=10)
        (left,) = leftovers(tmp_path)
        assert not left.owner_alive
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
        failures = [f for left in leftovers(tmp_path) for f in cleanup_leftover(left)]
    assert failures == []
    assert leftovers(tmp_path) == []
    assert _our_trace_instances(child.pid) == []
    assert not list(Path("/tmp").glob(f"iolab-tracefs-{child.pid}-*"))
    if backend == "bpftrace":
        assert not _alive(int(entry.args["pgid"]))


def test_real_journal_after_a_normal_sample(ext4: Ext4, tmp_path: Path) -> None:
    journal = Journal.open(tmp_path)
    ctx = MonitorContext([ext4.device], ext4.mountpoint, "ext4", journal, ext4.workdir)
    readings = _measure(ctx, ["hist@tracefs"])
    _check_histograms(readings["hist"])
    assert journal.entries and all(e.undone for e in journal.entries)
    journal.close()
    assert not journal.path.exists()


@pytest.mark.skipif(not HAS_BPFTRACE, reason="bpftrace not installed")
def test_bpftrace_failure_is_one_line_and_leaves_nothing(ext4: Ext4) -> None:
    journal = RecordingJournal()
    bogus = Probe("x", "nosuchsystem", "nosuchevent", "f", None, re.compile("x"))
    session = BpftraceSession([bogus], [kernel_dev_t(ext4.device)], journal, ext4.workdir)
    with pytest.raises(LabError, match=r"^bpftrace failed to start: .*nosuchsystem") as info:
        session.start()
    assert "\n" not in info.value.message
    _assert_nothing_left(journal)


@pytest.mark.skipif(not HAS_BPFTRACE, reason="bpftrace not installed")
def test_bpftrace_that_does_not_exit_still_gives_its_histograms(ext4: Ext4) -> None:
    """The maps are read before bpftrace is asked to exit: a bpftrace whose exit hangs (its
    probes' detach waits on the kernel) is killed, and the sample keeps its histograms."""
    journal = RecordingJournal()
    ctx = MonitorContext([ext4.device], ext4.mountpoint, "ext4", journal, ext4.workdir)
    probes = probes_for(ctx)
    session = BpftraceSession(
        probes, [kernel_dev_t(ext4.device)], journal, ext4.workdir, exit_timeout_s=1.0
    )
    session.start()
    try:
        proc = session._proc
        assert proc is not None
        proc.send_signal = lambda sig: None  # type: ignore[method-assign]  # SIGINT is lost
        _fio(ext4.mountpoint)
        hists, warnings = session.stop()
    finally:
        _assert_nothing_left(journal)
    assert warnings == []
    assert proc.returncode == -signal.SIGKILL  # it did not exit: it was killed
    assert set(hists) == {p.histogram for p in probes}
    for name, bins in hists.items():
        assert bins and all(count > 0 for count in bins.values()), name
