"""Stacked targets: does this kernel have what a target needs, and building one (journaled).

`support_problem(spec)` says what the kernel lacks for an md, multipath or null_blk target —
asked in preflight, before a run or a store exists, so a plan for a stack the machine cannot
build is refused in one line (RefusedError, exit 3) and nothing is touched.  `build` makes the
members (loop images iolab creates, or designated devices that pass iolab.lab.safety), then the
array, map or null_blk devices; every step is journaled before it happens, and the undo of
each only ever touches what iolab made (see iolab.lab.md, .multipath, .nullblk).
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

from iolab.errors import LabError, RefusedError
from iolab.lab import md, modules, multipath, nullblk, target
from iolab.lab.journal import Journal
from iolab.plan.model import TargetSpec

PROC_MDSTAT = Path("/proc/mdstat")
DM_CONTROL = Path("/dev/mapper/control")


def describe(spec: TargetSpec) -> str:
    if spec.md is not None:
        return f"md RAID{spec.md.level} over {spec.members} members"
    if spec.multipath is not None:
        if spec.count > 1:
            return f"{spec.count} dm-multipath maps over {spec.members} paths each"
        return f"dm-multipath over {spec.members} paths"
    if spec.null_blk is not None:
        return "null_blk"
    return spec.kind


def _personalities() -> set[str]:
    """md personalities the kernel has registered ([raid0] [raid6] [raid5] ...)."""
    try:
        first = PROC_MDSTAT.read_text().splitlines()[0]
    except (OSError, IndexError):
        return set()
    return {word.strip("[]") for word in first.split(":", 1)[-1].split()}


def _md_problem(level: int) -> str | None:
    if not PROC_MDSTAT.exists():
        why = modules.missing("md_mod")
        if why:
            return f"no md driver ({PROC_MDSTAT} is missing; {why})"
    module = md.PERSONALITY[level]
    names = {0: {"raid0"}, 1: {"raid1"}, 10: {"raid10"}}.get(level, {"raid4", "raid5", "raid6"})
    if names & _personalities():
        return None
    why = modules.missing(module)
    return None if why is None else f"no md RAID{level} ({why})"


def _dm_problem(selector: str) -> str | None:
    if not DM_CONTROL.exists():
        why = modules.missing("dm_mod")
        if why:
            return f"no device-mapper ({DM_CONTROL} is missing; {why})"
    for module in ("dm_multipath", multipath.SELECTOR_MODULES[selector]):
        why = modules.missing(module)
        if why:
            return f"no dm-multipath ({why})"
    return None


def _nullb_problem() -> str | None:
    why = modules.missing("null_blk")
    if why:
        return f"no null_blk ({why})"
    if not nullblk.CONFIGFS.is_dir() and modules.missing("configfs"):
        return f"no configfs ({nullblk.CONFIGFS} does not exist): null_blk is set up through it"
    return None


def support_problem(spec: TargetSpec) -> str | None:
    """What this kernel lacks for `spec` (None: it has everything, or needs nothing)."""
    if spec.md is not None:
        return _md_problem(spec.md.level)
    if spec.multipath is not None:
        return _dm_problem(spec.multipath.selector)
    if spec.null_blk is not None:
        return _nullb_problem()
    return None


def check_support(spec: TargetSpec) -> None:
    why = support_problem(spec)
    if why is not None:
        raise RefusedError(f"refusing target {describe(spec)}: this kernel has {why}")


def tools(spec: TargetSpec) -> set[str]:
    """Programs building `spec` runs (checked in preflight, after the kernel)."""
    if spec.md is not None:
        return {"mdadm", "losetup"} if not spec.devices else {"mdadm"}
    if spec.multipath is not None:
        return {"dmsetup", "losetup"}
    return set()


def label(run_id: int, n: int) -> str:
    """The name of an array, map or null_blk device iolab makes: whose it is, at a glance."""
    return f"iolab-{run_id}-{os.getpid()}-{n}"


def build(
    journal: Journal, spec: TargetSpec, run_id: int, first: int, *, destroy_data: bool = False
) -> target.Target:
    check_support(spec)
    if spec.md is not None:
        return _build_md(journal, spec, run_id, first, destroy_data)
    if spec.multipath is not None:
        return _build_multipath(journal, spec, run_id, first)
    if spec.null_blk is not None:
        return _build_null_blk(journal, spec, run_id, first)
    raise LabError(f"not a stacked target: {spec.kind}")


def _members(
    journal: Journal, spec: TargetSpec, run_id: int, first: int, destroy_data: bool
) -> list[target.Device]:
    if spec.devices:
        made = target.designated(list(spec.devices), destroy_data=destroy_data)
        return made.devices
    made = target.create_loop_images(
        journal,
        run_id,
        spec.members,
        spec.size_bytes,
        spec.backing,
        Path(spec.directory) if spec.directory else None,
        first=first,
    )
    return made.devices


def _build_md(
    journal: Journal, spec: TargetSpec, run_id: int, first: int, destroy_data: bool
) -> target.Target:
    assert spec.md is not None
    level = spec.md.level
    if not PROC_MDSTAT.exists():
        modules.ensure(journal, "md_mod")
    modules.ensure(journal, md.PERSONALITY[level])
    members = _members(journal, spec, run_id, first, destroy_data)
    name = label(run_id, first)
    array = md.create(
        journal,
        name,
        level,
        [m.path for m in members],
        chunk_bytes=spec.md.chunk_bytes,
        assume_clean=spec.md.resync == "assume-clean",
    )
    waited = md.wait_resync(array) if spec.md.resync == "wait" else None
    info: dict[str, Any] = {
        "kind": "md",
        "array": array.name,
        "label": array.label,
        "uuid": array.uuid,
        "level": level,
        "chunk_kb": int(md.read_attr(array, "chunk_size") or 0) // 1024,
        "members": [m.name for m in members],
        "member_images": [m.image for m in members if m.image],
        "resync": spec.md.resync,
        "mdstat_after_create": md.mdstat(),
    }
    if waited is not None:
        info["resync_waited_s"] = round(waited, 2)
    return target.Target(
        devices=[target.Device(array.path, array.name)],
        created=True,
        members=members,
        arrays=[array.name],
        stack=info,
    )


def _build_multipath(journal: Journal, spec: TargetSpec, run_id: int, first: int) -> target.Target:
    """`spec.count` maps, each over `paths` loop devices of its own image: map n takes the
    numbers first + n * (paths + 1) onward, as the runner counts a target's devices."""
    assert spec.multipath is not None
    if not DM_CONTROL.exists():
        modules.ensure(journal, "dm_mod")
    modules.ensure(journal, "dm_multipath")
    modules.ensure(journal, multipath.SELECTOR_MODULES[spec.multipath.selector])
    made = target.Target(created=True)
    built = []
    for n in range(spec.count):
        start = first + n * (spec.multipath.paths + 1)
        one = _one_map(journal, spec, run_id, start)
        made.devices.extend(one.devices)
        made.members.extend(one.members)
        made.maps.extend(one.maps)
        built.append(one.stack)
    if spec.count == 1:
        made.stack = built[0]
    else:
        made.stack = {"kind": "multipath", "selector": spec.multipath.selector, "maps": built}
    return made


