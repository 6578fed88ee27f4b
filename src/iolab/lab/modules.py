"""Kernel modules: is a feature there, and loading one (journaled) when it is not loaded yet.

A feature counts as present when its module is loaded (/proc/modules), built in (/sys/module
without a /proc/modules line), or loadable (`modprobe -n` finds it).  Loading is journaled
as `rmmod`: the undo unloads the module again only when iolab loaded it and nothing uses it
any more (another run, or the machine's owner, may have started using it meanwhile — then it
stays, which is what the machine would look like had they loaded it themselves).
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from iolab.errors import LabError
from iolab.monitors.base import ChangeJournal

PROC_MODULES = Path("/proc/modules")
SYS_MODULE = Path("/sys/module")


def loaded() -> set[str]:
    """Names of loadable modules in the kernel now (built-in ones are not listed)."""
    try:
        text = PROC_MODULES.read_text()
    except OSError:
        return set()
    return {line.split()[0] for line in text.splitlines() if line.strip()}


def built_in(name: str) -> bool:
    """Present without being a loaded module (its /sys/module entry has no refcount)."""
    return (SYS_MODULE / name).is_dir() and name not in loaded()


def present(name: str) -> bool:
    return name in loaded() or (SYS_MODULE / name).is_dir()


def loadable(name: str) -> bool:
    """`modprobe -n NAME` finds the module (False when modprobe itself is missing)."""
    if shutil.which("modprobe") is None:
        return False
    try:
        proc = subprocess.run(
            ["modprobe", "-n", name],
            capture_output=True,
            text=True,
            check=False,
            timeout=20,
            stdin=subprocess.DEVNULL,
        )
    except (OSError, subprocess.TimeoutExpired):
        return False
    return proc.returncode == 0


def missing(name: str) -> str | None:
    """Why the kernel lacks module `name`, or None when it has it (loaded, built in, loadable)."""
    if present(name) or loadable(name):
        return None
    if shutil.which("modprobe") is None:
        return f"no {name} module: not loaded, not built in, and modprobe is not installed"
    return f"no {name} module: not loaded, not built in, and `modprobe -n {name}` finds none"


def ensure(journal: ChangeJournal, name: str, *params: str) -> None:
    """Load module `name` (with `params`) unless present; journaled first as `rmmod`."""
    if present(name):
        return
    journal.record("rmmod", module=name)
    argv = ["modprobe", name, *params]
    try:
        proc = subprocess.run(
            argv, capture_output=True, text=True, check=False, timeout=60, stdin=subprocess.DEVNULL
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise LabError(f"{' '.join(argv)}: {exc}") from None
    if proc.returncode != 0:
        why = (proc.stderr or proc.stdout).strip().splitlines() or [f"exit {proc.returncode}"]
        raise LabError(f"{' '.join(argv)} failed: {why[-1]}")


def refcount(name: str) -> int | None:
    """How many users the loaded module has (None when it is not a loaded module)."""
    try:
        return int((SYS_MODULE / name / "refcnt").read_text().strip())
    except (OSError, ValueError):
        return None


def unload_if_unused(name: str) -> None:
    """The `rmmod` undo: unload `name` when it is loaded and unused; otherwise leave it."""
    if name not in loaded() or refcount(name) not in (0, None):
        return
    if shutil.which("modprobe") is None:
        return
    subprocess.run(
        ["modprobe", "-r", name],
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )
