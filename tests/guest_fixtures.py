"""Shared by the QEMU guest tests: the cached image (built here if this machine has none), and
the check that a test left no guest behind."""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

import pytest

from iolab.guest import image, recipe
from iolab.procs import process_stats

KERNEL_A = recipe.DEFAULT_KERNELS[1]  # 6.1.0-50
KERNEL_B = recipe.DEFAULT_KERNELS[0]  # 6.1.0-47


def guest_image() -> image.Image:
    """The default image; `make test` builds it before pytest (scripts/build-guest-image)."""
    for tool in ("qemu-system-x86_64", "qemu-img", "mmdebstrap", "socat"):
        if shutil.which(tool) is None:
            pytest.fail(f"{tool} is missing: run `make deps`")

    def log(line: str) -> None:
        print(line, file=sys.stderr, flush=True)

    return image.ensure(recipe.default_recipe(), log=log)


def no_leftovers() -> None:
    """No work directory and no QEMU of this process left.  Only this process's directories
    (each names its owner) and children count: another suite's guest may be running, and a
    killed run's directory is swept by the next (test_guest_sweep)."""
    ours = [
        d
        for d in Path("/var/tmp").glob("iolab-guest-run-*")
        if (d / "owner").read_text().split()[:1] == [str(os.getpid())]  # "pid start"
    ]
    assert not ours
    mine = [p for p in process_stats() if p.comm.startswith("qemu-system")]
    assert not [p for p in mine if p.ppid == os.getpid()]
