"""Start QEMU for a guest and always stop it: the argv, the process, the forwarded ports.

The accelerator is KVM where a probe shows KVM really runs a guest, else TCG (`guest.accel`;
`$IOLAB_GUEST_ACCEL` overrides it).  Under TCG a guest may run on an instruction clock
(`icount_shift`): its time then advances 2**shift ns per instruction executed, whatever else
the host is doing, so a timing in the guest measures the work done rather than the host's load.
The network is QEMU's user network with `restrict=on`: the guest can reach nothing but the
ports forwarded to it, each `guestfwd=tcp:10.0.2.100:PORT-cmd:socat - TCP:127.0.0.1:PORT`
(a new socat per connection, so successive connections work; a `-tcp:` chardev would carry
one only).  Nothing leaves the machine: the controller side is always loopback.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import shutil
import signal
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from iolab.errors import LabError
from iolab.guest.accel import accelerator, cpu_model, kernel_args

ICOUNT_MAX_SHIFT = 10  # QEMU's limit for a fixed shift
GUEST_GATEWAY = "10.0.2.100"  # where forwarded services appear inside the guest
_PR_SET_PDEATHSIG = 1


@dataclass(frozen=True)
class Disk:
    path: Path
    format: str = "raw"
    readonly: bool = False
    serial: str = ""  # the guest reads it in /sys/block/vdX/serial (at most 20 characters)


@dataclass(frozen=True)
class VmSpec:
    """One guest's QEMU: direct kernel boot, virtio disks, a virtio port to a file."""

    kernel: Path
    initrd: Path
    cmdline: str
    disks: tuple[Disk, ...]
    out: Path  # the guest's /dev/virtio-ports/iolab.out, appended to this file
    console: Path  # the serial console (kernel and systemd messages)
    pidfile: Path
    memory_mib: int = 1024
    # virtual CPUs; under TCG each is a host thread (multi-threaded TCG), so a second one lets
    # a boot's services and the worker's Python start overlap on a 2-core machine
    cpus: int = 1
    forwards: tuple[int, ...] = ()  # loopback ports the guest reaches at GUEST_GATEWAY:PORT
    reboot_exits: bool = True  # a reboot (or a panic) ends QEMU
    extra: tuple[str, ...] = field(default=())
    # QEMU's `-icount shift=N`: the guest's clock counts instructions (TCG only, one CPU)
    icount_shift: int | None = None

    def __post_init__(self) -> None:
        if self.icount_shift is None:
            return
        if not 0 <= self.icount_shift <= ICOUNT_MAX_SHIFT:
            raise LabError(
                f"guest: --icount {self.icount_shift}: a shift of 0 to {ICOUNT_MAX_SHIFT}"
            )
        if self.cpus != 1:
            # QEMU runs every virtual CPU of an instruction-clocked guest in one thread; with
            # two, QEMU 7.2 here never brought the second one up
            raise LabError(f"guest: --icount runs one virtual CPU, not {self.cpus} (--cpus 1)")

    def to_json(self) -> dict[str, Any]:
        """Everything needed to start the same QEMU again (`guest up` keeps it in the guest's
        state, `power_cycle` starts from it)."""
        return {
            "kernel": str(self.kernel),
            "initrd": str(self.initrd),
            "cmdline": self.cmdline,
            "disks": [[str(d.path), d.format, d.readonly, d.serial] for d in self.disks],
            "out": str(self.out),
            "console": str(self.console),
            "pidfile": str(self.pidfile),
            "memory_mib": self.memory_mib,
            "cpus": self.cpus,
            "forwards": list(self.forwards),
            "reboot_exits": self.reboot_exits,
            "extra": list(self.extra),
            "icount_shift": self.icount_shift,
        }

    @classmethod
    def from_json(cls, raw: dict[str, Any]) -> VmSpec:
        """The spec `to_json` wrote; a LabError when a field is missing or malformed."""
        try:
            return cls(
                kernel=Path(raw["kernel"]),
                initrd=Path(raw["initrd"]),
                cmdline=str(raw["cmdline"]),
                disks=tuple(
                    Disk(Path(d[0]), str(d[1]), bool(d[2]), str(d[3]) if len(d) > 3 else "")
                    for d in raw["disks"]
                ),
                out=Path(raw["out"]),
                console=Path(raw["console"]),
                pidfile=Path(raw["pidfile"]),
                memory_mib=int(raw["memory_mib"]),
                cpus=int(raw.get("cpus", 1)),
                forwards=tuple(int(p) for p in raw["forwards"]),
                reboot_exits=bool(raw["reboot_exits"]),
                extra=tuple(str(a) for a in raw.get("extra", ())),
                icount_shift=None if raw.get("icount_shift") is None else int(raw["icount_shift"]),
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise LabError(f"guest: a stored QEMU spec is incomplete ({exc})") from None

    def argv(self) -> list[str]:
        accel = accelerator()
        net = "user,id=net0,restrict=on"
        for port in self.forwards:
            net += f",guestfwd=tcp:{GUEST_GATEWAY}:{port}-cmd:socat - TCP:127.0.0.1:{port}"
        argv = [
            "qemu-system-x86_64",
            "-nodefaults",
            "-no-user-config",
            "-machine",
            f"pc,accel={accel}",
            "-cpu",
            cpu_model(accel),
            "-smp",
            str(self.cpus),
            "-m",
            str(self.memory_mib),
            "-display",
            "none",
            "-serial",
            f"file:{self.console}",
            "-kernel",
            str(self.kernel),
            "-initrd",
            str(self.initrd),
            "-append",
            " ".join(w for w in (self.cmdline, kernel_args(accel)) if w),
            "-device",
            "virtio-rng-pci",
            "-device",
            "virtio-serial-pci",
            "-chardev",
            f"file,id=iolabout,path={self.out}",
            "-device",
            "virtserialport,chardev=iolabout,name=iolab.out",
            "-netdev",
            net,
            "-device",
            "virtio-net-pci,netdev=net0",
            "-pidfile",
            str(self.pidfile),
        ]
        # each disk a virtio-blk device of its own, in order (vda, vdb, …): a serial is the
        # device's, not the drive's, in the QEMU of Debian 12
        for i, disk in enumerate(self.disks):
            ro = ",readonly=on" if disk.readonly else ""
            serial = f",serial={disk.serial}" if disk.serial else ""
            argv += ["-drive", f"file={disk.path},if=none,id=disk{i},format={disk.format}{ro}"]
            argv += ["-device", f"virtio-blk-pci,drive=disk{i}{serial}"]
        if self.reboot_exits:
            argv.append("-no-reboot")
        if self.icount_shift is not None:
            if accel != "tcg":
                raise LabError(f"guest: --icount needs TCG, and this machine's guests use {accel}")
            # sleep=on: an idle guest waits in real time, so its clock keeps up with the host's
            argv += ["-icount", f"shift={self.icount_shift},sleep=on"]
        return argv + list(self.extra)


def _die_with_parent() -> None:
    """In the child: QEMU gets SIGKILL when the process that started it dies (even by -9)."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)


def need_qemu() -> None:
    for tool, package in (("qemu-system-x86_64", "qemu-system-x86"), ("socat", "socat")):
        if shutil.which(tool) is None:
            raise LabError(f"guest: {tool} is missing (apt-get install {package})")


def start(spec: VmSpec, log: Path, *, detached: bool = False) -> subprocess.Popen[bytes]:
    """QEMU for `spec`, in a session of its own.  Attached (the default) it dies with this
    process; detached (`iolab guest up`) it outlives it and `stop` ends it by pid."""
    need_qemu()
    with log.open("ab") as out:
        return subprocess.Popen(
            spec.argv(),
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            preexec_fn=None if detached else _die_with_parent,
        )


# what QEMU writes when KVM could not run an instruction: it then pauses the guest and waits,
# alive and silent, for a monitor command that never comes (docs/guests.md, kvm-pvm)
_HALTED = ("KVM internal error", "emulation failure")


def halted(log: Path) -> str | None:
    """QEMU's own line when it paused the guest on a KVM internal error, else None: a guest
    that can never go on is reported at once rather than on its timeout."""
    try:
        text = log.read_text(errors="replace")
    except OSError:
        return None
    for line in text.splitlines():
        if any(mark in line for mark in _HALTED):
            return line.strip()[:160]
    return None


def last_words(log: Path) -> str | None:
    """QEMU's last line in its log (its reason, when it refused to start: a bad option, a
    missing file), else None."""
    try:
        lines = [ln.strip() for ln in log.read_text(errors="replace").splitlines()]
    except OSError:
        return None
    said = [ln for ln in lines if ln]
    if not said:
        return None
    last = said[-1]  # QEMU puts its reason last, after the option it quotes
    return last if len(last) <= 200 else "…" + last[-200:]


def kill(proc: subprocess.Popen[bytes]) -> None:
    """SIGKILL QEMU's whole session (socat helpers included) and reap it."""
    if proc.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(timeout=30)
