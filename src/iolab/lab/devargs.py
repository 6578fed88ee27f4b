"""Device paths hidden in tool options: refused unless they are the run's own targets.

mkfs and mount take extra devices in their options — mkfs.btrfs any further argument,
mkfs.xfs `-l logdev=` / `-r rtdev=`, mke2fs `-J device=` (also `UUID=`/`LABEL=`), mount
`logdev=` / `journal_path=` / `device=` — and those options are placed before the target.
A workload's argv or fio job text can name a device as well.  The safety rules of
iolab.lab.safety apply only to the devices a plan designates, so any other block device
reached through an option would be formatted or written behind them.

The check does not try to know every tool's syntax.  Every word is cut into candidate
values at `=`, `,` and `:` (backslash escapes removed first, so `\\,` and `\\:` cannot hide a
separator); a candidate that is a path (absolute, or relative to the directory the tool runs
in) or a `UUID=`/`LABEL=`/`PARTUUID=`/`PARTLABEL=` tag is resolved (symlinks such as
/dev/disk/by-id followed) and, when it is a block device, must be one of the run's own.
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Iterable
from pathlib import Path

from iolab.errors import RefusedError
from iolab.lab import commands

_TAGS = {
    "UUID": "by-uuid",
    "LABEL": "by-label",
    "PARTUUID": "by-partuuid",
    "PARTLABEL": "by-partlabel",
}
_SPLIT = re.compile(r"[=,:\s]")


def _devno(path: str) -> int | None:
    try:
        st = os.stat(path)
    except (OSError, ValueError):
        return None
    return st.st_rdev if stat.S_ISBLK(st.st_mode) else None


def candidates(word: str) -> list[str]:
    """Values in one option word that could name a device (the word, its `=`/`,`/`:` parts,
    and `TAG=value` pairs kept whole)."""
    plain = word.replace("\\", "")
    out = [plain]
    parts = [p for p in _SPLIT.split(plain) if p]
    out.extend(parts)
    for tag in _TAGS:
        for m in re.finditer(rf"\b{tag}=([^,:\s]+)", plain):
            out.append(f"{tag}={m.group(1)}")
    return list(dict.fromkeys(out))


def _resolve(candidate: str, cwd: Path) -> str | None:
    """The block device a candidate names, as a resolved path; None when it names none."""
    tag, sep, value = candidate.partition("=")
    if sep and tag in _TAGS:
        link = Path("/dev/disk") / _TAGS[tag] / value
        if _devno(str(link)) is not None:
            return os.path.realpath(link)
        # no udev links (containers, minimal VMs): ask blkid, which probes every device
        found = commands.output(["blkid", "-l", "-o", "device", "-t", candidate])
        path = (found or "").strip()
        return os.path.realpath(path) if path and _devno(path) is not None else None
    if "\x00" in candidate:
        return None
    path = candidate if candidate.startswith("/") else str(cwd / candidate)
    if _devno(path) is None:
        return None
    return os.path.realpath(path)


def check_words(
    words: Iterable[str], own: Iterable[str], *, what: str, cwd: Path | None = None
) -> None:
    """RefusedError (exit 3) when a word names a block device that is not in `own`."""
    base = cwd or Path.cwd()
    allowed = {d for d in (_devno(p) for p in own) if d is not None}
    for word in words:
        for candidate in candidates(word):
            device = _resolve(candidate, base)
            if device is None:
                continue
            if _devno(device) in allowed:
                continue
            raise RefusedError(
                f"refusing {what} option {word!r}: it names block device {device}, "
                "which is not one of the run's targets"
            )


def fio_words(text: str) -> list[str]:
    """The option values of a fio job file (each `key=value` line's value, and the line)."""
    out = []
    for line in text.splitlines():
        stripped = line.strip()
        if not stripped or stripped[0] in "#;[":
            continue
        out.append(stripped)
    return out
