"""The guest accelerator probe: a boot sector that ends QEMU at once, the override, the cache."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from iolab.guest import accel


@pytest.mark.skipif(shutil.which("qemu-system-x86_64") is None, reason="no QEMU")
def test_the_probe_sector_ends_qemu_with_its_status_under_tcg(tmp_path: Path) -> None:
    # the same program the KVM probe boots: if it did not end QEMU under TCG, a working KVM
    # could never be recognised either
    image = tmp_path / "probe.img"
    image.write_bytes(accel._boot_sector())
    swap = {"pc,accel=kvm": "pc,accel=tcg", accel.cpu_model("kvm"): accel.cpu_model("tcg")}
    argv = [swap.get(a, a) for a in accel.probe_argv(image)]
    done = subprocess.run(argv, timeout=60, check=False, capture_output=True)
    assert done.returncode == accel._PROBE_STATUS, done.stderr


def test_the_sector_is_one_bootable_sector() -> None:
    sector = accel._boot_sector()
    assert len(sector) == 512
    assert sector[-2:] == b"\x55\xaa"


def test_the_override_wins(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv(accel.ENV, "tcg")
    assert accel.accelerator(tmp_path) == "tcg"
    assert not list(tmp_path.iterdir())  # no probe, nothing cached


def test_a_boots_answer_is_kept(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv(accel.ENV, raising=False)
    monkeypatch.setattr(accel, "kvm_runs", lambda timeout=0.0: False)
    assert accel.accelerator(tmp_path) == "tcg"
    cached = list(tmp_path.iterdir())
    assert len(cached) == 1 and cached[0].read_text().strip() == "tcg"

    def must_not_probe(timeout: float = 0.0) -> bool:
        raise AssertionError("probed twice in one boot")

    monkeypatch.setattr(accel, "kvm_runs", must_not_probe)
    assert accel.accelerator(tmp_path) == "tcg"


def test_the_probe_asks_for_the_cpu_guests_get(tmp_path: Path) -> None:
    argv = accel.probe_argv(tmp_path / "probe.img")
    assert argv[argv.index("-cpu") + 1] == accel.cpu_model("kvm")


def test_cpu_model_follows_the_accelerator() -> None:
    assert accel.cpu_model("kvm") == "host"
    assert accel.cpu_model("tcg") == "max"


@pytest.mark.parametrize(("which", "words"), [("tcg", ["tsc=reliable"]), ("kvm", [])])
def test_a_tcg_guest_keeps_the_tsc_as_its_clock(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, which: str, words: list[str]
) -> None:
    """Under TCG the guest would fall back to the HPET, an emulated device access under
    QEMU's global lock at every clock read (the samples of one kernel scattered by 30%, 5%
    with the TSC): the command line keeps the TSC; a KVM guest has kvm-clock."""
    from iolab.guest import vm

    monkeypatch.setenv(accel.ENV, which)
    spec = vm.VmSpec(
        kernel=tmp_path / "vmlinuz", initrd=tmp_path / "initrd", cmdline="root=/dev/vda rw",
        disks=(), out=tmp_path / "out", console=tmp_path / "console",
        pidfile=tmp_path / "pid", memory_mib=512,
    )  # fmt: skip
    argv = spec.argv()
    assert argv[argv.index("-append") + 1].split() == ["root=/dev/vda", "rw", *words]
