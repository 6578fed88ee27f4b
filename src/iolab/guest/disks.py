"""The small disks a guest gets besides its root: made from a directory by `mke2fs -d`.

No loop device and no mount on the host: `mke2fs -d` writes a directory's files straight into
a new filesystem image, and the root's overlay is a qcow2 file over the cached image.
"""

from __future__ import annotations

import compileall
import os
import py_compile
import shutil
import subprocess
import tempfile
from pathlib import Path

from iolab.errors import LabError
from iolab.guest.vm import Disk

SOURCE_LABEL = "IOLABSRC"
COMMAND_LABEL = "IOLABCMD"


def _checked(argv: list[str], what: str) -> None:
    proc = subprocess.run(argv, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-2:]
        raise LabError(f"guest: {what} failed: " + " / ".join(tail))


def _size_mib(path: Path) -> int:
    total = 0
    for dirpath, _dirs, names in os.walk(path):
        for name in names:
            total += os.lstat(os.path.join(dirpath, name)).st_size + 4096
    return max(16, int(total * 1.3) // (1 << 20) + 8)


def ext4_from_dir(src: Path, img: Path, label: str) -> Path:
    """`img`, a new ext4 filesystem labelled `label` holding `src`'s files."""
    size = f"{_size_mib(src)}M"
    _checked(
        ["mke2fs", "-q", "-F", "-t", "ext4", "-L", label, "-d", str(src), str(img), size],
        f"mke2fs of the {label} disk",
    )
    return img


def source_disk(img: Path) -> Path:
    """The iolab package this process runs, compiled, on a disk the guest mounts read-only."""
    import iolab

    package = Path(iolab.__file__).parent
    with tempfile.TemporaryDirectory(prefix="iolab-src-") as tmp:
        dest = Path(tmp) / "iolab"
        shutil.copytree(package, dest, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        # the guest's Python is this machine's (Debian 12, 3.11): compiled once here, used as is
        compileall.compile_dir(
            dest,
            quiet=1,
            invalidation_mode=py_compile.PycInvalidationMode.UNCHECKED_HASH,
        )
        return ext4_from_dir(Path(tmp), img, SOURCE_LABEL)


def command_disk(img: Path, files: dict[str, bytes]) -> Path:
    """A disk holding `files` (name -> content) at its top, for /run/iolab-cmd in the guest."""
    with tempfile.TemporaryDirectory(prefix="iolab-cmd-") as tmp:
        for name, data in files.items():
            if "/" in name or name.startswith("."):
                raise LabError(f"guest: command disk file name {name!r} must be a plain name")
            (Path(tmp) / name).write_bytes(data)
        return ext4_from_dir(Path(tmp), img, COMMAND_LABEL)


def overlay(base: Path, img: Path) -> Path:
    """A qcow2 overlay over the cached root: the guest writes here, never to the cache."""
    if shutil.which("qemu-img") is None:
        raise LabError("guest: qemu-img is missing (apt-get install qemu-utils)")
    _checked(
        ["qemu-img", "create", "-q", "-f", "qcow2", "-F", "raw", "-b", str(base), str(img)],
        "qemu-img create",
    )
    return img


def guest_disks(root: Path, directory: Path, files: dict[str, bytes]) -> tuple[Disk, ...]:
    """The three disks every guest boots with, made in `directory`: a qcow2 overlay over the
    cached root (vda), iolab's source read-only (vdb), the command files read-only (vdc).
    The two small ones carry their label as their serial too: the guest finds them in sysfs
    with the shell's own reads, without a `blkid` (a process start under TCG)."""
    return (
        Disk(overlay(root, directory / "root.qcow2"), "qcow2"),
        Disk(source_disk(directory / "src.img"), readonly=True, serial=SOURCE_LABEL),
        Disk(command_disk(directory / "cmd.img", files), readonly=True, serial=COMMAND_LABEL),
    )
