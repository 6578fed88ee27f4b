"""The example build hook on a real kernel tree: two commits built with `make bindeb-pkg`
through iolab's builder, and each built kernel booted under QEMU to its console banner.

Needs a kernel git repository of at least two commits and a base config, which
`bench/kernel-build-real` makes (bench/kernel_tree.py's tree: Debian's linux-source-6.1 and
17 commits on it; a tinyconfig with a serial console; the tree's last two commits are built)
and passes in `IOLAB_KERNEL_TREE` and `IOLAB_KERNEL_BASE_CONFIG`.  Minutes of compiling on
two cores: not part of `make test`.  The guest's own config: tests/test_guest_kernel_built.py.

What it proves that the packaged stand-ins of test_guest_kernel_git cannot: the hook's
`LOCALVERSION` gives each commit a release carrying its sha, `make kernelrelease` agrees with
the package bindeb-pkg made (the manifest check), and the kernel built from that commit says
that release itself — "Linux version <release>" on its console, the banner ktest.pl checks
against `make kernelrelease`, and what `uname -r` prints on a host that boots it.
"""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

import pytest

from iolab.builds.kernel import KernelBuilder, short

TREE = os.environ.get("IOLAB_KERNEL_TREE")
BASE = os.environ.get("IOLAB_KERNEL_BASE_CONFIG")
HOOK = Path(__file__).resolve().parents[1] / "examples" / "hooks" / "kernel-build-bindeb"

pytestmark = [
    pytest.mark.slow,
    pytest.mark.timeout(4 * 3600),
    pytest.mark.skipif(
        not (TREE and BASE),
        reason="a real kernel build takes minutes (bench/kernel-build-real sets it up)",
    ),
]


def _git(*args: str) -> str:
    assert TREE is not None
    return subprocess.run(
        ["git", "-C", TREE, *args], capture_output=True, text=True, check=True
    ).stdout.strip()


def _banner(vmlinuz: Path, console: Path) -> str:
    """Boot `vmlinuz` under TCG with no root and no init: the kernel prints its banner, finds
    nothing to run and panics; panic=-1 reboots and -no-reboot ends QEMU."""
    argv = [
        "qemu-system-x86_64", "-nodefaults", "-no-user-config", "-machine", "pc,accel=tcg",
        "-m", "256", "-display", "none", "-serial", f"file:{console}", "-kernel", str(vmlinuz),
        "-append", "console=ttyS0 panic=-1", "-no-reboot",
    ]  # fmt: skip
    subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True, timeout=300, check=False)
    return console.read_text(errors="replace")


def test_two_commits_build_and_boot_with_their_sha_in_the_release(tmp_path: Path) -> None:
    assert TREE is not None and BASE is not None
    first, second = _git("rev-parse", "HEAD~1"), _git("rev-parse", "HEAD")
    version = subprocess.run(
        ["make", "-s", "-C", TREE, "kernelversion"], capture_output=True, text=True, check=True
    ).stdout.strip()
    builder = KernelBuilder(Path(TREE), tmp_path / "cache", (str(HOOK), BASE))
    seconds: dict[str, float] = {}
    releases = []
    for sha in (first, second):
        start = time.monotonic()
        built = builder.build(sha)
        seconds[short(sha)] = time.monotonic() - start
        assert built.ok, built.reason
        assert built.manifest is not None and not built.cached
        release = built.manifest.release
        assert release == f"{version}-iolab-{short(sha)}"  # the sha, nothing appended
        (deb,) = built.manifest.artifacts
        assert deb.name.startswith(f"linux-image-{release}_") and deb.suffix == ".deb"
        files = subprocess.run(
            ["dpkg-deb", "--contents", str(deb)], capture_output=True, text=True, check=True
        ).stdout
        assert f"./boot/vmlinuz-{release}" in files
        unpacked = tmp_path / f"deb-{short(sha)}"
        subprocess.run(["dpkg-deb", "--extract", str(deb), str(unpacked)], check=True)
        console = _banner(unpacked / "boot" / f"vmlinuz-{release}", tmp_path / f"{sha}.console")
        assert f"Linux version {release} " in console, console[-2000:]
        releases.append(release)
    assert releases[0] != releases[1]
    start = time.monotonic()
    again = builder.build(first)  # visited again by the engine: from the cache, no build
    assert again.ok and again.cached and again.manifest is not None
    assert again.manifest.release == releases[0]
    seconds["cached"] = time.monotonic() - start
    print(f"kernel {version}: build seconds {seconds}")  # the bench reads this line
