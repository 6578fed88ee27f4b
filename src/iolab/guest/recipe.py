"""What a guest image holds, and the cache key that names it.

The key is a hash of everything that changes the image's bytes that matter: the suite and
sources, the package list, the kernels, the pinned Python wheels and the guest-side files
(`guest.files`).  The iolab source is *not* in it: it reaches the guest on a disk of its own
at each boot, so editing iolab never rebuilds the image.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from dataclasses import dataclass
from pathlib import Path

from iolab.errors import IolabError

SUITE = "bookworm"
SOURCES = (
    "deb http://deb.debian.org/debian bookworm main",
    "deb http://deb.debian.org/debian bookworm-updates main",
    "deb http://deb.debian.org/debian-security bookworm-security main",
)
PACKAGES = (
    "systemd-sysv",
    "udev",
    "python3",
    "python3-venv",
    "fio",
    "kexec-tools",
    "iproute2",
    "mdadm",
    "dmsetup",
    "multipath-tools",
    "e2fsprogs",
    "xfsprogs",
    "util-linux",
    "procps",
    "kmod",
)
# Three packaged kernels of one ABI line (cloud flavour: virtio built for, no 9p): enough for
# an A/B and a bisect over three.  `apt-cache search linux-image-6.1.0-` lists others.
DEFAULT_KERNELS = (
    "6.1.0-47-cloud-amd64",
    "6.1.0-50-cloud-amd64",
    "6.1.0-56-cloud-amd64",
)
# Bump when the build steps (not captured by the fields below) change what an image holds.
BUILDER_VERSION = 1
_RELEASE = re.compile(r"^[0-9]+\.[0-9]+\.[0-9]+-[0-9]+-[a-z0-9-]+$")


def cache_root() -> Path:
    """Where images live: $IOLAB_GUEST_CACHE, else /var/cache/iolab/guest."""
    return Path(os.environ.get("IOLAB_GUEST_CACHE") or "/var/cache/iolab/guest")


def check_release(release: str) -> str:
    """A kernel release as `uname -r` prints it for a Debian package (6.1.0-50-cloud-amd64)."""
    if not _RELEASE.match(release):
        raise IolabError(
            f"kernel {release!r}: expected a Debian kernel release such as {DEFAULT_KERNELS[0]}"
        )
    return release


@dataclass(frozen=True)
class Recipe:
    """Everything a guest image is made from."""

    kernels: tuple[str, ...] = DEFAULT_KERNELS
    suite: str = SUITE
    sources: tuple[str, ...] = SOURCES
    packages: tuple[str, ...] = PACKAGES
    wheels: tuple[str, ...] = ()  # pinned `name==version` of iolab's Python dependencies
    files_digest: str = ""  # hash of guest.files' contents
    builder: int = BUILDER_VERSION

    def packages_to_install(self) -> tuple[str, ...]:
        return self.packages + tuple(f"linux-image-{k}" for k in self.kernels)

    def as_json(self) -> dict[str, object]:
        return {
            "kernels": list(self.kernels),
            "suite": self.suite,
            "sources": list(self.sources),
            "packages": list(self.packages),
            "wheels": list(self.wheels),
            "files_digest": self.files_digest,
            "builder": self.builder,
        }

    @property
    def key(self) -> str:
        text = json.dumps(self.as_json(), sort_keys=True)
        return hashlib.sha256(text.encode()).hexdigest()[:16]


def default_recipe(kernels: tuple[str, ...] | None = None) -> Recipe:
    """The recipe for these kernels (default: DEFAULT_KERNELS), with this iolab's wheels."""
    from iolab.guest import files, wheels

    chosen = tuple(sorted({check_release(k) for k in kernels})) if kernels else DEFAULT_KERNELS
    return Recipe(kernels=chosen, wheels=wheels.pinned(), files_digest=files.digest())


def recipe_for(kernels: tuple[str, ...]) -> Recipe:
    """The default image when it carries every kernel asked for, else one with exactly those."""
    for kernel in kernels:
        check_release(kernel)
    if set(kernels) <= set(DEFAULT_KERNELS):
        return default_recipe()
    return default_recipe(kernels)
