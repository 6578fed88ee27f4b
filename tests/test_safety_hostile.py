"""Hostile plans (issue 8): options naming other devices, workloads leaving the scratch
mount, alias bombs, oversized targets, system directories — each refused with one line and
its exit code before anything is created, on real loop devices with real fio."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from iolab.errors import EXIT_BAD_INPUT, EXIT_LAB_FAILED, EXIT_REFUSED, PlanError, RefusedError
from iolab.lab import devargs
from iolab.plan import load_plan, nodes
from iolab.store import open_store

pytestmark = pytest.mark.lab

FIO_JOB = """\
    [w]
    {where}
    size=1M
    rw=write
    bs=64k
"""


def plan_text(
    *, filesystem: str = "{type: ext4}", where: str = "filename={mnt}/f", extra: str = ""
) -> str:
    return (
        "name: hostile\n"
        "target: {size: 32M}\n"
        f"filesystem: {filesystem}\n"
        "workload:\n"
        "  fio: |\n" + FIO_JOB.format(where=where) + "repeat: 1\nkpis: [write.bw_bytes]\n" + extra
    )


def blkid_type(device: str) -> str:
    return subprocess.run(
        ["blkid", "-p", "-o", "value", "-s", "TYPE", device], capture_output=True, text=True
    ).stdout.strip()


@pytest.fixture(scope="module")
def victim() -> Iterator[str]:
    """A loop device of the test's own carrying an ext4 signature: the data disk at risk."""
    image = Path(f"/dev/shm/iolab-test-victim-{os.getpid()}.img")
    with open(image, "wb") as fh:
        fh.truncate(128 << 20)
    device = subprocess.run(
        ["losetup", "--find", "--show", str(image)], check=True, capture_output=True, text=True
    ).stdout.strip()
    try:
        subprocess.run(["mkfs.ext4", "-q", "-F", "-O", "journal_dev", device], check=True)
        yield device
    finally:
        subprocess.run(["losetup", "-d", device], check=False)
        image.unlink()


def iolab(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, IOLAB_DB=str(tmp_path / "s.db"), IOLAB_JOURNAL_DIR=str(tmp_path / "j"))
    return subprocess.run(
        [sys.executable, "-m", "iolab", *args], env=env, capture_output=True, text=True, timeout=120
    )


def assert_nothing_made(tmp_path: Path, proc: subprocess.CompletedProcess[str]) -> None:
    """One line on stderr; no run in the store, no journal, no image of that process."""
    assert proc.stderr.count("\n") == 1 and proc.stderr.startswith("iolab: "), proc.stderr
    if (tmp_path / "s.db").exists():
        with open_store(str(tmp_path / "s.db")) as store:
            assert store.runs() == []
    journal = tmp_path / "j"
    assert not journal.exists() or not list(journal.iterdir())


@pytest.mark.parametrize(
    "filesystem",
    [
        "{{type: btrfs, mkfs_options: [{dev}]}}",  # mkfs.btrfs takes any extra device
        "{{type: xfs, mkfs_options: '-l logdev={dev},size=8m'}}",
        "{{type: xfs, mkfs_options: '-r rtdev={esc}'}}",
        "{{type: ext4, mkfs_options: -J device={dev}}}",
        "{{type: ext4, mkfs_options: -J device=UUID={uuid}}}",
        "{{type: ext4, mkfs_options: -J device={link}}}",  # a /dev/disk/by-id style symlink
        "{{type: xfs, mount_options: 'logdev={dev}'}}",
    ],
)
def test_option_naming_another_device_is_refused(
    tmp_path: Path, victim: str, filesystem: str
) -> None:
    uuid = subprocess.run(
        ["blkid", "-p", "-o", "value", "-s", "UUID", victim], capture_output=True, text=True
    ).stdout.strip()
    link = tmp_path / "by-id-disk"
    link.symlink_to(victim)
    esc = victim.replace("/", "\\/")
    fs = filesystem.format(dev=victim, uuid=uuid, link=link, esc=esc)
    plan = tmp_path / "plan.yaml"
    plan.write_text(plan_text(filesystem=fs))
    proc = iolab(tmp_path, "run", "-q", str(plan))
    assert proc.returncode == EXIT_REFUSED, proc.stderr
    assert "not one of the run's targets" in proc.stderr
    assert_nothing_made(tmp_path, proc)
    assert blkid_type(victim) == "jbd"  # the victim keeps its signature


def test_workload_naming_another_device_is_refused(victim: str) -> None:
    words = devargs.fio_words(f"[w]\nfilename=/tmp/x:{victim}\n")
    with pytest.raises(RefusedError, match=victim):
        devargs.check_words(words, ["/dev/loop-none"], what="fio workload")
    devargs.check_words([f"filename={victim}"], [victim], what="fio workload")  # its own


