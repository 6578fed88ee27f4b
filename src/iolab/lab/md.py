"""md arrays iolab makes over its own members — and only those are ever stopped.

An array is created with a UUID and a name iolab chose (`iolab-<run>-<pid>-<n>`), and both are
journaled (undo `mdstop`) *before* `mdadm --create` runs.  The undo looks the array up by that
UUID among /sys/block/md* (`mdadm --detail --export`), stops it, and wipes the md superblock
of exactly the members the journal lists — each only when its superblock carries that UUID.
An array iolab did not make has another UUID: no code path here stops it or writes to it.

udev may reassemble members whose superblock is still there right after a stop (incremental
assembly on the change event), so the undo stops, wipes, and looks again a few times.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import time
import uuid as uuidlib
from dataclasses import dataclass
from pathlib import Path

from iolab.errors import LabError
from iolab.lab import commands
from iolab.monitors.base import ChangeJournal

SYS_BLOCK = Path("/sys/block")
PROC_MDSTAT = Path("/proc/mdstat")
PERSONALITY = {0: "raid0", 1: "raid1", 4: "raid456", 5: "raid456", 6: "raid456", 10: "raid10"}
RESYNC_TIMEOUT_S = 3600.0


@dataclass(frozen=True)
class Array:
    name: str  # kernel name, e.g. md127
    uuid: str  # mdadm form xxxxxxxx:xxxxxxxx:xxxxxxxx:xxxxxxxx
    label: str  # the array's name in its superblock (iolab-...)

    @property
    def path(self) -> str:
        return f"/dev/{self.name}"

    def attr(self, name: str) -> Path:
        return SYS_BLOCK / self.name / "md" / name


def new_uuid() -> str:
    hexed = uuidlib.uuid4().hex
    return ":".join(hexed[i : i + 8] for i in range(0, 32, 8))


def _export(argv: list[str]) -> dict[str, str]:
    """`mdadm ... --export` output as a dict ({} when mdadm says nothing or fails)."""
    text = commands.output(argv) or ""
    return dict(line.split("=", 1) for line in text.splitlines() if "=" in line)


def _same_uuid(a: str, b: str) -> bool:
    return _bare(a) == _bare(b)


def _bare(text: str) -> str:
    return text.replace(":", "").replace("-", "").lower()


def arrays_with_uuid(wanted: str) -> list[str]:
    """Kernel names of md devices whose array UUID is `wanted` (assembled or inactive)."""
    out = []
    for entry in sorted(SYS_BLOCK.glob("md*")) if SYS_BLOCK.is_dir() else []:
        if not (entry / "md").is_dir():
            continue
        found = _export(["mdadm", "--detail", "--export", f"/dev/{entry.name}"]).get("MD_UUID")
        if found and _same_uuid(found, wanted):
            out.append(entry.name)
    return out


def create(
    journal: ChangeJournal,
    label: str,
    level: int,
    members: list[str],
    *,
    chunk_bytes: int = 0,
    assume_clean: bool = True,
) -> Array:
    """mdadm --create over `members` (journaled first); returns the array once it runs."""
    commands.require("mdadm")
    array_uuid = new_uuid()
    journal.record("mdstop", uuid=array_uuid, label=label, members=",".join(members))
    argv = [
        "mdadm",
        "--create",
        f"/dev/md/{label}",
        "--run",
        "--metadata=1.2",
        f"--name={label}",
        f"--uuid={array_uuid}",
        "--homehost=<none>",
        f"--level={level}",
        f"--raid-devices={len(members)}",
    ]
    if chunk_bytes and level != 1:
        argv.append(f"--chunk={chunk_bytes // 1024}K")
    if assume_clean and level != 0:
        argv.append("--assume-clean")
    commands.run([*argv, *members], timeout=300)
    names: list[str] = []
    for _ in range(50):  # the device node appears when the kernel has started the array
        names = arrays_with_uuid(array_uuid)
        if names:
            break
        time.sleep(0.1)
    if not names:
        raise LabError(f"mdadm created {label}, but no md device carries its UUID {array_uuid}")
    return Array(names[0], array_uuid, label)


def wait_resync(array: Array, timeout_s: float = RESYNC_TIMEOUT_S) -> float:
    """Wait until the array is idle (initial resync done); returns the seconds waited."""
    start = time.monotonic()
    action = array.attr("sync_action")
    while True:
        try:
            state = action.read_text().strip()
        except OSError:
            return 0.0  # RAID0 has no sync_action
        if state == "idle":
            return time.monotonic() - start
        if time.monotonic() - start > timeout_s:
            done = read_attr(array, "sync_completed") or "?"
            raise LabError(
                f"{array.name}: initial {state} not done after {timeout_s:.0f} s "
                f"({done}); use resync: assume-clean or smaller members"
            )
        time.sleep(0.2)


def read_attr(array: Array, name: str) -> str | None:
    try:
        return array.attr(name).read_text().strip()
    except OSError:
        return None


def mdstat() -> str:
    try:
        return PROC_MDSTAT.read_text()
    except OSError:
        return ""


# ----------------------------------------------------------------------------- the undo


def _stop(name: str) -> str | None:
    """mdadm --stop /dev/NAME; the reason when it would not stop."""
    for attempt in range(20):
        proc = subprocess.run(
            ["mdadm", "--stop", f"/dev/{name}"],
            capture_output=True,
            text=True,
            check=False,
            stdin=subprocess.DEVNULL,
        )
        if proc.returncode == 0 or not (SYS_BLOCK / name / "md").is_dir():
            return None
        if attempt == 19:
            return (proc.stderr.strip().splitlines() or ["mdadm --stop failed"])[-1]
        time.sleep(0.3)  # a mount or an opener may still be going away
    return None


def _wipe_member(member: str, wanted: str) -> None:
    """Zero the md superblock of `member` only when it belongs to the array `wanted`."""
    if not os.path.exists(member):
        return
    found = _export(["mdadm", "--examine", "--export", member]).get("MD_UUID")
    if found and _same_uuid(found, wanted):
        subprocess.run(
            ["mdadm", "--zero-superblock", member],
            capture_output=True,
            check=False,
            stdin=subprocess.DEVNULL,
        )


def undo_mdstop(args: dict[str, str]) -> None:
    """Stop every array carrying the journaled UUID and wipe the journaled members' superblocks
    (only those of this array); never touches an array with another UUID."""
    import shutil

    if shutil.which("mdadm") is None:
        return  # no mdadm, no array of ours: create needs it
    wanted = args["uuid"]
    members = [m for m in args.get("members", "").split(",") if m]
    for _ in range(5):
        names = arrays_with_uuid(wanted)
        for name in names:
            why = _stop(name)
            if why is not None:
                raise LabError(f"cannot stop md array {name} ({args.get('label', '')}): {why}")
        for member in members:
            _wipe_member(member, wanted)
        with contextlib.suppress(OSError, subprocess.SubprocessError):
            subprocess.run(["udevadm", "settle", "--timeout=5"], capture_output=True, check=False)
        if not arrays_with_uuid(wanted):
            return
    raise LabError(f"md array {args.get('label', wanted)} keeps being reassembled")
