"""Shared by the QEMU guest tests: the cached image (built here if this machine has none)."""

from __future__ import annotations

import shutil
import sys

import pytest

from iolab.guest import image, recipe

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
