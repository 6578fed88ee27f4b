"""Provenance: what the machine was when a sample was taken, stored with every sample.

Host facts (kernel, tools, CPU, memory) are read once per run process; device facts, the
filesystem as the kernel mounted it, and every sysctl/queue setting in force are read for
each sample, after preparation, just before the workload — what was true while it ran.
"""

from __future__ import annotations

import functools
import os
import platform
import re
import socket
from pathlib import Path
from typing import Any

from iolab.lab import commands, knobs

SYS_BLOCK = Path("/sys/block")


def _first_line(text: str | None) -> str | None:
    if not text:
        return None
    for line in text.splitlines():
        if line.strip():
            return line.strip()
    return None


def _version(argv: list[str], pattern: str = r"(\d+(?:\.\d+)+)") -> str | None:
    line = _first_line(commands.output(argv))
    if line is None:
        return None
    m = re.search(pattern, line)
    return m.group(1) if m else line


def _cpu_model() -> str | None:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or None


def _mem_total_bytes() -> int | None:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return None


@functools.cache
def host() -> dict[str, Any]:
    """Facts about the machine and its tools that do not change during a run."""
    try:
        cmdline = Path("/proc/cmdline").read_text().strip()
    except OSError:
        cmdline = None
    fio = _first_line(commands.output(["fio", "--version"]))
    return {
        "host": socket.gethostname(),
        "kernel": platform.release(),
        "kernel_version": platform.version(),
        "cmdline": cmdline,
        "arch": platform.machine(),
        "fio_version": fio.removeprefix("fio-") if fio else None,
        "xfsprogs_version": _version(["xfs_io", "-V"]),
        "e2fsprogs_version": _version(["mke2fs", "-V"]) if _has("mke2fs") else None,
        "btrfs_progs_version": _version(["mkfs.btrfs", "--version"]),
        "cpu_model": _cpu_model(),
        "cpu_count": os.cpu_count(),
        "cpus_online": _read(Path("/sys/devices/system/cpu/online")),
        "mem_total_bytes": _mem_total_bytes(),
        "python": platform.python_version(),
        # which boot: a new id at every boot (kexec too); the build id tells two builds of one
        # release apart (docs/kernels.md)
        "boot_id": _read(Path("/proc/sys/kernel/random/boot_id")),
        "kernel_build_id": _kernel_build_id(),
    }


def _kernel_build_id() -> str | None:
    from iolab.kernels.boot import NOTES, build_id

    try:
        return build_id(NOTES.read_bytes())
    except OSError:
        return None


def _has(tool: str) -> bool:
    import shutil

    return shutil.which(tool) is not None


def _read(path: Path) -> str | None:
    try:
        return path.read_text().strip()
    except OSError:
        return None


def device(name: str, image: str | None = None) -> dict[str, Any]:
    """Model, size, rotational flag and scheduler of a block device (and a loop's backing)."""
    base = SYS_BLOCK / name
    size = _read(base / "size")
    out: dict[str, Any] = {
        "name": name,
        "model": _read(base / "device" / "model") or ("loop" if name.startswith("loop") else None),
        "vendor": _read(base / "device" / "vendor"),
        "size_bytes": int(size) * 512 if size and size.isdigit() else None,
        "rotational": _read(base / "queue" / "rotational"),
        "scheduler": knobs.read_setting(base / "queue" / "scheduler"),
    }
    backing = _read(base / "loop" / "backing_file")
    if backing or image:
        out["backing_file"] = backing or image
        fs = _backing_fs(backing or image or "")
        if fs:
            out["backing_fs"] = fs
        out["loop_dio"] = _read(base / "loop" / "dio")
    return out


def _backing_fs(path: str) -> str | None:
    """Filesystem type holding a loop image (tmpfs = RAM, ext4 = disk...)."""
    best, fstype = "", None
    for line in Path("/proc/mounts").read_text().splitlines():
        fields = line.split()
        if (
            len(fields) >= 3
            and path.startswith(fields[1].rstrip("/") + "/")
            and len(fields[1]) > len(best)
        ):
            best, fstype = fields[1], fields[2]
    return fstype


def sample(
    *,
    devices: list[tuple[str, str | None]],
    fstype: str | None,
    mkfs_options: tuple[str, ...],
    mount_options_requested: tuple[str, ...],
    mount_options_shown: list[str],
    sysctls: dict[str, str],
    queue: dict[str, str],
    plan_sha256: str,
    plan_path: str,
    profile: str | None,
    seed: int,
    cpus: tuple[int, ...] | None,
    extra: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Everything stored with one sample: host facts plus what was in force for it."""
    names = [name for name, _ in devices]
    out: dict[str, Any] = dict(host())
    out.update(
        {
            "plan_sha256": plan_sha256,
            "plan_path": plan_path,
            "profile": profile,
            "seed": seed,
            "devices": [device(name, image) for name, image in devices],
            "filesystem": fstype,
            "mkfs_options": list(mkfs_options),
            # stored as mount -o reads it (the store's format since the first version)
            "mount_options_requested": ",".join(mount_options_requested),
            "mount_options": mount_options_shown,  # as /proc/mounts shows them
            "settings": knobs.in_force(sysctls, queue, names),
            "cpus": list(cpus) if cpus else None,
        }
    )
    if extra:
        out.update(extra)
    return out
