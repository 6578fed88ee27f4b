"""Workload confinement: what a workload may name, checked on the plan text before any run.

A workload's paths must be under the sample's own places — `{mntN}` (the scratch
filesystems), `{workdir}` (its private directory), `{devN}` (its own target devices) — or
relative (fio, dd and xfs_io run in `{workdir}`, fio's relative `filename` lands in its
`directory`), or under a path the plan lists in `allow_paths:`.  `..` is refused anywhere in a
path, and so is `${...}` (fio would expand an environment variable into it).

fio options that name files or devices (the list below comes from `fio --cmdhelp=all` of
fio 3.33): `filename` and `directory` (`:`-separated lists), `filename_format`, `opendir`,
`write_iolog`, `read_iolog`, `replay_redirect`, `merge_blktrace_file`, `write_bw_log`,
`write_lat_log`, `write_iops_log`, `write_hist_log`; the `include` directive likewise.
/dev/null, /dev/zero, /dev/urandom and /dev/random hold no data and are always allowed.
Options that run programs or change the machine outside the journal are refused outright
(`exec_prerun`, `exec_postrun`, `cgroup`, `ioscheduler`, `profile`), as are I/O engines that
run programs, load code or reach outside the sample (`exec`, an engine given as a path or
`external:`, network and remote-storage engines, `e4defrag`'s donor file).

dd: the values of `if=` and `of=`.  xfs_io: every file argument, and every word of a `-c`
command that looks like a path (contains `/` or starts with a placeholder).
A `command` workload is not inspected (see docs/safety.md).
"""

from __future__ import annotations

import posixpath
import re
import shlex
from collections.abc import Sequence

FIO_PATH_OPTIONS = (
    "filename",
    "directory",
    "filename_format",
    "opendir",
    "write_iolog",
    "read_iolog",
    "replay_redirect",
    "merge_blktrace_file",
    "write_bw_log",
    "write_lat_log",
    "write_iops_log",
    "write_hist_log",
)
_LISTS = ("filename", "directory")  # fio splits these at ':' (`\:` is a literal colon)
FIO_REFUSED = {
    "exec_prerun": "runs a program",
    "exec_postrun": "runs a program",
    "cgroup": "creates control groups on the host",
    "ioscheduler": "changes the device's scheduler outside the journal "
    "(use knobs: queue: scheduler:)",
    "profile": "runs a built-in benchmark on devices it names itself",
    "donorname": "names a donor file (e4defrag engine)",
}
FIO_ENGINES = (
    "sync",
    "psync",
    "vsync",
    "pvsync",
    "pvsync2",
    "libaio",
    "io_uring",
    "io_uring_cmd",
    "posixaio",
    "mmap",
    "splice",
    "null",
    "cpuio",
    "falloc",
    "ftruncate",
    "filecreate",
    "filestat",
    "filedelete",
    "sg",
)
_PLACE = re.compile(r"\{(mnt\d*|mnts|workdir|src)\}")  # {src}: bisect's work tree of the commit
_DEVICE = re.compile(r"\{dev\d*\}")
_FIO_VARS = ("$jobname", "$jobnum", "$filenum", "$clientuid")
# Character devices that hold no data: a data source (dd if=/dev/zero) or a sink.
HARMLESS = ("/dev/null", "/dev/zero", "/dev/urandom", "/dev/random")


def path_problem(value: str, allowed: Sequence[str]) -> str | None:
    """Why a path a workload names is outside its confinement, or None when it is inside."""
    if not value:
        return None
    if "${" in value:
        return "an environment variable (${...}) would decide where it points"
    rest = value
    for var in _FIO_VARS:
        rest = rest.replace(var, "x")
    if "$" in rest:
        return "fio would expand the $ expression into it"
    parts = value.split("/")
    if ".." in parts:
        return "'..' leaves the confined directory"
    if _DEVICE.fullmatch(value):
        return None
    if _DEVICE.match(value):
        return "{devN} is a device, not a directory"
    m = _PLACE.match(value)
    if m is not None:
        after = value[m.end() :]
        if m.group(1) == "mnts" and after:
            return "{mnts} is the list of mount points: use it alone (directory={mnts})"
        if after == "" or after.startswith("/"):
            return None
        return f"{{{m.group(1)}}} must be followed by / or nothing"
    if "{" in value:
        return "a placeholder may only start a path"
    if value in HARMLESS:
        return None
    if not value.startswith("/"):
        return None  # relative: inside the scratch directory the tool runs in
    norm = posixpath.normpath(value)
    for base in allowed:
        if norm == base or norm.startswith(base.rstrip("/") + "/"):
            return None
    return "not under {mnt}, {workdir} or a plan's allow_paths"


def _fio_list(value: str) -> list[str]:
    """fio's `:` list with `\\:` as a literal colon."""
    return [p.replace("\0", ":") for p in value.replace("\\:", "\0").split(":")]


def fio_problem(text: str, allowed: Sequence[str]) -> str | None:
    """The first line of a fio job that leaves the confinement, as `option: why`."""
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line[0] in "#;[":
            continue
        if line.startswith("include") and (len(line) == 7 or line[7] in " \t"):
            target = line[7:].strip()
            why = path_problem(target, allowed)
            if why:
                return f"include {target}: {why}"
            continue
        key, sep, value = line.partition("=")
        key, value = key.strip(), value.strip()
        if key in FIO_REFUSED:
            return f"{key}: refused, it {FIO_REFUSED[key]}"
        if key == "ioengine":
            engine = value.split(":", 1)[0] if not value.startswith("external") else value
            if engine not in FIO_ENGINES:
                return (
                    f"ioengine={value}: refused (an engine that runs programs, loads code or "
                    f"reaches outside the sample); allowed: {', '.join(FIO_ENGINES)}"
                )
        if key not in FIO_PATH_OPTIONS or not sep:
            continue
        values = _fio_list(value) if key in _LISTS else [value]
        for path in values:
            why = path_problem(path, allowed)
            if why:
                return f"{key}={value}: {why}"
    return None


def dd_problem(argv: Sequence[str], allowed: Sequence[str]) -> str | None:
    for word in argv[1:]:
        key, sep, value = word.partition("=")
        if sep and key in ("if", "of"):
            why = path_problem(value, allowed)
            if why:
                return f"{word}: {why}"
    return None


def xfs_io_problem(argv: Sequence[str], allowed: Sequence[str]) -> str | None:
    words = list(argv[1:])
    i = 0
    while i < len(words):
        word = words[i]
        if word in ("-c", "-C") and i + 1 < len(words):
            try:
                tokens = shlex.split(words[i + 1])
            except ValueError:
                tokens = words[i + 1].split()
            for token in tokens:
                if token.startswith("-"):
                    continue
                if "/" in token or token.startswith("{"):
                    why = path_problem(token, allowed)
                    if why:
                        return f"-c {words[i + 1]!r}: {token}: {why}"
            i += 2
            continue
        if word in ("-p",) and i + 1 < len(words):
            i += 2
            continue
        if not word.startswith("-"):
            why = path_problem(word, allowed)
            if why:
                return f"{word}: {why}"
        i += 1
    return None
