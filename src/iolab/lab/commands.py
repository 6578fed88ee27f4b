"""Running the system tools the lab drives: argument lists only, never a shell string."""

from __future__ import annotations

import shutil
import subprocess

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