@pytest.mark.parametrize(
    ("where", "blamed"),
    [
        ("filename=/tmp/iolab-escape", "filename=/tmp/iolab-escape"),
        ("directory=/var/tmp", "directory=/var/tmp"),
        ("filename={mnt}/../../etc/x", "'..'"),
        ("filename={mnt}/f:/etc/f", "filename={mnt}/f:/etc/f"),
        ("filename=/dev/vda", "filename=/dev/vda"),
        ("filename=${HOME}/f", "environment variable"),
        ("write_bw_log=/tmp/bw", "write_bw_log"),
        ("exec_prerun=/bin/true", "runs a program"),
        ("ioengine=exec", "ioengine=exec"),
        ("ioengine=/tmp/engine.so", "ioengine=/tmp/engine.so"),
        ("cgroup=iolab", "control groups"),
        ("ioscheduler=none", "scheduler"),
    ],
)
def test_fio_job_leaving_the_scratch_mount_is_refused(
    tmp_path: Path, where: str, blamed: str
) -> None:
    plan = tmp_path / "plan.yaml"
    plan.write_text(plan_text(where=f"{where}\n    filename={{mnt}}/g"))
    with pytest.raises(RefusedError, match="leaves the sample") as info:
        load_plan(str(plan))
    assert blamed in info.value.message
    assert info.value.message.startswith(f"{plan}:")


def test_fio_outside_refused_by_the_cli_before_anything(tmp_path: Path) -> None:
    plan = tmp_path / "plan.yaml"
    plan.write_text(plan_text(where="directory=/tmp"))
    proc = iolab(tmp_path, "run", "-q", str(plan))
    assert proc.returncode == EXIT_REFUSED
    assert "directory=/tmp: not under {mnt}" in proc.stderr
    assert_nothing_made(tmp_path, proc)


def test_allow_paths_lets_a_path_in(tmp_path: Path) -> None:
    plan = tmp_path / "plan.yaml"
    plan.write_text(
        plan_text(
            where="write_lat_log=/srv/iolab-logs/lat", extra="allow_paths: [/srv/iolab-logs]\n"
        )
    )
    assert load_plan(str(plan)).cases
    plan.write_text(plan_text(extra="allow_paths: [/etc]\n"))
    with pytest.raises(RefusedError, match="system directory"):
        load_plan(str(plan))


@pytest.mark.parametrize(
    ("workload", "blamed"),
    [
        ("dd: [if=/dev/zero, 'of=/tmp/out', bs=1M, count=1]", "of=/tmp/out"),
        ("dd: [if=/dev/loop0, 'of={mnt}/f']", "if=/dev/loop0"),
        ("dd: [if=/etc/shadow, 'of={mnt}/f']", "if=/etc/shadow"),
        ("xfs_io: [-f, -c, 'pwrite 0 1m', /tmp/x]", "/tmp/x"),
        ("xfs_io: [-f, -c, 'reflink /etc/passwd', '{mnt}/f']", "/etc/passwd"),
    ],
)
def test_dd_and_xfs_io_paths_are_confined(tmp_path: Path, workload: str, blamed: str) -> None:
    plan = tmp_path / "plan.yaml"
    plan.write_text(
        "target: {size: 32M}\nfilesystem: ext4\n"
        f"workload: {{{workload}}}\nkpis: [write.bw_bytes]\n"
    )
    with pytest.raises(RefusedError, match="leaves the sample") as info:
        load_plan(str(plan))
    assert blamed in info.value.message


# "billion laughs": nine levels of nine aliases expand to 9**9 strings
BOMB = 'a: &a ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]\n' + "".join(
    f"{cur}: &{cur} [{', '.join([f'*{prev}'] * 9)}]\n"
    for prev, cur in zip("abcdefgh", "bcdefghi", strict=True)
)


