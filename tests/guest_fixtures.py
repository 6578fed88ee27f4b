"""Shared by the QEMU guest tests: the cached image (built here if this machine has none), and
the kernel A/B plan with the checks of its samples (on a fleet guest and on one box), and the
check that a test left no guest behind."""

from __future__ import annotations

import os
import shutil
import sys
from collections import Counter
from pathlib import Path
from typing import Any

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


PLAN = """\
name: kernel-ab
target: {size: 32M}
filesystem: {type: ext4, mkfs_options: -m 1}
workload:
  fio: |
    [w]
    filename={mnt}/f
    size=2M
    bs=4k
    rw=randwrite
    ioengine=psync
    runtime=1s
    time_based=1
variants:
  old: {kernel: KERNEL_B}
  new: {kernel: {release: KERNEL_A, cmdline: "loglevel=4"}}
repeat: REPEAT
kpis: [write.iops]
prepare: {drop_caches: false}
"""


def write_plan(path: Path, repeat: int) -> Path:
    text = PLAN.replace("KERNEL_A", KERNEL_A).replace("KERNEL_B", KERNEL_B)
    path.write_text(text.replace("REPEAT", str(repeat)))
    return path


def check_samples(
    samples: list[dict[str, Any]], blocks: int, *, per_sample_boots: bool = True
) -> None:
    """Each (case, block) once; each sample on its variant's kernel with its command line,
    in a boot of its own."""
    keys = Counter((s["variant"], s["block"]) for s in samples)
    assert len(samples) == 2 * blocks and max(keys.values()) == 1, keys
    wanted = {"old": KERNEL_B, "new": KERNEL_A}
    for s in samples:
        assert s["status"] == "ok", s["reason"]
        boot = s["provenance"]["boot"]
        assert boot["release"] == wanted[str(s["variant"])], boot
        assert s["provenance"]["kernel"] == boot["release"]
        assert boot["boot_id"] and boot["boot_id"] == s["provenance"]["boot_id"]
        assert ("loglevel=4" in boot["cmdline"].split()) == (s["variant"] == "new")
        assert boot["booted_for_sample"] is per_sample_boots
        assert boot["from_boot_id"] != boot["boot_id"]
        if per_sample_boots:  # systemd's marks of the boot, read before the sample
            switch = boot["switch"]
            assert 0 < switch["userspace_s"] < switch["measure_s"], switch
            assert switch.get("multi_user_s", 0) < switch["measure_s"], switch
    boots = [s["provenance"]["boot"]["boot_id"] for s in samples]
    assert len(set(boots)) == len(boots), "two samples shared a boot"


def check_paired_orders(samples: list[dict[str, Any]]) -> None:
    """ABBA or BAAB: block 2 measured block 1's variants in reverse order."""
    order = {
        b: [s["variant"] for s in sorted(samples, key=lambda s: s["position"]) if s["block"] == b]
        for b in (1, 2)
    }
    assert order[2] == order[1][::-1], order


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
