"""Build and cache guest images: a Debian root by mmdebstrap, turned into a disk by mke2fs -d.

An image lives in `<cache>/<recipe key>/`:

- `root.img` — the root filesystem (raw ext4, sparse, label `iolabroot`); guests boot from a
  qcow2 overlay over it and never write it;
- `kernels/<release>/vmlinuz`, `initrd` — each kernel for QEMU's direct `-kernel` boot (the
  same files are in the root's /boot, for kexec inside the guest);
- `recipe.json`, `build.json` — what it was made from, when, and how long the build took.

A build runs once per machine and recipe: concurrent callers wait on a lock file and the
directory appears complete (renamed into place) or not at all.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from iolab.errors import IolabError, LabError
from iolab.guest import files, wheels
from iolab.guest.recipe import Recipe, cache_root

Log = Callable[[str], None]
FREE_BYTES = 4 << 30  # room in the root for the guest's own loop images, md arrays, ...


def _quiet(_: str) -> None:
    pass


@dataclass(frozen=True)
class Image:
    """A built image in the cache."""

    path: Path
    recipe: Recipe

    @property
    def root(self) -> Path:
        return self.path / "root.img"

    def kernel(self, release: str) -> tuple[Path, Path]:
        """(vmlinuz, initrd) of `release`, for `-kernel`/`-initrd`."""
        if release not in self.recipe.kernels:
            have = ", ".join(self.recipe.kernels)
            raise IolabError(f"kernel {release} is not in the guest image (it has {have})")
        d = self.path / "kernels" / release
        return d / "vmlinuz", d / "initrd"

    def build_info(self) -> dict[str, object]:
        data: dict[str, object] = json.loads((self.path / "build.json").read_text())
        return data


def cached(recipe: Recipe) -> Image | None:
    """The image for `recipe` if it is built."""
    path = cache_root() / recipe.key
    if (path / "build.json").is_file():
        return Image(path, recipe)
    return None


def ensure(recipe: Recipe, log: Log = _quiet) -> Image:
    """The image for `recipe`, built first if this machine has none."""
    image = cached(recipe)
    if image is not None:
        return image
    root = cache_root()
    root.mkdir(parents=True, exist_ok=True)
    with _locked(root / f"{recipe.key}.lock"):
        image = cached(recipe)
        if image is not None:
            return image
        log(f"guest image {recipe.key}: building ({', '.join(recipe.kernels)})")
        return _build(recipe, root / recipe.key, log)


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    with path.open("a") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def _need(tool: str, package: str) -> None:
    if shutil.which(tool) is None:
        raise LabError(f"guest image: {tool} is missing (apt-get install {package})")


def _build(recipe: Recipe, dest: Path, log: Log) -> Image:
    _need("mmdebstrap", "mmdebstrap")
    _need("mke2fs", "e2fsprogs")
    started = time.monotonic()
    tmp = Path(tempfile.mkdtemp(prefix=f".{recipe.key}.", dir=dest.parent))
    try:
        work = tmp / "work"
        work.mkdir()
        t0 = time.monotonic()
        wheelhouse = work / "wheels"
        wheels.build_wheelhouse(recipe.wheels, wheelhouse)
        (wheelhouse / "requirements.txt").write_text("\n".join(recipe.wheels) + "\n")
        log(f"  wheelhouse: {len(recipe.wheels)} wheels in {time.monotonic() - t0:.0f} s")
        overlay = work / "overlay"
        _write_files(overlay)
        hook = work / "customize.sh"
        hook.write_text(_customize_script(overlay, wheelhouse))
        hook.chmod(0o755)
        t0 = time.monotonic()
        rootdir = work / "root"
        argv = [
            "mmdebstrap",
            "--variant=minbase",
            "--mode=root",
            "--format=directory",
            "--include=" + ",".join(recipe.packages_to_install()),
            # before the kernels are installed: their initrds are made with our settings
            f'--essential-hook=mkdir -p "$1/etc" && cp -a {overlay}/etc/initramfs-tools "$1/etc/"',
            f'--customize-hook={hook} "$1"',
            recipe.suite,
            str(rootdir),
            *recipe.sources,
        ]
        _run(argv, "mmdebstrap", work / "mmdebstrap.log")
        log(f"  mmdebstrap: {time.monotonic() - t0:.0f} s")
        for kernel in recipe.kernels:
            kdir = tmp / "kernels" / kernel
            kdir.mkdir(parents=True)
            shutil.copyfile(rootdir / "boot" / f"vmlinuz-{kernel}", kdir / "vmlinuz")
            shutil.copyfile(rootdir / "boot" / f"initrd.img-{kernel}", kdir / "initrd")
        t0 = time.monotonic()
        used = _du_bytes(rootdir)
        size_mib = (int(used * 1.2) + FREE_BYTES) >> 20
        img = tmp / "root.img"
        mke2fs = ["mke2fs", "-q", "-F", "-t", "ext4", "-L", "iolabroot", "-d", str(rootdir)]
        _run(
            [*mke2fs, str(img), f"{size_mib}M"],
            "mke2fs",
            work / "mke2fs.log",
        )
        log(
            f"  root disk: {used >> 20} MiB used of {size_mib} MiB in {time.monotonic() - t0:.0f} s"
        )
        shutil.rmtree(work)
        (tmp / "recipe.json").write_text(json.dumps(recipe.as_json(), indent=1) + "\n")
        seconds = round(time.monotonic() - started, 1)
        info = {"key": recipe.key, "seconds": seconds, "built_at": time.time(), "used": used}
        (tmp / "build.json").write_text(json.dumps(info) + "\n")
        if dest.exists():  # a half-made directory from a killed build of an older iolab
            shutil.rmtree(dest)
        tmp.rename(dest)
        log(f"guest image {recipe.key}: built in {seconds:.0f} s")
        return Image(dest, recipe)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)


def _write_files(overlay: Path) -> None:
    for path, (mode, text) in files.FILES.items():
        target = overlay / path.lstrip("/")
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)
        target.chmod(mode)


def _customize_script(overlay: Path, wheelhouse: Path) -> str:
    units = " ".join(files.UNITS)
    masked = " ".join(files.MASKED)
    disabled = " ".join(files.DISABLED)
    generators = " ".join(files.GENERATORS_OFF)
    return f"""#!/bin/bash