def _one_map(journal: Journal, spec: TargetSpec, run_id: int, first: int) -> target.Target:
    assert spec.multipath is not None
    paths = target.create_loop_paths(
        journal,
        run_id,
        spec.multipath.paths,
        spec.size_bytes,
        spec.backing,
        Path(spec.directory) if spec.directory else None,
        first=first,
    )
    name = label(run_id, first)
    made = multipath.create(journal, name, [p.path for p in paths.devices], spec.multipath.selector)
    node = f"/dev/{made.kernel}"
    for _ in range(50):
        if os.path.exists(node):
            break
        time.sleep(0.1)
    else:
        raise LabError(f"dm map {name} is created, but {node} did not appear")
    info = {
        "kind": "multipath",
        "map": made.name,
        "uuid": made.uuid,
        "device": made.kernel,
        "selector": spec.multipath.selector,
        "paths": [p.name for p in paths.devices],
        "path_devnos": list(made.paths),
        "image": paths.devices[0].image,
        "table": multipath.table(
            multipath.sectors(paths.devices[0].path), spec.multipath.selector, list(made.paths)
        ),
    }
    return target.Target(
        devices=[target.Device(node, made.kernel)],
        created=True,
        members=paths.devices,
        maps=[made.name],
        stack=info,
    )


def _build_null_blk(journal: Journal, spec: TargetSpec, run_id: int, first: int) -> target.Target:
    assert spec.null_blk is not None
    modules.ensure(journal, "null_blk", "nr_devices=0")
    nullblk.ensure_configfs(journal)
    devices = []
    for n in range(spec.count):
        made = nullblk.create(journal, label(run_id, first + n), spec.null_blk, spec.size_bytes)
        devices.append(target.Device(made.path, made.name))
    info = {
        "kind": "null_blk",
        "devices": [d.name for d in devices],
        "attributes": dict(nullblk.attributes(spec.null_blk, spec.size_bytes)),
    }
    return target.Target(devices=devices, created=True, stack=info)