class _CountedConversion:
    """Counts the values `parse_yaml` builds (each alias copy is one), and stops a runaway
    expansion at 10 x the budget, so a broken guard fails this test in seconds."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.built = 0
        self._real = nodes._convert
        monkeypatch.setattr(nodes, "_convert", self)

    def __call__(self, *args: Any) -> nodes.Node:
        self.built += 1
        assert self.built <= 10 * nodes.MAX_NODES, "the alias bomb is being expanded"
        return self._real(*args)


# Wall time would only say "the machine was quick" (and flakes when it is loaded): what must
# hold is that a bomb is refused before a single value of it is built.  A generous wall-clock
# bound stays as a backstop for the counting pass itself (linear in the document).
def test_alias_bomb_is_refused_before_it_expands(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    plan = tmp_path / "bomb.yaml"
    plan.write_text(BOMB)
    counted = _CountedConversion(monkeypatch)
    started = time.monotonic()
    with pytest.raises(PlanError, match="expands to more than"):
        load_plan(str(plan))
    assert counted.built == 0
    assert time.monotonic() - started < 30
    plan.write_text(BOMB.replace("i: &i", "# i: &i"))  # eight levels: 9**8 values, still a bomb
    with pytest.raises(PlanError, match="expands to more than"):
        load_plan(str(plan))
    assert counted.built == 0
    small = tmp_path / "aliases.yaml"  # the counter counts: aliases within the budget expand
    small.write_text("a: &a [1, 2, 3]\nb: [*a, *a]\n")
    assert nodes.parse_yaml(small.read_text(), str(small)).items()["b"].elements()[1].is_list
    assert counted.built == 1 + (1 + 3) + 1 + 2 * (1 + 3)  # root, a, b and b's two copies of a
    proc = iolab(tmp_path, "run", str(plan))
    assert proc.returncode == EXIT_BAD_INPUT
    assert "expands to more than" in proc.stderr and proc.stderr.count("\n") == 1


def test_merge_key_bomb_and_recursive_alias(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    lines = ["a: &a {a1: 1, a2: 2, a3: 3, a4: 4, a5: 5, a6: 6, a7: 7, a8: 8, a9: 9}"]
    for i in range(1, 9):
        prev, cur = chr(96 + i), chr(97 + i)
        lines.append(f"{cur}: &{cur} {{<<: [{', '.join([f'*{prev}'] * 9)}], {cur}x: 1}}")
    plan = tmp_path / "merge.yaml"
    plan.write_text("\n".join(lines) + "\n")
    counted = _CountedConversion(monkeypatch)
    started = time.monotonic()
    with pytest.raises(PlanError, match="expands to more than"):
        load_plan(str(plan))
    assert counted.built == 0
    assert time.monotonic() - started < 30
    plan.write_text("a: &a [*a]\n")
    with pytest.raises(PlanError, match="contains it"):
        load_plan(str(plan))


def test_bad_files_end_in_one_line(tmp_path: Path) -> None:
    nul = tmp_path / "nul.yaml"
    nul.write_bytes(b"name: x\nkpis: [a\x00b]\n")
    proc = iolab(tmp_path, "run", str(nul))
    assert proc.returncode == EXIT_BAD_INPUT and "nul.yaml:2: a NUL byte" in proc.stderr
    for args in (["run", "/dev/zero"], ["import", "--label", "z", "/dev/zero"]):
        started = time.monotonic()
        proc = iolab(tmp_path, *args)
        assert proc.returncode == EXIT_BAD_INPUT, proc.stderr
        assert "not a regular file" in proc.stderr and proc.stderr.count("\n") == 1
        assert time.monotonic() - started < 10
    huge = tmp_path / "huge.yaml"
    huge.write_text("# " + "x" * (2 << 20))
    with pytest.raises(PlanError, match="larger than"):
        load_plan(str(huge))


def test_bounds_and_system_directories(tmp_path: Path) -> None:
    plan = tmp_path / "plan.yaml"
    plan.write_text(plan_text().replace("repeat: 1", "repeat: 100000000"))
    with pytest.raises(PlanError, match="at most 10000 blocks"):
        load_plan(str(plan))
    for directory in ("/etc", "/", "/usr/lib", "/proc/self"):
        plan.write_text(
            plan_text().replace(
                "{size: 32M}", f"{{size: 32M, backing: disk, directory: {directory}}}"
            )
        )
        with pytest.raises(RefusedError, match="system directory"):
            load_plan(str(plan))


def test_loop_image_larger_than_free_space_is_refused_first(tmp_path: Path) -> None:
    plan = tmp_path / "plan.yaml"
    plan.write_text(plan_text().replace("{size: 32M}", "{size: 8T, backing: ram}"))
    proc = iolab(tmp_path, "run", "-q", str(plan))
    assert proc.returncode == EXIT_LAB_FAILED, proc.stderr
    assert "in /dev/shm, which has" in proc.stderr
    assert_nothing_made(tmp_path, proc)


def test_bisect_job_file_from_the_tree_is_confined(tmp_path: Path) -> None:
    """A job file read from each commit's tree ({src}/...) is checked when it is read."""
    from iolab.bisect.commit_arms import bind

    plan = tmp_path / "plan.yaml"
    plan.write_text(
        'target: {size: 32M}\nfilesystem: ext4\nworkload:\n  fio_file: "{src}/w.fio"\n'
        "kpis: [write.bw_bytes]\n"
    )
    case = load_plan(str(plan)).cases[0]
    (tmp_path / "w.fio").write_text("[w]\ndirectory=/tmp\nsize=1M\nrw=write\n")
    with pytest.raises(RefusedError, match="directory=/tmp: not under"):
        bind(case, tmp_path, "0" * 40)
    (tmp_path / "w.fio").write_text("[w]\nfilename={mnt}/f\nsize=1M\nrw=write\n")
    assert "filename=" in (bind(case, tmp_path, "0" * 40).workload.fio_text or "")