# mmdebstrap's customize hook: $1 is the new root.  Commands in it run with an empty
# environment: nothing of this machine's pip or locale settings reaches the guest.
set -euo pipefail
root=$1
in_root() {{ chroot "$root" env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root "$@"; }}
cp -a {overlay}/. "$root"/
in_root python3 -m venv /opt/iolab/venv
cp -a {wheelhouse} "$root/tmp/iolab-wheels"
in_root /opt/iolab/venv/bin/pip install -q --no-cache-dir --no-index \\
  --find-links /tmp/iolab-wheels -r /tmp/iolab-wheels/requirements.txt
rm -rf "$root/tmp/iolab-wheels"
site=$(echo "$root"/opt/iolab/venv/lib/python3*/site-packages)
mv "$root/opt/iolab/venv.pth" "$site/iolab-src.pth"
mkdir -p "$root/opt/iolab/src"
ln -sf /opt/iolab/bin/iolab "$root/usr/local/bin/iolab"
in_root dpkg-divert --quiet --local --rename --divert {files.INITRAMFS_POSTINST}.distrib \\
  --add {files.INITRAMFS_POSTINST}
cp -a "$root{files.INITRAMFS_POSTINST_WRAPPER}" "$root{files.INITRAMFS_POSTINST}"
in_root systemctl enable {units}
in_root systemctl mask {masked}
in_root systemctl disable {disabled}
mkdir -p "$root/etc/systemd/system-generators"
for g in {generators}; do ln -sf /dev/null "$root/etc/systemd/system-generators/$g"; done
rm -rf "$root"/var/lib/apt/lists/* "$root"/var/cache/apt/archives/*.deb
"""


def _run(argv: list[str], what: str, logfile: Path) -> None:
    with logfile.open("w") as out:
        proc = subprocess.run(argv, stdout=out, stderr=subprocess.STDOUT, check=False)
    if proc.returncode != 0:
        lines = [ln for ln in logfile.read_text(errors="replace").splitlines() if ln.strip()]
        errors = [ln for ln in lines if ln.startswith("E:")] or lines
        kept = cache_root() / f"failed-{what}.log"
        shutil.copyfile(logfile, kept)
        raise LabError(f"guest image: {what} failed (log: {kept}): " + " / ".join(errors[-3:]))


def _du_bytes(path: Path) -> int:
    total = 0
    for dirpath, _dirs, names in os.walk(path):
        for name in names:
            with contextlib.suppress(OSError):
                total += os.lstat(os.path.join(dirpath, name)).st_blocks * 512
    return total
