"""Plan loading and expansion: the example plans, profiles, overrides, placeholders."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from iolab.errors import LabError
from iolab.model.metrics import Direction
from iolab.plan import fiojob, load_plan
from iolab.plan.fiojob import apply_overrides, check_job
from iolab.plan.placeholders import render_workload, substitute

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"

# (file, profile) -> (cases, repeat)
EXPECTED = {
    ("ext4-fsync-vs-fdatasync.yaml", None): (2, 10),
    ("ext4-fsync-vs-fdatasync.yaml", "quick"): (2, 3),
    ("ext4-data-journal.yaml", None): (2, 10),
    ("ext4-data-journal.yaml", "quick"): (2, 3),
    ("ext4-data-journal.yaml", "demo"): (2, 10),
    ("writeback-dd-writers.yaml", None): (18, 2),
    ("writeback-dd-writers.yaml", "quick"): (8, 1),
    ("ext4-nodelalloc-dioread-nolock.yaml", None): (3, 10),
    ("ext4-nodelalloc-dioread-nolock.yaml", "quick"): (3, 3),
    ("raw-mq-deadline-vs-none.yaml", None): (2, 10),
    ("raw-mq-deadline-vs-none.yaml", "quick"): (2, 3),
    ("ext4-iversion.yaml", None): (2, 10),
    ("ext4-iversion.yaml", "quick"): (2, 3),
    ("0day-ext4-raid-writeback.yaml", None): (36, 3),
    ("0day-ext4-raid-writeback.yaml", "quick"): (8, 2),
    ("multipath-mq-deadline.yaml", None): (2, 10),
    ("multipath-mq-deadline.yaml", "quick"): (2, 3),
}


def write(tmp_path: Path, text: str, name: str = "plan.yaml") -> str:
    path = tmp_path / name
    path.write_text(text)
    return str(path)


def test_every_example_is_listed() -> None:
    assert {f for f, _ in EXPECTED} == {p.name for p in EXAMPLES.glob("*.yaml")}


@pytest.mark.parametrize(("name", "profile"), sorted(EXPECTED, key=str))
def test_examples_load_and_expand(name: str, profile: str | None) -> None:
    plan = load_plan(str(EXAMPLES / name), profile)
    cases, repeat = EXPECTED[(name, profile)]
    assert (len(plan.cases), plan.repeat) == (cases, repeat)
    assert len({c.key for c in plan.cases}) == cases
    assert [c.index for c in plan.cases] == list(range(cases))
    assert plan.profile == profile
    assert plan.kpis and all(k.direction is not Direction.NEUTRAL for k in plan.kpis)
    assert len(plan.sha256) == 64 and plan.text == (EXAMPLES / name).read_text()
    for case in plan.cases:
        texts = [case.workload.fio_text or "", *case.workload.argv]
        # Only the lab's placeholders are left.
        rendered = render_workload(
            case.workload,
            [f"/m{i}" for i in range(case.target.count)],
            [f"/dev/d{i}" for i in range(case.target.count)],
            "/w",
        )
        assert "{" not in (rendered.fio_text or "") + "".join(rendered.argv), texts


def test_fsync_example_variants_differ_only_in_sync_option() -> None:
    plan = load_plan(str(EXAMPLES / "ext4-fsync-vs-fdatasync.yaml"), "quick")
    fsync, fdatasync = plan.cases
    assert plan.variants == ("fsync", "fdatasync") and plan.baseline == "fsync"
    assert "fsync=1" in (fsync.workload.fio_text or "").splitlines()
    assert "fdatasync=1" not in (fsync.workload.fio_text or "")
    assert "fdatasync=1" in (fdatasync.workload.fio_text or "").splitlines()
    assert fsync.filesystem == fdatasync.filesystem
    assert fsync.filesystem is not None
    assert fsync.filesystem.mkfs_options == ("-m", "1", "-b", "4096")
    assert fsync.filesystem.mount_options == ("noatime", "nodiratime", "data=ordered")
    assert set(fsync.monitors) == {"jbd2", "diskstats", "vmstat", "hist"}
    warm = fsync.prepare.warmup
    assert warm is not None and "runtime=1s" in (warm.fio_text or "")
    assert "runtime=1s" in (fsync.workload.fio_text or "")  # the quick profile's runtime


def test_writeback_matrix_sets_sysctl_bytes_fs_and_writers() -> None:
    plan = load_plan(str(EXAMPLES / "writeback-dd-writers.yaml"))
    assert plan.matrix == {
        "writers": ("1", "10", "100"),
        "dirty": ("100M", "1000M"),
        "fs": ("ext4", "xfs", "btrfs"),
    }
    case = next(c for c in plan.cases if c.key == "writers=100/dirty=100M/fs=xfs")
    assert case.sysctls == {"vm.dirty_bytes": str(100 * 1024 * 1024)}
    assert case.filesystem is not None and case.filesystem.type == "xfs"
    lines = (case.workload.fio_text or "").splitlines()
    assert "numjobs=100" in lines and "size=11M" in lines
    assert plan.variants == () and plan.baseline is None
    assert all(c.variant is None for c in plan.cases)


def test_raw_example_has_two_devices_and_scheduler_variants() -> None:
    plan = load_plan(str(EXAMPLES / "raw-mq-deadline-vs-none.yaml"))
    assert [c.queue for c in plan.cases] == [{"scheduler": "mq-deadline"}, {"scheduler": "none"}]
    assert all(c.filesystem is None and c.target.count == 2 for c in plan.cases)


def test_nodelalloc_example_uses_xfs_io_argv() -> None:
    plan = load_plan(str(EXAMPLES / "ext4-nodelalloc-dioread-nolock.yaml"), "quick")
    argv = plan.cases[0].workload.argv
    assert argv == ("xfs_io", "-f", "-c", "pwrite -W 0 128M", "{mnt}/testfile")
    assert [c.filesystem.mount_options for c in plan.cases if c.filesystem] == [
        (),
        ("nodelalloc",),
        ("nodelalloc", "dioread_nolock"),
    ]


BASE = """\
name: t
filesystem: {type: ext4, mount_options: noatime}
workload:
  fio: |
    [j]
    directory={mnt}
    rw=write
    size=1M
