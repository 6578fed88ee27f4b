"""null_blk devices made through configfs: the block layer without a device.

Each device is a directory `/sys/kernel/config/nullb/iolab-<run>-<pid>-<n>` (journaled, undo
`nullb`, before it is made): its attributes are written, then `power` 1 brings the disk up
(named after the directory on 6.1, /dev/nullbN with N its `index` on older kernels).  The
undo powers it off and removes the directory, only for directories named `iolab-*`: a
null_blk device somebody else configured is never touched.  The module is loaded with
`nr_devices=0` when it is not there yet (its default would also make nullb0).
"""

from __future__ import annotations

import contextlib
import os
import time
from dataclasses import dataclass
from pathlib import Path

from iolab.errors import LabError
from iolab.lab import commands
from iolab.monitors.base import ChangeJournal
from iolab.plan.model import NullBlkSpec

CONFIGFS = Path("/sys/kernel/config")
NULLB = CONFIGFS / "nullb"
SYS_BLOCK = Path("/sys/block")
QUEUE_MODES = {"bio": "0", "mq": "2"}
IRQMODES = {"none": "0", "softirq": "1", "timer": "2"}


@dataclass(frozen=True)
class NullDevice:
    config: Path  # its configfs directory
    name: str  # nullb3

    @property
    def path(self) -> str:
        return f"/dev/{self.name}"


def attributes(spec: NullBlkSpec, size_bytes: int) -> list[tuple[str, str]]:
    """configfs attributes in the order they are written (all before `power`)."""
    out = [
        ("size", str(size_bytes >> 20)),  # MiB
        ("blocksize", str(spec.blocksize)),
        ("queue_mode", QUEUE_MODES[spec.queue_mode]),
        ("memory_backed", "1" if spec.memory_backed else "0"),
        ("irqmode", IRQMODES[spec.irqmode]),
        ("submit_queues", str(spec.submit_queues)),
        ("hw_queue_depth", str(spec.hw_queue_depth)),
    ]
    if spec.irqmode == "timer":
        out.append(("completion_nsec", str(spec.completion_nsec)))
    return out


def ensure_configfs(journal: ChangeJournal) -> None:
    """Mount configfs at /sys/kernel/config when it is not mounted (journaled)."""
    if NULLB.is_dir() or commands.mounted_at(str(CONFIGFS)):
        return
    journal.record("umount", path=str(CONFIGFS))
    commands.run(["mount", "-t", "configfs", "configfs", str(CONFIGFS)])


def create(journal: ChangeJournal, label: str, spec: NullBlkSpec, size_bytes: int) -> NullDevice:
    if not NULLB.is_dir():
        raise LabError(f"{NULLB} is not there: null_blk without configfs support")
    config = NULLB / label
    journal.record("nullb", path=str(config))
    try:
        config.mkdir()
        for name, value in attributes(spec, size_bytes):
            (config / name).write_text(value)
        (config / "power").write_text("1")
        index = (config / "index").read_text().strip()
    except OSError as exc:
        raise LabError(f"null_blk {label}: the kernel refused it ({exc.strerror})") from None
    # the disk is named after its configfs directory on kernels that do so (6.1 does),
    # nullb<index> on older ones
    names = (label, f"nullb{index}")
    for _ in range(100):
        for name in names:
            if (SYS_BLOCK / name).is_dir() and os.path.exists(f"/dev/{name}"):
                return NullDevice(config, name)
        time.sleep(0.1)
    raise LabError(
        f"null_blk {label} is powered on, but neither /dev/{names[0]} nor /dev/{names[1]} appeared"
    )


def undo_nullb(args: dict[str, str]) -> None:
    """Power off and remove an `iolab-*` null_blk configfs directory."""
    config = Path(args["path"])
    if config.parent != NULLB or not config.name.startswith("iolab-"):
        raise LabError(f"not removing {config}: not a null_blk device iolab made")
    if not config.is_dir():
        return
    with contextlib.suppress(OSError):
        if (config / "power").read_text().strip() == "1":
            (config / "power").write_text("0")
    for attempt in range(20):
        try:
            config.rmdir()
            return
        except FileNotFoundError:
            return
        except OSError as exc:
            if attempt == 19:
                raise LabError(f"cannot remove null_blk {config.name}: {exc.strerror}") from None
            time.sleep(0.2)


def ours_exist() -> bool:
    """Whether configfs holds null_blk devices (anyone's: the module then stays loaded)."""
    return NULLB.is_dir() and any(p.is_dir() for p in NULLB.iterdir())
