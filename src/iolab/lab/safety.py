"""Safety rules for designated block devices: what iolab refuses to format or write.

A plan may name real block devices for the lab to format (or to write raw).  Before anything
is written, the device must be a block device that

* is not mounted, has no mounted partition and no mounted holder (device-mapper, md), and is
  not used as swap — checked in /proc/self/mountinfo (by device number, which also catches
  bind mounts), /proc/mounts (by path), /proc/swaps, the sysfs holders tree and `lsblk -J`;
* is not the disk (or partition) holding / or /boot;
* is not held by another block device (a member of an md array, a path or table of a dm
  map: its sysfs `holders`) and can be opened exclusively (the kernel says no when anything
  holds it);
* carries no filesystem, RAID or partition-table signature (`wipefs -n`, `blkid -p`) —
  unless the user said `--destroy-data`.

Every refusal is one line (RefusedError, exit code 3) naming the device and the reason.
"""

from __future__ import annotations

import errno
import json
import os
import stat
from dataclasses import dataclass
from pathlib import Path

from iolab.errors import RefusedError
from iolab.lab import commands

SYS_BLOCK = Path("/sys/class/block")


@dataclass(frozen=True)
class Mount:
    source: str
    target: str
    devno: str  # "major:minor" as mountinfo shows it


def mounts() -> list[Mount]:
    """Mounts of this mount namespace (from /proc/self/mountinfo)."""
    out = []
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        left, _, right = line.partition(" - ")
        fields = left.split()
        source = right.split()[1] if len(right.split()) > 1 else ""
        target = fields[4].encode().decode("unicode_escape")
        out.append(Mount(source, target, fields[2]))
    return out


def kernel_name(device: str) -> str:
    """Kernel name (`sda1`, `loop3`, `dm-0`) of a block device node."""
    st = os.stat(device)
    link = Path(f"/sys/dev/block/{os.major(st.st_rdev)}:{os.minor(st.st_rdev)}")
    return Path(os.path.realpath(link)).name


def devno_of(name: str) -> str:
    try:
        return (SYS_BLOCK / name / "dev").read_text().strip()
    except OSError:
        return ""


def whole_disk(name: str) -> str:
    """The disk a partition belongs to (`sda1` → `sda`); a disk is its own."""
    path = Path(os.path.realpath(SYS_BLOCK / name))
    if (path / "partition").exists():
        return path.parent.name
    return name


def family(name: str) -> set[str]:
    """The device, its partitions, and everything stacked on either (holders, recursively)."""
    found: set[str] = set()
    todo = [name]
    while todo:
        current = todo.pop()
        if current in found:
            continue
        found.add(current)
        base = Path(os.path.realpath(SYS_BLOCK / current))
        for child in base.iterdir() if base.is_dir() else []:
            if (child / "partition").exists():
                todo.append(child.name)
        holders = base / "holders"
        if holders.is_dir():
            todo.extend(h.name for h in holders.iterdir())
    return found


def underlying(name: str) -> set[str]:
    """The device, the disk it is on, and what it is stacked on (slaves, recursively)."""
    found: set[str] = set()
    todo = [name]
    while todo:
        current = todo.pop()
        if current in found or not (SYS_BLOCK / current).exists():
            continue
        found.add(current)
        todo.append(whole_disk(current))
        slaves = SYS_BLOCK / current / "slaves"
        if slaves.is_dir():
            todo.extend(s.name for s in slaves.iterdir())
    return found


def _name_of_source(source: str) -> str | None:
    if not source.startswith("/dev/"):
        return None
    try:
        return kernel_name(source)
    except OSError:
        return None


def _names_by_devno() -> dict[str, str]:
    out = {}
    for entry in SYS_BLOCK.iterdir():
        devno = devno_of(entry.name)
        if devno:
            out[devno] = entry.name
    return out


def _system_disks(all_mounts: list[Mount], by_devno: dict[str, str]) -> dict[str, str]:
    """Kernel names of every device under / and /boot → the mount point they serve."""
    out: dict[str, str] = {}
    for mount in all_mounts:
        if mount.target not in ("/", "/boot", "/boot/efi"):
            continue
        name = by_devno.get(mount.devno) or _name_of_source(mount.source)
        if name:
            for dev in underlying(name):
                out.setdefault(dev, mount.target)
    return out


