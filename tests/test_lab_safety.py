"""Safety rules on real devices: the root disk, a mounted device and a device with a
filesystem are refused with one line and exit code 3; a blank designated device is used."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from iolab.errors import EXIT_REFUSED, RefusedError
from iolab.lab import safety
from iolab.store import open_store

pytestmark = pytest.mark.lab


def root_device() -> str:
    """The block device node holding / (from its device number in mountinfo)."""
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        fields = line.split()
        if fields[4] == "/":
            devno = fields[2]
            link = Path(f"/sys/dev/block/{devno}")
            if link.exists():
                return f"/dev/{Path(os.path.realpath(link)).name}"
    pytest.skip("/ is not on a block device here")


@pytest.fixture
def loop(tmp_path: Path) -> Iterator[str]:
    """A loop device of this test's own (image in tmp), detached and removed afterwards."""
    image = Path(f"/dev/shm/iolab-test-safety-{os.getpid()}.img")
    with open(image, "wb") as fh:
        fh.truncate(32 << 20)
    device = subprocess.run(
        ["losetup", "--find", "--show", str(image)], check=True, capture_output=True, text=True
    ).stdout.strip()
    mnt = tmp_path / "mnt"
    try:
        yield device
    finally:
        if any(
            line.split()[1] == str(mnt) for line in Path("/proc/mounts").read_text().splitlines()
        ):
            subprocess.run(["umount", str(mnt)], check=False)
        subprocess.run(["losetup", "-d", device], check=False)
        image.unlink()


def plan_on(tmp_path: Path, device: str) -> Path:
    path = tmp_path / "device-plan.yaml"
    path.write_text(
        f"""\
name: designated
target: {{kind: device, devices: [{device}]}}
filesystem: {{type: ext4}}
workload:
  fio: |
    [w]
    filename={{mnt}}/f
    size=1M
    rw=write
    bs=64k
repeat: 1
kpis: [write.bw_bytes]
"""
    )
    return path


def run_cli(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, IOLAB_DB=str(tmp_path / "s.db"), IOLAB_JOURNAL_DIR=str(tmp_path / "j"))
    return subprocess.run(
        [sys.executable, "-m", "iolab", *args], env=env, capture_output=True, text=True, timeout=120
    )


def test_root_disk_is_refused(tmp_path: Path) -> None:
    device = root_device()
    with pytest.raises(RefusedError, match="holds /"):
        safety.check_device(device, destroy_data=True)
    proc = run_cli(tmp_path, "run", str(plan_on(tmp_path, device)), "--destroy-data")
    assert proc.returncode == EXIT_REFUSED
    assert proc.stderr.count("\n") == 1 and proc.stderr.startswith("iolab: refusing")
    assert not (tmp_path / "j").exists() or not list((tmp_path / "j").iterdir())


def test_mounted_device_is_refused(tmp_path: Path, loop: str) -> None:
    subprocess.run(["mkfs.ext4", "-q", "-F", loop], check=True)
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    subprocess.run(["mount", loop, str(mnt)], check=True)
    with pytest.raises(RefusedError, match="mounted on"):
        safety.check_device(loop, destroy_data=True)
    proc = run_cli(tmp_path, "run", str(plan_on(tmp_path, loop)), "--destroy-data")
    assert proc.returncode == EXIT_REFUSED, proc.stderr
    assert proc.stderr.count("\n") == 1 and "mounted on" in proc.stderr
    # the refused run touched nothing: the filesystem is still mounted where it was
    assert any(
        line.split()[1] == str(mnt) for line in Path("/proc/mounts").read_text().splitlines()
    )


def test_signature_needs_destroy_data(tmp_path: Path, loop: str) -> None:
    subprocess.run(["mkfs.ext4", "-q", "-F", loop], check=True)
    with pytest.raises(RefusedError, match="ext4 signature"):
        safety.check_device(loop)
    proc = run_cli(tmp_path, "run", "-q", str(plan_on(tmp_path, loop)))
    assert proc.returncode == EXIT_REFUSED
    assert "--destroy-data" in proc.stderr and proc.stderr.count("\n") == 1
    blkid = subprocess.run(
        ["blkid", "-p", "-o", "value", "-s", "TYPE", loop], capture_output=True, text=True
    )
    assert blkid.stdout.strip() == "ext4"  # untouched

    proc = run_cli(tmp_path, "run", "-q", "--destroy-data", str(plan_on(tmp_path, loop)))
    assert proc.returncode == 0, proc.stderr
    with open_store(str(tmp_path / "s.db")) as store:
        (sample,) = store.samples(run_id=1)  # the refused attempt created no run
    assert sample.metrics["write.bw_bytes"] > 0
    assert sample.provenance["devices"][0]["name"] == Path(os.path.realpath(loop)).name
    assert not any(
        line.split()[0] == loop for line in Path("/proc/mounts").read_text().splitlines()
    )


def test_blank_device_passes(loop: str) -> None:
    assert safety.check_device(loop) == loop


def test_not_a_block_device(tmp_path: Path) -> None:
    with pytest.raises(RefusedError, match="not a block device"):
        safety.check_device(str(tmp_path))


@pytest.mark.parametrize("command", ["run", "ab"])
def test_refused_run_leaves_no_run(tmp_path: Path, loop: str, command: str) -> None:
    """Preflight comes before the store is opened: a device target that fails the safety
    rules (here: mounted) is refused, and neither `run` nor `ab` leaves a run behind — nor a
    new store file where none was."""
    subprocess.run(["mkfs.ext4", "-q", "-F", loop], check=True)
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    subprocess.run(["mount", loop, str(mnt)], check=True)
    plan = plan_on(tmp_path, loop)
    plan.write_text(
        plan.read_text() + "variants:\n  a: {}\n  b: {knobs: {vm.dirty_ratio: 30}}\nbaseline: a\n"
    )
    proc = run_cli(tmp_path, command, "-q", "--destroy-data", str(plan))
    assert proc.returncode == EXIT_REFUSED, proc.stderr
    assert proc.stderr.count("\n") == 1 and "mounted on" in proc.stderr
    assert not (tmp_path / "s.db").exists()
    open_store(str(tmp_path / "s.db")).close()  # an existing store gains no run either
    proc = run_cli(tmp_path, command, "-q", "--destroy-data", str(plan))
    assert proc.returncode == EXIT_REFUSED, proc.stderr
    with open_store(str(tmp_path / "s.db")) as store:
        assert store.runs() == []
