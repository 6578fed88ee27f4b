"""Running the system tools the lab drives (argument lists only, never a shell string), and
reading back what they left: mounts and loop devices."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

from iolab.errors import LabError


def require(tool: str) -> str:
    """Full path of `tool`, or a LabError that says which package is missing."""
    path = shutil.which(tool)
    if path is None:
        raise LabError(f"{tool} not found (scripts/install-deps installs the lab's tools)")
    return path


def run(
    argv: list[str], *, check: bool = True, timeout: float | None = 120.0
) -> subprocess.CompletedProcess[str]:
    """Run a short system command; with `check`, a failure is a LabError naming it."""
    require(argv[0])
    try:
        proc = subprocess.run(
            argv,
            capture_output=True,
            text=True,
            check=False,
            timeout=timeout,
            stdin=subprocess.DEVNULL,  # nothing the lab runs may stop to ask a question
        )
    except subprocess.TimeoutExpired:
        raise LabError(f"{' '.join(argv)}: no answer after {timeout:.0f} s") from None
    if check and proc.returncode != 0:
        why = [line.strip() for line in (proc.stderr or proc.stdout).splitlines() if line.strip()]
        raise LabError(f"{' '.join(argv)} failed: {why[0] if why else f'exit {proc.returncode}'}")
    return proc


def output(argv: list[str]) -> str | None:
    """Stdout of a query command, None when the tool is missing or fails (for provenance)."""
    if shutil.which(argv[0]) is None:
        return None
    try:
        proc = subprocess.run(argv, capture_output=True, text=True, check=False, timeout=20)
    except (subprocess.TimeoutExpired, OSError):
        return None
    if proc.returncode != 0:
        return None
    return proc.stdout or proc.stderr  # some tools (mke2fs -V) answer on stderr


def mounted_at(path: str) -> bool:
    """True when something is mounted on `path` (as /proc/self/mountinfo shows it)."""
    real = os.path.realpath(path)
    try:
        lines = Path("/proc/self/mountinfo").read_text().splitlines()
    except OSError:
        return False
    for line in lines:
        mnt = line.split()[4].encode().decode("unicode_escape")
        if mnt == real:
            return True
    return False


def loop_devices_of(image: str) -> list[str]:
    """Loop devices (e.g. /dev/loop3) whose backing file is `image`."""
    proc = subprocess.run(
        ["losetup", "-j", image, "-O", "NAME", "-n"], capture_output=True, text=True, check=False
    )
    if proc.returncode != 0:
        return []
    return [line.strip() for line in proc.stdout.splitlines() if line.strip()]
