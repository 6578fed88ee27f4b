"""Boot a guest, run one script in it, get its output and exit status back.

The script runs as root once per boot (`iolab-guest-run.service`), its output goes to a
virtio port that QEMU appends to a file here, and the guest powers off when it ends.  A
script that switches kernels (kexec, reboot) touches `$IOLAB_STAY` first and then runs
again after the next boot; each boot's output is kept apart, with the release and boot id
that boot reported.  The root is a throw-away qcow2 overlay; QEMU is killed and every file
removed whatever happens, and a run that overruns its timeout ends as an error.
"""

from __future__ import annotations

import os
import re
import secrets
import shutil
import subprocess
import tempfile
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from iolab.errors import LabError
from iolab.guest import disks, files, vm
from iolab.guest.image import Image
from iolab.procs import process_alive, process_start

DEFAULT_TIMEOUT_S = 300.0
BOOT_MARK = "IOLAB-BOOT"  # + "-<nonce> <release> <boot id>": the first line of each boot

# On the command disk as `boot`; iolab-guest-run.service (guest.files) runs it at each boot
# with the disk mounted.  Here rather than in the image: changing it rebuilds nothing.
BOOT_SCRIPT = (
    """\
#!/bin/bash
# iolab.mode=run: the command disk's script once per boot; output to the virtio port iolab.out
set -u
nonce=$(cat /run/iolab-cmd/nonce)
port=$("""
    + files.PORT
    + """) || port=/dev/virtio-ports/iolab.out
exec >>"$port" 2>&1
echo "IOLAB-BOOT-$nonce $(uname -r) $(cat /proc/sys/kernel/random/boot_id)"
# the unit's ExecStartPre (iolab-guest-mount) has mounted the iolab source
mountpoint -q /opt/iolab/src || echo "iolab: the iolab source disk (IOLABSRC) is not mounted"
export IOLAB_STAY=/run/iolab-stay HOME=/root PYTHONDONTWRITEBYTECODE=1
export PATH=/opt/iolab/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
cd /root
bash /run/iolab-cmd/script
rc=$?
if [ -e "$IOLAB_STAY" ]; then
  echo "IOLAB-STAY-$nonce"
  exit 0
fi
echo "IOLAB-EXIT-$nonce $rc"
sync
systemctl start --no-block poweroff.target >/dev/null 2>&1
"""
)


class GuestError(LabError):
    """The guest did not run the script to its end (timeout, crash, no output)."""


@dataclass(frozen=True)
class Boot:
    """One boot of the guest as the run script saw it."""

    release: str
    boot_id: str
    output: str


@dataclass(frozen=True)
class GuestRun:
    boots: tuple[Boot, ...]
    exit_status: int
    seconds: float

    @property
    def output(self) -> str:
        return "".join(b.output for b in self.boots)


def cmdline(mode: str, extra: str = "") -> str:
    base = f"root=/dev/vda rw console=ttyS0 panic=-1 iolab.mode={mode}"
    return f"{base} {extra}".strip()


WORK_PARENT = Path("/var/tmp")
WORK_PREFIX = "iolab-guest-run-"


def _process_in(path: Path) -> tuple[int, int | None] | None:
    """(pid, start time) from a file holding `pid [start]`, None when there is none."""
    try:
        fields = [int(f) for f in path.read_text().split()]
    except (OSError, ValueError):
        return None
    if not fields:
        return None
    return fields[0], (fields[1] if len(fields) > 1 else None)


def sweep_stale(parent: Path) -> list[Path]:
    """Remove the work directories of runs whose owner died without its `finally` (kill -9,
    a SIGTERM Python did not turn into an exception): each holds a qcow2 overlay and two
    disk images.  A directory is left alone while its owner or its QEMU lives, and when it
    names no owner (being made, or not ours to judge)."""
    removed = []
    for work in parent.glob(f"{WORK_PREFIX}*"):
        owner = _process_in(work / "owner")
        if owner is None or process_alive(*owner):
            continue
        qemu = _process_in(work / "qemu.pid")
        if qemu is not None and process_alive(*qemu):
            continue
        shutil.rmtree(work, ignore_errors=True)
        removed.append(work)
    return removed


