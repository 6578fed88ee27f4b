"""Small readers of /proc and /sys shared by the monitors: one place that knows the paths."""

from __future__ import annotations

from pathlib import Path

from iolab.errors import LabError

PROC = Path("/proc")
SYS_BLOCK = Path("/sys/class/block")
# where the system mounts tracefs; a tracefs mounted elsewhere may be another process's
# private mount, which can vanish under us
TRACEFS_DIRS = (Path("/sys/kernel/tracing"), Path("/sys/kernel/debug/tracing"))


def read_text(path: Path) -> str:
    """The text of a kernel file, or a LabError naming it (a monitor cannot run without it)."""
    try:
        return path.read_text()
    except OSError as exc:
        raise LabError(f"cannot read {path}: {exc.strerror}") from None


def device_numbers(device: str) -> tuple[int, int]:
    """(major, minor) of a block device by its kernel name, e.g. "loop3" → (7, 3)."""
    text = read_text(SYS_BLOCK / device / "dev").strip()
    try:
        major, minor = text.split(":")
        return int(major), int(minor)
    except ValueError:
        raise LabError(f"{SYS_BLOCK / device / 'dev'}: unexpected content {text!r}") from None


def kernel_dev_t(device: str) -> int:
    """The dev_t the kernel stores in tracepoint records: major << 20 | minor (MKDEV),
    which differs from the user-space encoding of st_rdev."""
    major, minor = device_numbers(device)
    return (major << 20) | minor


def block_device_exists(device: str) -> bool:
    return (SYS_BLOCK / device / "dev").exists()


def parse_counters(text: str) -> dict[str, int]:
    """`name value` lines (/proc/vmstat) into a dict; lines of another shape are skipped."""
    out: dict[str, int] = {}
    for line in text.splitlines():
        parts = line.split()
        if len(parts) == 2:
            try:
                out[parts[0]] = int(parts[1])
            except ValueError:
                continue
    return out


def tracefs_mounts() -> list[Path]:
    """Where tracefs is mounted at its usual places (TRACEFS_DIRS) in this mount namespace."""
    out = []
    try:
        lines = (PROC / "self" / "mountinfo").read_text().splitlines()
    except OSError:
        return []
    for line in lines:
        left, _, right = line.partition(" - ")
        point = Path(left.split()[4].encode().decode("unicode_escape"))
        if right.split()[:1] == ["tracefs"] and point in TRACEFS_DIRS:
            out.append(point)
    return out


def filesystem_supported(fstype: str) -> bool:
    try:
        text = (PROC / "filesystems").read_text()
    except OSError:
        return False
    return any(line.split()[-1:] == [fstype] for line in text.splitlines())
