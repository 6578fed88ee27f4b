"""The guest accelerator probe: a boot sector that ends QEMU at once, the override, the cache."""

from __future__ import annotations

import shutil
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from iolab.guest import accel, run, vm


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


@pytest.mark.parametrize(
    ("modules", "hardware"),
    [
        (["kvm", "kvm_pvm"], False),  # kvm-pvm: no VT-x/AMD-V, only its own guest kernels
        (["kvm"], False),
        ([], False),
        (["kvm", "kvm_intel"], True),
        (["kvm", "kvm_amd"], True),
    ],
)
def test_kvm_is_tried_only_with_the_cpus_virtualization(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, modules: list[str], hardware: bool
) -> None:
    for name in modules:
        (tmp_path / name).mkdir()
    assert accel.hardware_kvm(tmp_path) is hardware
    monkeypatch.setattr(accel, "SYS_MODULE", tmp_path)
    if not hardware:

        def no_qemu(*_: object, **__: object) -> None:
            raise AssertionError("probed a KVM that cannot run the guests' kernels")

        monkeypatch.setattr(subprocess, "run", no_qemu)
        assert accel.kvm_runs() is False


@pytest.mark.skipif(
    not Path("/sys/module/kvm_pvm").is_dir() or accel.hardware_kvm(),
    reason="this machine's KVM is not kvm-pvm alone",
)
def test_this_machines_kvm_pvm_is_not_taken_for_kvm() -> None:
    # here the probe's sector runs under kvm-pvm (it exits with the probe's status), while
    # the guest image's kernel stops on an instruction its emulator lacks
    assert accel.kvm_runs() is False


def test_the_probe_asks_for_the_cpu_guests_get(tmp_path: Path) -> None:
    argv = accel.probe_argv(tmp_path / "probe.img")
    assert argv[argv.index("-cpu") + 1] == accel.cpu_model("kvm")


def test_cpu_model_follows_the_accelerator() -> None:
    assert accel.cpu_model("kvm") == "host"
    assert accel.cpu_model("tcg") == "max,-erms,-fsrm"


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


def _spec(tmp_path: Path, **kw: Any) -> vm.VmSpec:
    base: dict[str, Any] = {
        "kernel": tmp_path / "vmlinuz", "initrd": tmp_path / "initrd", "cmdline": "root=/dev/vda",
        "disks": (), "out": tmp_path / "out", "console": tmp_path / "console",
        "pidfile": tmp_path / "pid", "memory_mib": 512,
    }  # fmt: skip
    return vm.VmSpec(**{**base, **kw})


def test_an_instruction_clocked_guest_asks_qemu_for_icount_and_keeps_it(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """`--icount 4`: QEMU's `-icount shift=4,sleep=on`, kept in the spec a power cycle starts
    from; a guest without it gets no such words."""
    monkeypatch.setenv(accel.ENV, "tcg")
    spec = _spec(tmp_path, icount_shift=4)
    argv = spec.argv()
    assert argv[argv.index("-icount") + 1] == "shift=4,sleep=on"
    again = vm.VmSpec.from_json(spec.to_json())
    assert again == spec and again.argv() == argv
    plain = _spec(tmp_path)
    assert "-icount" not in plain.argv()
    assert vm.VmSpec.from_json(plain.to_json()).icount_shift is None


@pytest.mark.parametrize(
    ("kw", "said"),
    [
        ({"icount_shift": 4, "cpus": 2}, "one virtual CPU, not 2"),
        ({"icount_shift": 11}, "a shift of 0 to 10"),
        ({"icount_shift": -1}, "a shift of 0 to 10"),
    ],
)
def test_an_instruction_clock_refuses_what_qemu_cannot_run(
    tmp_path: Path, kw: dict[str, object], said: str
) -> None:
    from iolab.errors import LabError

    with pytest.raises(LabError, match=said):
        _spec(tmp_path, **kw)


def test_an_instruction_clock_is_refused_under_kvm(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """KVM runs the guest's instructions natively: nothing counts them, so the spec says so
    rather than booting a guest whose clock is not what was asked for."""
    from iolab.errors import LabError

    monkeypatch.setenv(accel.ENV, "kvm")
    spec = _spec(tmp_path, icount_shift=4)
    with pytest.raises(LabError, match="needs TCG, and this machine's guests use kvm"):
        spec.argv()


def test_this_machines_qemu_runs_a_guest_on_the_instruction_clock(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """The words the spec gives QEMU, given to the real QEMU with the probe's sector under
    TCG: it runs the sector and ends with the probe's status."""
    monkeypatch.setenv(accel.ENV, "tcg")
    spec = _spec(tmp_path, icount_shift=4)
    words = spec.argv()
    icount = words[words.index("-icount") : words.index("-icount") + 2]
    image = tmp_path / "probe.img"
    image.write_bytes(accel._boot_sector())
    swap = {"pc,accel=kvm": "pc,accel=tcg", accel.cpu_model("kvm"): accel.cpu_model("tcg")}
    argv = [swap.get(a, a) for a in accel.probe_argv(image)] + icount
    done = subprocess.run(argv, timeout=60, check=False, capture_output=True)
    assert done.returncode == accel._PROBE_STATUS, done.stderr


QEMU_HALT = """\
KVM internal error. Suberror: 1
extra data[0]: 0x0000000000000001
emulation failure
RAX=ffff8c92c1041040 RBX=0000000000000000 RCX=0000000080400040 RDX=0000000000400001
"""


def test_a_guest_qemu_paused_on_a_kvm_error_is_seen(tmp_path: Path) -> None:
    log = tmp_path / "qemu.log"
    assert vm.halted(log) is None  # no log yet
    log.write_text("qemu-system-x86_64: warning: host doesn't support requested feature\n")
    assert vm.halted(log) is None
    log.write_text(QEMU_HALT)  # what QEMU wrote on the kvm-pvm machine, then waited
    assert vm.halted(log) == "KVM internal error. Suberror: 1"


def test_qemus_last_words_say_why_it_ended(tmp_path: Path) -> None:
    """A QEMU that refuses to start says why in its log's last line; `guest up` prints it
    (the guest's directory is removed after)."""
    log = tmp_path / "qemu.log"
    assert vm.last_words(log) is None
    log.write_text("")
    assert vm.last_words(log) is None
    argv = ["qemu-system-x86_64", "-machine", "none", "-display", "none"]
    argv += ["-drive", f"file={tmp_path / 'missing.img'},if=none,format=raw"]
    with log.open("w") as out:
        subprocess.run(argv, stdout=out, stderr=out, timeout=60, check=False)
    said = vm.last_words(log) or ""
    assert "missing.img" in said and "No such file or directory" in said


def test_a_run_whose_qemu_paused_ends_at_once(tmp_path: Path) -> None:
    # a process that would outlive the test's patience stands in for the paused QEMU: the
    # wait ends on the log's line, not on the run's timeout
    (tmp_path / "console").write_text("[    0.000000] Linux version 6.1.0-47-cloud-amd64\n")
    (tmp_path / "qemu.log").write_text(QEMU_HALT)
    paused = subprocess.Popen(["sleep", "600"])
    try:
        with pytest.raises(run.GuestError, match=r"stopped by QEMU: KVM internal error.*Linux"):
            run._wait(paused, tmp_path, "6.1.0-47-cloud-amd64", time.monotonic(), 600.0)
        assert paused.poll() is None  # ended by the log, not by the process
    finally:
        paused.kill()
        paused.wait()
