"""Kernels built here boot the guest: `dpkg -i` of two packages built from the planted tree with
the guest's config, then kexec into each, and iolab runs on both.

The builds come from the cache of `bench/kernel_build_guest.py` (iolab's builder running
examples/hooks/kernel-build-bindeb on the tree of bench/kernel_tree.py): the planted
commit's parent and the planted commit.  Nothing is built here; without both builds cached,
or without IOLAB_GUEST_LONG=1 (three boots, two package installs under TCG: minutes), the
test is skipped.

What it proves: the package installs as any Debian kernel does, without an initramfs (the
guest's config builds in what mounts the root, and the guest's postinst hook then makes none:
under TCG that is most of an install), kexec into it without one reaches the guest's root
and systemd, iolab's run on it records `boot.release`-style provenance naming the build's
release (which carries the commit's sha), and the planted commit's second synchronous
journal commit per fsync shows in the evidence iolab gathers: jbd2 transactions per write go
up, handles per transaction down.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from guest_fixtures import KERNEL_A, guest_image
from iolab.builds.kernel import Built, KernelBuilder, short
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


def _builds() -> dict[str, Built]:
    """The cached builds of the planted commit's parent and of the planted commit (those
    that exist), by name."""
    try:
        info: dict[str, Any] = json.loads((WORK / "tree.json").read_text())
        builder = KernelBuilder(
            Path(info["tree"]), Path(info["build_cache"]), (info["hook"], info["config"])
        )
    except (OSError, ValueError, KeyError):
        return {}
    found = {}
    for name in ("planted_parent", "planted"):
        built = builder.cached(info[name])
        if built is not None:
            found[name] = built
    return found


BUILDS = _builds() if os.environ.get("IOLAB_GUEST_LONG") else {}
WHY = "needs IOLAB_GUEST_LONG=1 and the builds cached (bench/kernel-build-real --guest)"

SCRIPT = """\
state=/var/lib/iolab-test
mkdir -p $state
n=$(cat $state/n 2>/dev/null || echo 0)
releases=({releases})
if [ "$n" = 0 ]; then
  start=$(date +%s%N)
  dpkg -i /run/iolab-cmd/*.deb >$state/dpkg.log 2>&1 || {{ cat $state/dpkg.log; exit 2; }}
  echo "dpkg-ms $(( ($(date +%s%N) - start) / 1000000 ))"
  ls /boot
else
  uname -r
  cat /sys/devices/system/clocksource/clocksource0/current_clocksource
  iolab --db /root/s$n.db run /run/iolab-cmd/plan.yaml >/root/run$n.out 2>&1 || {{
    cat /root/run$n.out; exit 1; }}
  iolab --db /root/s$n.db results --run 1 --json >/root/results$n.json
  echo "--- results"
  cat /root/results$n.json
fi
if [ "$n" -ge ${{#releases[@]}} ]; then
  exit 7
fi
next=${{releases[$n]}}
echo $((n + 1)) >$state/n
initrd=(); [ -e /boot/initrd.img-$next ] && initrd=(--initrd=/boot/initrd.img-$next)
kexec -l /boot/vmlinuz-$next "${{initrd[@]}}" --reuse-cmdline || exit 3
touch "$IOLAB_STAY"
systemctl kexec
"""


def _install_and_measure(builds: list[Built]) -> list[list[dict[str, Any]]]:
    """One guest: `dpkg -i` of every build's package, then a kexec into each in turn and
    `iolab run` of PLAN there.  Returns each build's samples, checked for its release."""
    img = guest_image()
    debs, releases = {}, []
    for built in builds:
        assert built.manifest is not None
        (deb,) = built.manifest.artifacts
        debs[f"{short(built.sha)}.deb"] = deb.read_bytes()
        releases.append(built.manifest.release)
        assert short(built.sha) in built.manifest.release
    script = SCRIPT.format(releases=" ".join(releases))
    result = run.run_script(
        img, KERNEL_A, script, files={"plan.yaml": PLAN.encode(), **debs}, timeout_s=3000
    )
    print(result.output)
    assert result.exit_status == 7, result.output
    assert [b.release for b in result.boots] == [KERNEL_A, *releases]
    assert len({b.boot_id for b in result.boots}) == len(releases) + 1
    install = result.boots[0].output
    for release in releases:
        assert f"vmlinuz-{release}" in install and f"initrd.img-{release}" not in install, install
    measured = []
    for boot, release in zip(result.boots[1:], releases, strict=True):
        head, _, body = boot.output.partition("--- results\n")
        # uname -r; the clock the first boot's command line chose (tsc=reliable) carried over
        assert head.splitlines()[:2] == [release, "tsc"], head
        samples, _ = json.JSONDecoder().raw_decode(body)  # then the next kexec's lines
        assert len(samples) == 2 and all(s["status"] == "ok" for s in samples), samples
        for s in samples:
            assert release in json.dumps(s["provenance"])
            assert s["metrics"]["write.iops"] > 0 and s["metrics"]["jbd2.transactions"] > 0
        measured.append(samples)
    return measured


@pytest.mark.skipif("planted_parent" not in BUILDS, reason=WHY)
def test_dpkg_install_then_kexec_into_a_built_kernel_runs_iolab() -> None:
    """The package installs as any Debian kernel does (no initramfs: the kernel mounts the
    guest's root by itself), kexec into it reaches the guest's root and systemd, and iolab
    runs there on ext4 with the jbd2 evidence; the samples' provenance names the build's
    release."""
    _install_and_measure([BUILDS["planted_parent"]])


@pytest.mark.skipif(len(BUILDS) < 2, reason=WHY)
def test_the_planted_commit_shows_in_the_jbd2_evidence() -> None:
    """The parent and the planted commit in one guest: the planted kernel's second
    synchronous journal commit per fsync gives about twice the transactions per write
    (write.iops over the same seconds stands in for the number of writes)."""
    parent, planted = _install_and_measure([BUILDS["planted_parent"], BUILDS["planted"]])
    per_write = [
        sum(s["metrics"]["jbd2.transactions"] for s in samples)
        / sum(s["metrics"]["write.iops"] for s in samples)
        for samples in (parent, planted)
    ]
    assert per_write[1] > 1.5 * per_write[0], per_write