def _lsblk_mounted(device: str) -> list[str]:
    """Mount points lsblk sees anywhere in the device's tree (children and holders)."""
    text = commands.output(["lsblk", "-J", "-p", "-o", "NAME,MOUNTPOINTS", device])
    if not text:
        return []
    found: list[str] = []

    def walk(nodes: list[dict[str, object]]) -> None:
        for node in nodes:
            points = node.get("mountpoints") or []
            if isinstance(points, list):
                found.extend(str(p) for p in points if p)
            children = node.get("children")
            if isinstance(children, list):
                walk(children)

    try:
        walk(json.loads(text).get("blockdevices", []))
    except (json.JSONDecodeError, AttributeError):
        return []
    return found


def signatures(device: str) -> list[str]:
    """Filesystem / partition-table / RAID signatures on the device (wipefs, then blkid)."""
    text = commands.output(["wipefs", "-n", "-J", device])
    found: list[str] = []
    if text and text.strip():
        try:
            for sig in json.loads(text).get("signatures", []):
                found.append(str(sig.get("type", "unknown")))
        except (json.JSONDecodeError, AttributeError):
            found.append("unknown")
    if not found:
        probe = commands.output(["blkid", "-p", "-o", "export", device])
        if probe:
            fields = dict(line.split("=", 1) for line in probe.splitlines() if "=" in line)
            found.append(fields.get("TYPE") or fields.get("PTTYPE") or "unknown")
    return found


def check_device(device: str, *, destroy_data: bool = False) -> str:
    """Return the device path when the lab may write it; RefusedError (one line) otherwise."""
    try:
        st = os.stat(device)
    except OSError as exc:
        raise RefusedError(
            f"refusing {device}: {(exc.strerror or 'cannot stat').lower()}"
        ) from None
    if not stat.S_ISBLK(st.st_mode):
        raise RefusedError(f"refusing {device}: not a block device")
    name = kernel_name(device)
    members = family(name)
    all_mounts = mounts()
    by_devno = _names_by_devno()

    system = _system_disks(all_mounts, by_devno)
    for member in sorted(members | {name}):
        if member in system:
            what = "it holds" if member == name else f"its {member} holds"
            raise RefusedError(f"refusing {device}: {what} {system[member]}")

    member_devnos = {devno_of(m): m for m in members}
    for mount in all_mounts:
        owner = member_devnos.get(mount.devno)
        if owner is None:
            source_name = _name_of_source(mount.source)
            owner = source_name if source_name in members else None
        if owner is not None:
            where = "it is" if owner == name else f"its {owner} is"
            raise RefusedError(f"refusing {device}: {where} mounted on {mount.target}")
    points = _lsblk_mounted(device)
    if points:
        raise RefusedError(f"refusing {device}: something in it is mounted on {points[0]}")
    swaps = Path("/proc/swaps").read_text().splitlines()[1:]
    for line in swaps:
        swap_name = _name_of_source(line.split()[0])
        if swap_name in members:
            raise RefusedError(f"refusing {device}: {swap_name} is in use as swap")

    holders = SYS_BLOCK / name / "holders"
    held_by = sorted(h.name for h in holders.iterdir()) if holders.is_dir() else []
    if held_by:
        raise RefusedError(
            f"refusing {device}: it is already in {', '.join(held_by)} "
            "(a member of an md array or a path of a dm map)"
        )
    try:
        fd = os.open(device, os.O_RDONLY | os.O_EXCL)
    except OSError as exc:
        if exc.errno == errno.EBUSY:
            raise RefusedError(
                f"refusing {device}: it is in use (held by another device or process)"
            ) from None
        raise RefusedError(f"refusing {device}: cannot open it: {exc.strerror}") from None
    os.close(fd)

    if not destroy_data:
        found = signatures(device)
        if found:
            kinds = ", ".join(sorted(set(found)))
            raise RefusedError(
                f"refusing {device}: it carries a {kinds} signature "
                "(give --destroy-data to format it)"
            )
    return device
