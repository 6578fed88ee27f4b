"""Kernels built here boot the guest: `dpkg -i` of two packages built from the planted tree with
the guest's config, then kexec into each, and iolab runs on both.

The builds come from the cache of `bench/kernel_build_guest.py` (iolab's builder running
examples/hooks/kernel-build-bindeb on the tree of bench/kernel_tree.py): the planted
commit's parent and the planted commit.  Nothing is built here; without both builds cached,
or without IOLAB_GUEST_LONG=1 (three boots, two package installs under TCG: minutes), the
test is skipped.

What it proves: the package installs as any Debian kernel does (its postinst makes an
initramfs), kexec into it reaches the guest's root and systemd, iolab's run on it records
`boot.release`-style provenance naming the build's release (which carries the commit's sha),
and the planted commit's second synchronous journal commit per fsync shows in the evidence
iolab gathers: jbd2 transactions per write go up, handles per transaction down.
"""

from __future__ import annotations

import json
import os
import textwrap
from pathlib import Path
from typing import Any

import pytest

from guest_fixtures import KERNEL_A, guest_image
from iolab.bisect.kernel_build import Built, KernelBuilder, short
from iolab.guest import run

WORK = Path(os.environ.get("IOLAB_KERNEL_TREE_WORK", "/var/cache/iolab/kernel-tree"))

pytestmark = [pytest.mark.lab, pytest.mark.slow, pytest.mark.timeout(3600)]

PLAN = """\
name: built-kernel
target: {size: 128M}
filesystem: {type: ext4, mkfs_options: -m 1 -b 4096, mount_options: "noatime,data=ordered"}
workload:
  fio: |
    [w]
    directory={mnt}
    filename=f
    size=1M
    bs=16k
    rw=randwrite
    ioengine=psync
    fsync=1
    runtime=4s
    time_based=1
variants:
  fsync: {}
repeat: 2
kpis: [write.iops]
monitors: [jbd2]
"""


def _cached() -> tuple[Built, Built] | None:
    try:
        info: dict[str, Any] = json.loads((WORK / "tree.json").read_text())
        builder = KernelBuilder(
            Path(info["tree"]), Path(info["build_cache"]), (info["hook"], info["config"])
        )
    except (OSError, ValueError, KeyError):
        return None
    parent, planted = builder.cached(info["planted_parent"]), builder.cached(info["planted"])
    if parent is None or planted is None:
        return None
    return parent, planted


BUILDS = _cached() if os.environ.get("IOLAB_GUEST_LONG") else None


@pytest.mark.skipif(
    BUILDS is None,
    reason="needs IOLAB_GUEST_LONG=1 and both builds cached (bench/kernel-build-real --guest)",
)
def test_dpkg_install_then_kexec_into_built_kernels_runs_iolab_and_shows_the_plant() -> None:
    assert BUILDS is not None
    img = guest_image()
    debs, releases = {}, []
    for name, built in zip(("parent", "planted"), BUILDS, strict=True):
        assert built.manifest is not None
        (deb,) = built.manifest.artifacts
        debs[f"{name}.deb"] = deb.read_bytes()
        releases.append(built.manifest.release)
        assert short(built.sha) in built.manifest.release
    parent, planted = releases
    script = textwrap.dedent(
        f"""\
        state=/var/lib/iolab-test
        mkdir -p $state
        n=$(cat $state/n 2>/dev/null || echo 0)
        switch() {{
          kexec -l /boot/vmlinuz-$1 --initrd=/boot/initrd.img-$1 --reuse-cmdline || exit 3
          touch "$IOLAB_STAY"
          systemctl kexec
          exit 0
        }}
        measure() {{
          uname -r
          iolab --db /root/s$1.db run /run/iolab-cmd/plan.yaml >/root/run$1.out 2>&1 || {{
            cat /root/run$1.out; exit 1; }}
          iolab --db /root/s$1.db results --run 1 --json >/root/results$1.json
          echo "--- results"
          cat /root/results$1.json
        }}
        case $n in
        0)
          start=$(date +%s%N)
          dpkg -i /run/iolab-cmd/parent.deb /run/iolab-cmd/planted.deb >$state/dpkg.log 2>&1 \\
            || {{ cat $state/dpkg.log; exit 2; }}
          echo "dpkg-ms $(( ($(date +%s%N) - start) / 1000000 ))"
          ls /boot
          echo 1 >$state/n
          switch {parent} ;;
        1)
          echo 2 >$state/n
          measure 1
          switch {planted} ;;
        *)
          measure 2
          exit 7 ;;
        esac
        """
    )
    result = run.run_script(
        img, KERNEL_A, script, files={"plan.yaml": PLAN.encode(), **debs}, timeout_s=3000
    )
    print(result.output)
    assert result.exit_status == 7, result.output
    assert [b.release for b in result.boots] == [KERNEL_A, parent, planted]
    assert len({b.boot_id for b in result.boots}) == 3
    install = result.boots[0].output
    assert f"vmlinuz-{parent}" in install and f"initrd.img-{planted}" in install, install
    per_write = []
    for boot, release in zip(result.boots[1:], (parent, planted), strict=True):
        head, _, body = boot.output.partition("--- results\n")
        assert head.splitlines()[0] == release
        samples = json.loads(body)
        assert len(samples) == 2 and all(s["status"] == "ok" for s in samples), samples
        for s in samples:
            assert release in json.dumps(s["provenance"])
            assert s["metrics"]["write.iops"] > 0
        per_write.append(
            sum(s["metrics"]["jbd2.transactions"] for s in samples)
            / sum(s["metrics"]["write.iops"] for s in samples)
        )
    # one synchronous commit more per fsync: about twice the transactions per write
    # (write.iops over the same seconds stands in for the number of writes)
    assert per_write[1] > 1.5 * per_write[0], per_write
