"""Filesystems on the target: mkfs, mount (journaled), unmount, and what the kernel made of it.

Only devices iolab created or that passed iolab.lab.safety are ever formatted; callers pass
the Target, which knows which is which.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from iolab.errors import LabError
from iolab.lab import commands, kmsg
from iolab.lab.commands import mounted_at
from iolab.lab.journal import Journal

MKFS = {
    "ext4": ["mkfs.ext4", "-F", "-q"],
    "ext3": ["mkfs.ext3", "-F", "-q"],
    "ext2": ["mkfs.ext2", "-F", "-q"],
    "xfs": ["mkfs.xfs", "-f", "-q"],
    "btrfs": ["mkfs.btrfs", "-f", "-q"],
}
MOUNT_ROOT = Path("/run/iolab/mnt")


class MountRefused(LabError):
    """The kernel refused a mount; the message carries its log line."""


@dataclass
class Mounted:
    device: str
    mountpoint: Path
    fstype: str
    options: str  # as /proc/mounts shows them


EAGER_INIT = "lazy_itable_init=0,lazy_journal_init=0"


def effective_mkfs_options(fstype: str, options: list[str]) -> list[str]:
    """The options mkfs really gets.  For ext2/3/4 the inode tables and journal are written at
    mkfs time unless the plan says otherwise: with lazy init, ext4lazyinit zeroes them in the
    background during the first minutes after mount — inside the measured sample of a
    fresh-filesystem-per-sample run (docs/noise.md measured it doubling the noise)."""
    if not fstype.startswith("ext") or any("lazy_" in option for option in options):
        return list(options)
    merged = list(options)
    for i, option in enumerate(merged):
        if option == "-E" and i + 1 < len(merged):  # mke2fs keeps only the last -E: extend it
            merged[i + 1] = f"{merged[i + 1]},{EAGER_INIT}"
            return merged
        if option.startswith("-E") and len(option) > 2:
            merged[i] = f"{option},{EAGER_INIT}"
            return merged
    return [*merged, "-E", EAGER_INIT]


def mkfs(fstype: str, devices: list[str], options: list[str]) -> None:
    """Make a filesystem (btrfs may span several devices)."""
    base = MKFS.get(fstype)
    if base is None:
        raise LabError(f"unsupported filesystem {fstype!r} ({', '.join(sorted(MKFS))})")
    commands.run([*base, *effective_mkfs_options(fstype, options), *devices], timeout=300)


def mountpoint_for(run_id: int, n: int = 0) -> Path:
    return MOUNT_ROOT / f"iolab-{run_id}-{os.getpid()}-{n}"


def proc_mounts_options(mountpoint: Path) -> str | None:
    """The mount options the kernel reports for `mountpoint` (last mount wins)."""
    found = None
    for line in Path("/proc/mounts").read_text().splitlines():
        fields = line.split()
        if len(fields) >= 4 and fields[1].encode().decode("unicode_escape") == str(mountpoint):
            found = fields[3]
    return found


def mount(
    journal: Journal, device: str, mountpoint: Path, fstype: str, options: Sequence[str]
) -> Mounted:
    """Mount (journaled before); a refusal is MountRefused with the kernel's own words."""
    if not mountpoint.exists():
        journal.record("rmdir", path=str(mountpoint))
        mountpoint.mkdir(parents=True)
    if mounted_at(str(mountpoint)):
        raise LabError(f"{mountpoint} is mounted already")
    argv = ["mount", "-t", fstype]
    if options:
        argv += ["-o", ",".join(options)]
    argv += [device, str(mountpoint)]
    commands.require("mount")
    journal.record("umount", path=str(mountpoint))
    with kmsg.KernelLog() as log:
        proc = commands.run(argv, check=False)
        if proc.returncode != 0:
            lines = kmsg.relevant(log.new_lines(), [os.path.basename(device)])
            why = lines[-1] if lines else (proc.stderr.strip().splitlines() or ["mount failed"])[-1]
            raise MountRefused(f"mount -o {','.join(options) or 'defaults'} refused: {why}")
    shown = proc_mounts_options(mountpoint) or ""
    return Mounted(device, mountpoint, fstype, shown)


def umount(journal: Journal, mounted: Mounted) -> None:
    """Unmount now (the journal entry stays as a safety net until the scope ends)."""
    commands.run(["umount", str(mounted.mountpoint)])


def fstrim(mountpoint: Path) -> str | None:
    """Discard free space; returns why it could not (loop on some backings cannot)."""
    proc = commands.run(["fstrim", str(mountpoint)], check=False)
    if proc.returncode != 0:
        return (proc.stderr.strip().splitlines() or ["fstrim failed"])[-1]
    return None


def drop_caches() -> None:
    """Write back dirty data, then drop page cache, dentries and inodes: each sample starts cold."""
    os.sync()
    try:
        Path("/proc/sys/vm/drop_caches").write_text("3")
    except OSError as exc:
        raise LabError(f"cannot drop caches: {exc.strerror}") from None
