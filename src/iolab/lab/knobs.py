"""Knobs: sysctls and block-queue settings, set for a sample and restored after it.

Names:  sysctl `vm.dirty_bytes` → /proc/sys/vm/dirty_bytes;  queue settings `scheduler`,
`read_ahead_kb`, `iosched.fifo_batch` → /sys/block/<dev>/queue/... of every target device.
The old value is journaled before the new one is written.

Two kernel quirks shape the order and the undo:
* a scheduler's attributes (queue/iosched/*) exist only once that scheduler is selected, so
  `scheduler` is applied before them (and restored after them: undo runs backwards);
* vm.dirty_bytes and vm.dirty_ratio are one setting in two units (writing one zeroes the
  other, and 0 cannot be written to *_bytes), likewise the dirty_background pair — so the
  undo of either writes back whichever of the pair was in force.
"""

from __future__ import annotations

import functools
from pathlib import Path

from iolab.errors import LabError
from iolab.lab import settings
from iolab.lab.journal import Journal

PROC_SYS = Path("/proc/sys")
SYS_BLOCK = Path("/sys/block")

# sysctls recorded with every sample even when the plan leaves them alone
WRITEBACK_SYSCTLS = (
    "vm.dirty_bytes",
    "vm.dirty_ratio",
    "vm.dirty_background_bytes",
    "vm.dirty_background_ratio",
    "vm.dirty_expire_centisecs",
    "vm.dirty_writeback_centisecs",
    "vm.swappiness",
    "vm.vfs_cache_pressure",
)
QUEUE_SETTINGS = (
    "scheduler",
    "nr_requests",
    "read_ahead_kb",
    "max_sectors_kb",
    "rotational",
    "logical_block_size",
    "physical_block_size",
    "write_cache",
    "rq_affinity",
    "nomerges",
    "wbt_lat_usec",
)
_PAIRS = {
    "vm.dirty_bytes": "vm.dirty_ratio",
    "vm.dirty_ratio": "vm.dirty_bytes",
    "vm.dirty_background_bytes": "vm.dirty_background_ratio",
    "vm.dirty_background_ratio": "vm.dirty_background_bytes",
}


def sysctl_path(name: str) -> Path:
    return PROC_SYS / name.replace(".", "/")


def queue_path(device: str, name: str) -> Path:
    """`iosched.fifo_batch` on loop3 → /sys/block/loop3/queue/iosched/fifo_batch."""
    return SYS_BLOCK / device / "queue" / Path(*name.removeprefix("queue.").split("."))


def read_setting(path: Path) -> str | None:
    """The value in force; for a scheduler the selected one (`[mq-deadline] none` → mq-deadline)."""
    try:
        text = path.read_text().strip()
    except OSError:
        return None
    if "[" in text and "]" in text:
        return text[text.index("[") + 1 : text.index("]")]
    return text


def _write(path: Path, value: str, name: str) -> None:
    try:
        path.write_text(value)
    except FileNotFoundError:
        raise LabError(f"{name}: no such setting here ({path})") from None
    except OSError as exc:
        raise LabError(f"{name} = {value}: the kernel refused it ({exc.strerror})") from None


def _sysctl_undo(name: str) -> tuple[Path, str]:
    """What to write to restore `name` (and its twin) to what is in force now."""
    path = sysctl_path(name)
    old = read_setting(path)
    if old is None:
        raise LabError(f"{name}: no such sysctl")
    twin = _PAIRS.get(name)
    if twin is not None and old.strip() == "0":
        twin_path = sysctl_path(twin)
        twin_old = read_setting(twin_path)
        if twin_old is not None:
            return twin_path, twin_old
    return path, old


def setting_key(name: str) -> str:
    """The registry key of a sysctl: the dirty pairs are one setting in two units."""
    twin = _PAIRS.get(name)
    return "+".join(sorted((name, twin))) if twin else name


