"""The judgement of the boot that follows a kernel switch (`switch.verdict`), on this machine:
the request is on disk as `switch.prepare` leaves it, and the boot it is judged against is
made up (a release, a command line, a boot id), so every way a host can come back is tried
without booting anything.  The guest's long tier boots a real wrong kernel through a host's
boot hook (tests/test_guest_kernels.py::test_a_boot_hook_that_boots_another_kernel)."""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path

import pytest

from iolab.kernels import boot, switch

ASKED = "6.1.0-50-cloud-amd64"
BASE = "root=/dev/vda rw console=ttyS0"


@pytest.fixture
def state(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "kernel-switch.json"
    monkeypatch.setenv("IOLAB_KERNEL_STATE", str(path))
    request = switch.Request(
        kernel=ASKED,
        additions=("loglevel=4",),
        cmdline=switch.new_cmdline(BASE, ASKED, ("loglevel=4",)),
        from_boot_id="boot-that-asked",
        from_release="6.1.0-47-cloud-amd64",
        requested_at=1.0,
        token="run 1 block 1 position 0",
    )
    path.write_text(json.dumps(asdict(request)))
    return path


def come_back(
    monkeypatch: pytest.MonkeyPatch, release: str, cmdline: str, boot_id: str = "new-boot"
) -> None:
    now = boot.BootInfo(release=release, cmdline=cmdline, boot_id=boot_id, build_id=None)
    monkeypatch.setattr(boot, "current", lambda: now)


def test_still_the_boot_that_asked_is_pending_and_keeps_the_request(
    state: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    come_back(monkeypatch, "6.1.0-47-cloud-amd64", BASE, boot_id="boot-that-asked")
    judged = switch.verdict()
    assert judged.verdict == "pending" and state.exists()


def test_the_kernel_asked_for_with_its_words_is_ok(
    state: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    come_back(monkeypatch, ASKED, switch.new_cmdline(BASE, ASKED, ("loglevel=4",)))
    switch.fired_path().write_text("1234.5\n")  # what the boot command's shell stamped
    judged = switch.verdict()
    assert judged.verdict == "ok", judged.reason
    assert judged.provenance()["boot_requested"] == ASKED
    assert judged.request is not None and judged.request.fired_at == 1234.5
    assert not state.exists()  # settled: the next start has nothing pending
    assert not switch.fired_path().exists()


@pytest.mark.parametrize(
    ("release", "cmdline", "hooks", "reason"),
    [
        # a boot hook that booted another kernel (the long tier's guest does this for real)
        ("6.1.0-56-cloud-amd64", f"{BASE} iolab.extra=1 loglevel=4", {}, "running 6.1.0-56"),
        # the kernel asked for, but the plan's word was dropped on the way
        (ASKED, BASE, {}, "command line lacks loglevel=4"),
        # everything as asked, but the host's own check refuses the boot
        (ASKED, f"{BASE} iolab.extra=1 loglevel=4", {"check": ["false"]}, "check hook"),
    ],
)
def test_another_boot_than_asked_is_wrong_kernel(
    state: Path,
    monkeypatch: pytest.MonkeyPatch,
    release: str,
    cmdline: str,
    hooks: dict[str, list[str]],
    reason: str,
) -> None:
    come_back(monkeypatch, release, cmdline)
    judged = switch.verdict(hooks)
    assert judged.verdict == "wrong_kernel"
    assert reason in judged.reason
    assert judged.provenance()["boot_verdict"] == "wrong_kernel"
    assert not state.exists()


def test_a_later_boot_never_answers_a_request_another_boot_answered(
    state: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A power cut mid-sample, then a cold boot: the request was answered by the boot made
    for it, so this one is nobody's (the redone sample asks for a boot of its own)."""
    req = switch.pending()
    assert req is not None
    switch.answered(req, "the-boot-made-for-it")
    come_back(monkeypatch, ASKED, switch.new_cmdline(BASE, ASKED, ("loglevel=4",)), "cold-boot")
    judged = switch.verdict()
    assert judged.verdict == "none" and judged.request is None