def run_script(
    image: Image,
    kernel: str,
    script: str,
    *,
    files: Mapping[str, bytes] | None = None,
    timeout_s: float = DEFAULT_TIMEOUT_S,
    memory_mib: int = 1024,
    append: str = "",
    cpus: int = 1,
    icount_shift: int | None = None,
    qemu_args: tuple[str, ...] = (),
) -> GuestRun:
    """Boot `kernel` of `image`, run `script` (bash) in it, power off; `files` are beside it
    in /run/iolab-cmd; `qemu_args` go to QEMU as they are (a bench's monitor socket).  Raises
    GuestError if it does not end with an exit status in time."""
    vmlinuz, initrd = image.kernel(kernel)
    nonce = secrets.token_hex(6)
    sweep_stale(WORK_PARENT)
    work = Path(tempfile.mkdtemp(prefix=WORK_PREFIX, dir=WORK_PARENT))
    (work / "owner").write_text(f"{os.getpid()} {process_start(os.getpid())}\n")
    proc: subprocess.Popen[bytes] | None = None
    started = time.monotonic()
    try:
        payload = {
            "boot": BOOT_SCRIPT.encode(),
            "script": script.encode(),
            "nonce": nonce.encode(),
            **(files or {}),
        }
        spec = vm.VmSpec(
            kernel=vmlinuz,
            initrd=initrd,
            cmdline=cmdline("run", append),
            disks=disks.guest_disks(image.root, work, payload),
            out=work / "out",
            console=work / "console",
            pidfile=work / "qemu.pid",
            memory_mib=memory_mib,
            cpus=cpus,
            extra=qemu_args,
            icount_shift=icount_shift,
        )
        proc = vm.start(spec, work / "qemu.log")
        _wait(proc, work, kernel, started, timeout_s)
        text = (work / "out").read_text(errors="replace") if (work / "out").exists() else ""
        boots, status = parse_output(text, nonce)
        if status is None:
            raise GuestError(
                f"guest ({kernel}) stopped without an exit status "
                f"(qemu exit {proc.returncode}, {len(boots)} boot(s))" + _tail(work)
            )
        return GuestRun(tuple(boots), status, round(time.monotonic() - started, 1))
    finally:
        if proc is not None:
            vm.kill(proc)
        if os.environ.get("IOLAB_GUEST_KEEP"):  # debugging: keep console and output
            for name in ("root.qcow2", "src.img", "cmd.img"):
                (work / name).unlink(missing_ok=True)
        else:
            shutil.rmtree(work, ignore_errors=True)


def _wait(
    proc: subprocess.Popen[bytes], work: Path, kernel: str, started: float, timeout_s: float
) -> None:
    """Until QEMU ends; GuestError on the timeout, or at once when QEMU paused the guest on
    a KVM internal error (it would sit there until the timeout)."""
    while True:
        left = timeout_s - (time.monotonic() - started)
        if left <= 0:
            raise GuestError(
                f"guest ({kernel}) did not finish within {timeout_s:.0f} s" + _tail(work)
            )
        try:
            proc.wait(timeout=min(2.0, left))
            return
        except subprocess.TimeoutExpired:
            pass
        stopped = vm.halted(work / "qemu.log")
        if stopped is not None:
            raise GuestError(f"guest ({kernel}) stopped by QEMU: {stopped}" + _tail(work))


_LINE = re.compile(r"^IOLAB-(BOOT|EXIT|STAY)-([0-9a-f]+)(?: (.*))?$")


def parse_output(text: str, nonce: str) -> tuple[list[Boot], int | None]:
    """Boots and the exit status from the virtio port's text (markers carry the run's nonce,
    so a script printing look-alike lines cannot forge them)."""
    boots: list[Boot] = []
    status: int | None = None
    release = boot_id = ""
    lines: list[str] = []
    in_boot = False
    for line in text.splitlines(keepends=True):
        m = _LINE.match(line.rstrip("\n"))
        if m and m.group(2) == nonce:
            kind, rest = m.group(1), m.group(3) or ""
            if kind == "BOOT":
                new_release, _, new_id = rest.partition(" ")
                if in_boot and new_id == boot_id:
                    continue  # the same boot again (a restarted service)
                if in_boot:
                    boots.append(Boot(release, boot_id, "".join(lines)))
                release, boot_id = new_release, new_id
                lines, in_boot = [], True
            elif kind == "EXIT":
                status = int(rest) if rest.strip().lstrip("-").isdigit() else 255
                break  # what follows is the power-off's, not the script's
            continue
        lines.append(line)
    if in_boot:
        boots.append(Boot(release, boot_id, "".join(lines)))
    return boots, status


def parse_boots(text: str, nonce: str) -> list[Boot]:
    """The boots a guest reported (a service's restarts within one boot are one boot)."""
    return parse_output(text, nonce)[0]


def _tail(work: Path, n: int = 8) -> str:
    console = work / "console"
    if not console.exists():
        return ""
    lines = [ln for ln in console.read_text(errors="replace").splitlines() if ln.strip()]
    return "; console: " + " | ".join(ln.strip()[:160] for ln in lines[-n:])
