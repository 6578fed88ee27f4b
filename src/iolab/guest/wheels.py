"""iolab's Python dependencies for the guest: the versions this environment runs, as wheels.

The guest's venv is installed from a wheelhouse made here (`pip wheel`, from pip's cache when
it has them) with `pip install --no-index`, so the guest runs the same library versions as the
controller and its image never depends on the iolab source.
"""

from __future__ import annotations

import subprocess
import sys
from importlib import metadata
from pathlib import Path

from iolab.errors import LabError

# The guest's Python (Debian 12's python3): markers are judged for it, not for this one
# (redis needs async-timeout below 3.11.3, which a newer Python here does not install).
GUEST_PYTHON = {"python_version": "3.11", "python_full_version": "3.11.2"}


def _closure(root: str) -> dict[str, str]:
    """name -> installed version of every distribution `root` needs (no extras of its own)."""
    from packaging.requirements import Requirement
    from packaging.utils import canonicalize_name

    found: dict[str, str] = {}
    todo: list[tuple[str, frozenset[str]]] = [(root, frozenset())]
    seen: set[tuple[str, frozenset[str]]] = set()
    while todo:
        name, extras = todo.pop()
        if (canonicalize_name(name), extras) in seen:
            continue
        seen.add((canonicalize_name(name), extras))
        try:
            dist = metadata.distribution(name)
        except metadata.PackageNotFoundError:
            continue  # the guest's only (see below): pip resolves it, without its own deps
        for text in dist.requires or []:
            req = Requirement(text)
            envs = [{**GUEST_PYTHON, "extra": e} for e in (extras or {""})]
            if req.marker is not None and not any(req.marker.evaluate(env) for env in envs):
                continue
            key = canonicalize_name(req.name)
            todo.append((req.name, frozenset(req.extras)))  # again with other extras
            if key in found:
                continue
            try:
                found[key] = metadata.version(req.name)
            except metadata.PackageNotFoundError:
                # only the guest's Python needs it: the newest the requirement allows
                found[key] = "" if not req.specifier else str(req.specifier)
                continue
    return found


def pinned() -> tuple[str, ...]:
    """`name==version` of iolab's runtime dependencies, sorted."""
    return tuple(
        sorted(
            f"{n}=={v}" if v and v[0].isdigit() else f"{n}{v}" for n, v in _closure("iolab").items()
        )
    )


def build_wheelhouse(requirements: tuple[str, ...], into: Path) -> None:
    """Wheels of exactly `requirements` into `into` (pip's cache first, else the index)."""
    into.mkdir(parents=True, exist_ok=True)
    argv = [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(into)]
    proc = subprocess.run([*argv, *requirements], capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-3:]
        raise LabError("guest image: pip wheel failed: " + " / ".join(tail))