kpis: [write.iops]
"""


def test_variant_deep_merges_and_matrix_applies_last(tmp_path: Path) -> None:
    text = BASE + (
        "knobs: {sysctl: {vm.dirty_ratio: 20}, queue: {nr_requests: 64}}\n"
        "variants:\n"
        "  a: {}\n"
        "  b: {knobs: {queue.scheduler: mq-deadline, vm.dirty_background_bytes: 1M}}\n"
        "matrix:\n"
        "  scheduler: [none, kyber]\n"
    )
    plan = load_plan(write(tmp_path, text))
    assert [c.key for c in plan.cases] == [
        "a/scheduler=none",
        "b/scheduler=none",
        "a/scheduler=kyber",
        "b/scheduler=kyber",
    ]
    b = plan.cases[1]
    assert b.sysctls == {"vm.dirty_ratio": "20", "vm.dirty_background_bytes": "1048576"}
    assert b.queue == {"nr_requests": "64", "scheduler": "none"}  # the cell wins
    assert plan.cases_of("a") == (plan.cases[0], plan.cases[2])


def test_profile_overrides_before_expansion(tmp_path: Path) -> None:
    text = (
        BASE + "vars: {n: 4}\n"
        "fio: {numjobs: '{n}'}\n"
        "repeat: 9\n"
        "matrix: {bs: [4k, 64k, 1m]}\n"
        "profiles:\n"
        "  quick: {repeat: 2, matrix: {bs: [4k]}, vars: {n: 1}}\n"
    ).replace("rw=write", "rw=write\n    bs={bs}")
    full, quick = load_plan(write(tmp_path, text)), load_plan(write(tmp_path, text), "quick")
    assert (len(full.cases), full.repeat, len(quick.cases), quick.repeat) == (3, 9, 1, 2)
    assert "numjobs=4" in (full.cases[0].workload.fio_text or "").splitlines()
    assert full.cases[0].vars == {"n": "4", "bs": "4k"}
    assert quick.cases[0].vars == {"n": "1", "bs": "4k"}


def test_fio_overrides_replace_in_every_section_and_null_removes() -> None:
    text = "[global]\nbs=4k\n\n[a]\nfsync=1\n[b]\nrw=write\n"
    out = apply_overrides(text, {"fsync": None, "fdatasync": "1", "direct": ""})
    assert out.splitlines() == [
        "[global]",
        "fdatasync=1",
        "direct",
        "bs=4k",
        "",
        "[a]",
        "[b]",
        "rw=write",
    ]
    assert apply_overrides("[a]\nrw=read\n", {"bs": "8k"}).splitlines()[:2] == ["[global]", "bs=8k"]


def test_placeholders_two_passes() -> None:
    text = substitute("{a} {mnt} {dev1} {{x}} ${HOME} {b}", {"a": "1", "mnt": "no"})
    assert text == "1 {mnt} {dev1} {{x}} ${HOME} {b}"


def test_check_job_runs_real_fio() -> None:
    assert check_job("[j]\nfilename={dev0}:{dev1}\nrw=write\nbs=128k\n") is None
    problem = check_job("[j]\nfilename={dev}\nrw=bogus\n")
    assert problem is not None and "rw=bogus" in problem


def test_a_fio_that_does_not_answer_is_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The check's timeout is a LabError naming the wait, not an internal error (a guest
    on a loaded machine once took more than the old 30 s).  A stand-in fio that only
    sleeps: what is tested is the wait, not fio."""
    slow = tmp_path / "fio"
    slow.write_text("#!/bin/sh\nexec sleep 30\n")
    slow.chmod(0o755)
    monkeypatch.setenv("PATH", f"{tmp_path}:{os.environ['PATH']}")
    monkeypatch.setattr(fiojob, "CHECK_TIMEOUT_S", 0.5)
    with pytest.raises(LabError, match=r"^fio --parse-only did not answer within 0.5 s"):
        check_job("[j]\nfilename={dev}\nrw=write\n# a text no other test checks\n")


def test_command_workload_and_metric_rule(tmp_path: Path) -> None:
    text = (
        "filesystem: none\n"
        "workload:\n"
        "  command:\n"
        "    argv: [sh, -c, 'echo rate {n}', '{dev}']\n"
        "    metric: {name: write.bw_bytes, regex: 'rate (\\d+)', scale: 1048576}\n"
        "vars: {n: 5}\n"
        "kpis: [write.bw_bytes]\n"
    )
    case = load_plan(write(tmp_path, text)).cases[0]
    assert case.workload.argv == ("sh", "-c", "echo rate 5", "{dev}")
    assert case.workload.metric is not None and case.workload.metric.scale == 1048576.0
    assert case.filesystem is None and case.target.size_bytes == 1 << 30


def test_fio_file_is_read_relative_to_the_plan(tmp_path: Path) -> None:
    (tmp_path / "jobs").mkdir()
    (tmp_path / "jobs" / "w.fio").write_text("[w]\ndirectory={mnt}\nrw=write\nsize=1M\n")
    text = BASE.replace("  fio: |\n    [j]\n    directory={mnt}\n    rw=write\n    size=1M\n", "")
    text = text.replace("workload:\n", "workload: {fio_file: jobs/w.fio}\n")
    plan = load_plan(write(tmp_path, text))
    assert "[w]" in (plan.cases[0].workload.fio_text or "")


def test_device_target_and_count_inference(tmp_path: Path) -> None:
    text = BASE.replace("directory={mnt}", "directory={mnt2}")
    assert load_plan(write(tmp_path, text)).cases[0].target.count == 3
    dev = text + "target: {kind: device, devices: [/dev/vdb, /dev/vdc, /dev/vdd]}\n"
    target = load_plan(write(tmp_path, dev)).cases[0].target
    assert (target.kind, target.count, target.devices) == (
        "device",
        3,
        ("/dev/vdb", "/dev/vdc", "/dev/vdd"),
    )


def test_what_fio_accepted_is_remembered_for_that_fio_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A job text this fio accepted is not checked again by a new process (a worker after
    each kernel switch): a file beside no other says so.  A rejected text is checked every
    time, and another fio binary (an upgrade, a rebuild) checks for itself.  A stand-in
    that counts its starts and runs the real fio."""
    real = shutil.which("fio")
    assert real is not None
    bindir = tmp_path / "bin"
    bindir.mkdir()
    starts = tmp_path / "starts"
    wrapper = bindir / "fio"
    wrapper.write_text(f'#!/bin/sh\necho x >> {starts}\nexec {real} "$@"\n')
    wrapper.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bindir}:{os.environ['PATH']}")
    monkeypatch.setenv("IOLAB_FIO_CHECKS", str(tmp_path / "accepted"))

    def check(text: str) -> str | None:
        check_job.cache_clear()  # a new process: only the disk remembers
        return check_job(text)

    def count() -> int:
        return len(starts.read_text().splitlines()) if starts.exists() else 0

    good = "[j]\nfilename={dev}\nrw=randwrite\nbs=8k\n# remembered\n"
    assert check(good) is None and count() == 1
    assert check(good) is None and count() == 1  # remembered: no fio started
    assert len(list((tmp_path / "accepted").iterdir())) == 1
    bad = "[j]\nfilename={dev}\nrw=sideways\n"
    assert "rw=sideways" in (check(bad) or "") and count() == 2
    assert "rw=sideways" in (check(bad) or "") and count() == 3  # never remembered
    wrapper.write_text(wrapper.read_text() + "# rebuilt\n")  # another binary
    assert check(good) is None and count() == 4
