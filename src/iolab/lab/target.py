"""Targets: the block devices a plan runs on — loop images iolab creates, or designated devices.

Loop images are named `iolab-<run>-<pid>-<n>.img` so that anyone listing /dev/shm (RAM
backing) or /var/tmp (disk backing) can tell they are iolab's, and so two runs never share
one.  The image file and the loop device are journaled before they are made.
"""

from __future__ import annotations

import os
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from iolab.errors import LabError
from iolab.lab import commands, safety
from iolab.lab.journal import Journal
from iolab.plan.model import TargetSpec

BACKING_DIRS = {"ram": Path("/dev/shm"), "disk": Path("/var/tmp")}


@dataclass
class Device:
    path: str  # /dev/loop3
    name: str  # loop3 (kernel name: /sys/block/<name>, /proc/diskstats)
    image: str | None = None  # backing file of a loop device iolab made


@dataclass
class Target:
    devices: list[Device] = field(default_factory=list)  # the top devices: {dev0}, {dev1}, ..
    created: bool = False  # True for loop images iolab made (safe to format without asking)
    # a stack (md, multipath): the devices under the top one, its members / paths
    members: list[Device] = field(default_factory=list)
    arrays: list[str] = field(default_factory=list)  # md arrays iolab made (kernel names)
    maps: list[str] = field(default_factory=list)  # dm maps iolab made (dm names)
    stack: dict[str, Any] = field(default_factory=dict)  # how it was built (provenance)

    @property
    def names(self) -> list[str]:
        return [d.name for d in self.devices]

    @property
    def member_names(self) -> list[str]:
        return [d.name for d in self.members]


def parse_size(text: str | int) -> int:
    """`512M`, `1G`, `1GiB`, `4096` → bytes (binary multiples, as fio and truncate read them)."""
    if isinstance(text, int):
        return text
    s = str(text).strip().upper().removesuffix("IB").removesuffix("B")
    mult = 1
    for suffix, factor in (("K", 1 << 10), ("M", 1 << 20), ("G", 1 << 30), ("T", 1 << 40)):
        if s.endswith(suffix):
            s, mult = s[: -len(suffix)], factor
            break
    try:
        return int(float(s) * mult)
    except ValueError:
        raise LabError(f"not a size: {text!r}") from None


def image_path(backing: str, run_id: int, n: int, directory: Path | None = None) -> Path:
    base = directory or BACKING_DIRS.get(backing)
    if base is None:
        raise LabError(f"unknown image backing {backing!r} (ram or disk)")
    return base / f"iolab-{run_id}-{os.getpid()}-{n}.img"


def _gib(n: int) -> str:
    return f"{n / (1 << 30):.1f} GiB"


def check_space(needs: Sequence[tuple[TargetSpec, int]]) -> None:
    """LabError when the loop images of a run would not fit where they go: images are sparse,
    but a workload that fills them would otherwise run a RAM-backed /dev/shm (or the disk)
    out of space mid-run."""
    wanted: dict[Path, int] = {}
    for spec, size in needs:
        base = Path(spec.directory) if spec.directory else BACKING_DIRS.get(spec.backing)
        if base is None:
            raise LabError(f"unknown image backing {spec.backing!r} (ram or disk)")
        wanted[base] = wanted.get(base, 0) + size
    for base, size in sorted(wanted.items()):
        try:
            st = os.statvfs(base)
        except OSError as exc:
            raise LabError(f"cannot place loop images in {base}: {exc.strerror}") from None
        free = st.f_bavail * st.f_frsize
        if size > free:
            raise LabError(
                f"the loop images need {_gib(size)} in {base}, which has {_gib(free)} free "
                "(make target.size smaller or use another backing)"
            )


def create_loop_images(
    journal: Journal,
    run_id: int,
    count: int,
    size: int,
    backing: str = "ram",
    directory: Path | None = None,
    first: int = 0,
) -> Target:
    """Create `count` sparse images of `size` bytes and attach each to a free loop device
    (numbered from `first`, so several targets of one run get distinct names)."""
    commands.require("losetup")
    spec = TargetSpec(
        "loop",
        count,
        size,
        "disk" if backing == "disk" else "ram",
        str(directory) if directory else None,
    )
    check_space([(spec, count * size)])
    target = Target(created=True)
    for n in range(first, first + count):
        image = image_path(backing, run_id, n, directory)
        _new_image(journal, image, size)
        device = _attach(image)
        target.devices.append(Device(device, safety.kernel_name(device), str(image)))
    return target


def _new_image(journal: Journal, image: Path, size: int) -> None:
    """A sparse image of `size` bytes, journaled before it exists (unlink) and before any
    device is attached to it (one `loop` entry detaches every device on it)."""
    if image.exists():
        raise LabError(f"{image} exists already: a killed run left it? run `iolab cleanup`")
    journal.record("unlink", path=str(image))
    try:
        with open(image, "wb") as fh:
            fh.truncate(size)
    except OSError as exc:
        raise LabError(f"cannot create loop image {image}: {exc.strerror}") from None
    journal.record("loop", image=str(image))


def create_loop_paths(
    journal: Journal,
    run_id: int,
    paths: int,
    size: int,
    backing: str = "ram",
    directory: Path | None = None,
    first: int = 0,
) -> Target:
    """One sparse image attached to `paths` loop devices: N request queues, one device's
    data (the paths of a multipath map).  One `loop` entry detaches them all."""
    commands.require("losetup")
    spec = TargetSpec(
        "loop",
        1,
        size,
        "disk" if backing == "disk" else "ram",
        str(directory) if directory else None,
    )
    check_space([(spec, size)])
    image = image_path(backing, run_id, first, directory)
    _new_image(journal, image, size)
    target = Target(created=True)
    for _ in range(paths):
        device = _attach(image)
        target.devices.append(Device(device, safety.kernel_name(device), str(image)))
    return target


def _attach(image: Path) -> str:
    """losetup --find races with other processes taking the same free device: retry."""
    argv = ["losetup", "--find", "--show", "--direct-io=off", str(image)]
    for attempt in range(5):
        try:
            return commands.run(argv).stdout.strip()
        except LabError:
            if attempt == 4:
                raise
            time.sleep(0.2 * (attempt + 1))
    raise AssertionError("unreachable")


def designated(paths: list[str], *, destroy_data: bool) -> Target:
    """Devices the plan names; each passes the safety rules or the run is refused."""
    target = Target(created=False)
    for path in paths:
        safety.check_device(path, destroy_data=destroy_data)
        target.devices.append(Device(path, safety.kernel_name(path)))
    return target
