"""`{name}` placeholders in workload text and argv.

Two passes, because values come from two places: the plan layer substitutes `vars:` and matrix
dimensions at expansion (`substitute`), leaving the machine-dependent names ({mnt}, {devN},
{workdir}) and `{{`/`}}` escapes alone; the lab fills those per sample (`render_workload`).
`iolab bisect` adds a pass in between: {src} (the commit's work tree) and {rev} (its full
sha) are filled per commit (`fill_commit`); outside a bisect they have no value.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import replace

from iolab.plan.model import WorkloadSpec

# `${NAME}` is fio's environment-variable syntax: not ours, left alone.
_TOKEN = re.compile(r"\{\{|\}\}|(?<!\$)\{([A-Za-z_][A-Za-z0-9_]*)\}")
_LAB_NAME = re.compile(r"(mnt|dev)(\d*)|mnts|workdir\Z")
# filled per commit by `iolab bisect`
COMMIT_NAMES = ("src", "rev")


def is_lab_placeholder(name: str) -> bool:
    """{mnt}, {mnt3}, {mnts}, {dev}, {dev0}, {workdir}: filled by the lab, not the plan; {src} and
    {rev}: filled by `iolab bisect` per commit."""
    return _LAB_NAME.fullmatch(name) is not None or name in COMMIT_NAMES


def uses_commit(text: str) -> bool:
    """Whether `text` names {src} or {rev}."""
    return any(name in COMMIT_NAMES for name in names_in(text))


def fill_commit(text: str, src: str, rev: str) -> str:
    """Bisect pass: fill {src} and {rev}; everything else (lab names, escapes) stays."""
    values = {"src": src, "rev": rev}

    def one(m: re.Match[str]) -> str:
        name = m.group(1)
        return values[name] if name in values else m.group(0)

    return _TOKEN.sub(one, text)


def names_in(text: str) -> list[str]:
    """Every placeholder name in `text`, in order (escapes skipped)."""
    return [m.group(1) for m in _TOKEN.finditer(text) if m.group(1)]


def device_index(name: str) -> int | None:
    """`dev3`/`mnt3` → 3, `dev`/`mnt` → 0, anything else → None."""
    m = re.fullmatch(r"(?:mnt|dev)(\d*)", name)
    if m is None:
        return None
    return int(m.group(1) or 0)


def substitute(text: str, values: Mapping[str, str], used: set[str] | None = None) -> str:
    """Plan pass: replace names in `values`; keep lab names, escapes and unknown names as-is.

    Names replaced are added to `used` when given.
    """

    def one(m: re.Match[str]) -> str:
        name = m.group(1)
        if name and name in values and not is_lab_placeholder(name):
            if used is not None:
                used.add(name)
            return values[name]
        return m.group(0)

    return _TOKEN.sub(one, text)


def render_text(text: str, mounts: Sequence[str], devices: Sequence[str], workdir: str) -> str:
    """Lab pass: fill {mnt*}/{mnts}/{dev*}/{workdir} and turn `{{`/`}}` into braces.

    Raises KeyError naming a placeholder that has no value (the plan layer has already
    checked names and indexes, so this means the lab passed too few mounts/devices).
    """

    def one(m: re.Match[str]) -> str:
        token = m.group(0)
        if token in ("{{", "}}"):
            return token[0]
        name = m.group(1)
        if name == "workdir":
            return workdir
        if name == "mnts" and mounts:
            return ":".join(mounts)  # fio's directory list (`:` separated)
        index = device_index(name)
        if index is not None:
            pool = mounts if name.startswith("mnt") else devices
            if index < len(pool):
                return pool[index]
        raise KeyError(name)

    return _TOKEN.sub(one, text)


def render_workload(
    workload: WorkloadSpec, mounts: Sequence[str], devices: Sequence[str], workdir: str
) -> WorkloadSpec:
    """The workload with every lab placeholder filled, ready to execute."""
    if workload.fio_file is not None:  # a job file inside the commit's tree: bisect only
        raise KeyError("src")
    text = workload.fio_text
    return replace(
        workload,
        fio_text=None if text is None else render_text(text, mounts, devices, workdir),
        argv=tuple(render_text(a, mounts, devices, workdir) for a in workload.argv),
    )
