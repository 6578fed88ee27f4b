"""The running boot as evidence: which kernel, with which command line, which boot.

The boot id changes at every boot (kexec included), so "a new boot id and the expected
release" is what proves a switch happened.  The build id (the kernel's GNU build-id note, from
/sys/kernel/notes) tells two builds of one release apart, e.g. a bisect step's rebuild.
"""

from __future__ import annotations

import struct
from dataclasses import asdict, dataclass
from pathlib import Path

PROC = Path("/proc")
NOTES = Path("/sys/kernel/notes")
_NT_GNU_BUILD_ID = 3


@dataclass(frozen=True)
class BootInfo:
    release: str
    cmdline: str
    boot_id: str
    build_id: str | None

    def as_dict(self) -> dict[str, str | None]:
        return asdict(self)


def _read(path: Path) -> str:
    try:
        return path.read_text().strip()
    except OSError:
        return ""


def build_id(notes: bytes) -> str | None:
    """The GNU build-id in an ELF notes blob (namesz, descsz, type, name, desc; 4-aligned)."""
    offset = 0
    while offset + 12 <= len(notes):
        namesz, descsz, kind = struct.unpack_from("<III", notes, offset)
        offset += 12
        name = notes[offset : offset + namesz]
        offset += (namesz + 3) & ~3
        desc = notes[offset : offset + descsz]
        offset += (descsz + 3) & ~3
        if kind == _NT_GNU_BUILD_ID and name.rstrip(b"\0") == b"GNU" and desc:
            return desc.hex()
    return None


def current() -> BootInfo:
    """This machine's boot now."""
    try:
        notes = NOTES.read_bytes()
    except OSError:
        notes = b""
    return BootInfo(
        release=_read(PROC / "sys/kernel/osrelease"),
        cmdline=_read(PROC / "cmdline"),
        boot_id=_read(PROC / "sys/kernel/random/boot_id"),
        build_id=build_id(notes),
    )