def sysctl_wants(sysctls: dict[str, str]) -> list[settings.Want]:
    """The plan's sysctls as host-wide settings to hold (iolab.lab.settings), one per key."""
    grouped: dict[str, list[str]] = {}
    for name in sorted(sysctls):
        if not sysctl_path(name).exists():
            raise LabError(f"{name}: no such sysctl")
        grouped.setdefault(setting_key(name), []).append(name)
    wants = []
    for key, names in sorted(grouped.items()):
        writes = tuple((str(sysctl_path(n)), str(sysctls[n])) for n in names)
        wants.append(settings.Want(key, writes, functools.partial(_original, names[0])))
    return wants


def _original(name: str) -> tuple[str, str]:
    path, value = _sysctl_undo(name)
    return str(path), value


def _queue_order(name: str) -> tuple[int, str]:
    return (0 if name == "scheduler" else 1, name)


def apply(
    journal: Journal, sysctls: dict[str, str], queue: dict[str, str], devices: list[str]
) -> None:
    """Set every knob (journaled first); the caller's journal scope restores them.

    Sysctls are host-wide: they are held through iolab.lab.settings, so a concurrent run
    never restores a value this one set (or the other way round).  Queue settings are on
    the run's own target devices, which no other run uses.

    `queue` names are relative to /sys/block/<dev>/queue (`scheduler`, `iosched.fifo_batch`)
    and apply to every target device.
    """
    settings.take(journal, sysctl_wants(sysctls))
    apply_queue(journal, queue, devices)


def apply_queue(journal: Journal, queue: dict[str, str], devices: list[str]) -> None:
    """Queue settings on `devices` (the top devices, or a stack's members), journaled."""
    for name in sorted(queue, key=_queue_order):
        value = str(queue[name])
        for device in devices:
            path = queue_path(device, name)
            old = read_setting(path)
            if old is None:
                raise LabError(f"queue/{name.replace('.', '/')}: no such setting on {device}")
            if old == value:
                continue
            journal.record("write", path=str(path), value=old)
            _write(path, value, f"queue/{name.replace('.', '/')} on {device}")


def in_force(sysctls: dict[str, str], queue: dict[str, str], devices: list[str]) -> dict[str, str]:
    """Every sysctl and queue setting in force (the plan's and the key ones) for provenance."""
    out: dict[str, str] = {}
    for name in sorted(set(WRITEBACK_SYSCTLS) | set(sysctls)):
        value = read_setting(sysctl_path(name))
        if value is not None:
            out[name] = value
    queue_names = set(QUEUE_SETTINGS) | set(queue)
    for device in devices:
        names = set(queue_names)
        iosched = SYS_BLOCK / device / "queue" / "iosched"
        if iosched.is_dir():
            names |= {f"iosched.{p.name}" for p in iosched.iterdir()}
        for name in sorted(names):
            value = read_setting(queue_path(device, name))
            if value is not None:
                out[f"{device}.queue.{name}"] = value
    return out


def md_path(array: str, name: str) -> Path:
    return SYS_BLOCK / array / "md" / name


def apply_md(journal: Journal, values: dict[str, str], arrays: list[str]) -> None:
    """md attributes (/sys/block/mdX/md/NAME) of iolab's own arrays, journaled.

    `sync_speed_max`/`_min` read `200000 (system)` while they follow the system-wide limit;
    the undo then writes `system`, which is how md is told to follow it again."""
    for array in arrays:
        for name in sorted(values):
            path = md_path(array, name)
            old = read_setting(path)
            if old is None:
                raise LabError(f"md/{name}: no such setting on {array}")
            value = str(values[name])
            if old == value:
                continue
            journal.record("write", path=str(path), value="system" if "(system)" in old else old)
            _write(path, value, f"md/{name} on {array}")


def md_in_force(arrays: list[str]) -> dict[str, str]:
    """The md attributes that shape a measurement, for provenance."""
    out: dict[str, str] = {}
    names = ("stripe_cache_size", "group_thread_cnt", "sync_speed_max", "sync_speed_min",
             "chunk_size", "level", "raid_disks", "array_state", "sync_action")  # fmt: skip
    for array in arrays:
        for name in names:
            value = read_setting(md_path(array, name))
            if value is not None:
                out[f"{array}.md.{name}"] = value
    return out
