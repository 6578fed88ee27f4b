"""Targets iolab builds as block stacks: md arrays, dm-multipath maps and null_blk devices.

`raid:` is the LKP spelling of a target over N members: `raid: jbod` is N loop images with a
filesystem each (the loop target with `count: N`, {mnt0}..{mntN-1}, {mnts} for all of them),
`raid: raid0|raid1|raid4|raid5|raid6|raid10` one md array over them (`kind: md` with that
level).  A matrix dimension `raid:` switches between them, so the array's own keys (`chunk`,
`resync`) are accepted — and unused — where there is no array or no redundancy.

Everything here is shape and range checking; whether the kernel has md, dm-multipath or
null_blk is the lab's question (iolab.lab.stack.support), asked before a run exists.
"""

from __future__ import annotations

from typing import Literal, cast

from iolab.plan.model import (
    MdLevel,
    MdSpec,
    MultipathSpec,
    NullBlkSpec,
    PathFault,
    PathSelector,
    TargetSpec,
)
from iolab.plan.nodes import Node
from iolab.plan.values import read_bool, read_choice, read_duration, read_int, read_size

RAID_NAMES = ("jbod", "raid0", "raid1", "raid4", "raid5", "raid6", "raid10")
MD_LEVELS: tuple[int, ...] = (0, 1, 4, 5, 6, 10)
# fewest members mdadm accepts for each level
MIN_MEMBERS = {0: 2, 1: 2, 4: 3, 5: 3, 6: 4, 10: 2}
REDUNDANT = frozenset({1, 4, 5, 6, 10})  # levels with an initial resync
SELECTORS = ("round-robin", "queue-length", "service-time")
MAX_PATHS = 16
NULLB_BLOCKSIZES = (512, 1024, 2048, 4096)
IRQMODES = ("none", "softirq", "timer")

MD_KEYS = ("level", "members", "size", "backing", "directory", "devices", "chunk", "resync")
MULTIPATH_KEYS = ("count", "paths", "size", "backing", "directory", "selector", "faults")
MAX_MAPS = 8
NULLB_KEYS = (
    "count",
    "size",
    "queue_mode",
    "blocksize",
    "memory_backed",
    "irqmode",
    "completion_nsec",
    "submit_queues",
    "hw_queue_depth",
)


def level_of(node: Node) -> MdLevel:
    """`level: 5`, `level: raid5` → 5."""
    value = node.value
    if isinstance(value, str) and value.startswith("raid") and value[4:].isdigit():
        value = int(value[4:])
    if isinstance(value, bool) or not isinstance(value, int) or value not in MD_LEVELS:
        node.fail(f"must be an md level ({', '.join(map(str, MD_LEVELS))}), got {node.describe()}")
    return cast(MdLevel, value)


def read_md(node: Node, entries: dict[str, Node], level: MdLevel, members_node: Node | None,
            base: TargetSpec) -> tuple[TargetSpec, Node]:  # fmt: skip
    """An md target: `base` carries the members' loop settings (size, backing, directory) or
    designated member devices; returns the spec and the node to blame for a device count."""
    devices = base.devices
    if devices and members_node is not None:
        members_node.fail("give members: (loop images iolab makes) or devices:, not both")
    if devices:
        members = len(devices)
        count_node = entries["devices"]
    else:
        if members_node is None:
            node.fail("an md target needs members: N (loop images) or devices: [/dev/...]")
        members = read_int(members_node, 1)
        count_node = members_node
    if members < MIN_MEMBERS[level]:
        count_node.fail(f"RAID{level} needs at least {MIN_MEMBERS[level]} members, got {members}")
    if members > 64:
        count_node.fail(f"at most 64 members, got {members}")
    chunk = 0
    chunk_node = entries.get("chunk")
    if chunk_node is not None and chunk_node.value is not None:
        chunk = read_size(chunk_node)
        if chunk < 4096 or chunk & (chunk - 1):
            chunk_node.fail(f"a chunk is a power of two of at least 4k, got {chunk_node.value!r}")
    resync_node = entries.get("resync")
    resync = "assume-clean"
    if resync_node is not None and resync_node.value is not None:
        resync = read_choice(resync_node, ("wait", "assume-clean"))
    elif level in REDUNDANT:
        node.fail(
            f"RAID{level} has an initial resync: say resync: wait (measure after it) "
            "or resync: assume-clean (skip it, mdadm --assume-clean)"
        )
    if base.size_bytes and base.size_bytes < (16 << 20):
        entries["size"].fail("a member image needs at least 16M")
    # a level without redundancy has no resync to wait for (the key is accepted for a matrix)
    waits = resync == "wait" and level in REDUNDANT
    md = MdSpec(level, chunk, "wait" if waits else "assume-clean")
    spec = TargetSpec(
        "md",
        1,
        size_bytes=0 if devices else base.size_bytes,
        backing=base.backing,
        directory=base.directory,
        devices=devices,
        members=members,
        md=md,
    )
    return spec, count_node


def read_multipath(
    node: Node, entries: dict[str, Node], base: TargetSpec
) -> tuple[TargetSpec, Node | None]:
    """`count: N` maps (default 1), each over its own `paths` loop devices of its own image:
    {dev0}..{devN-1}, as a thread's two multipath devices were two maps."""
    count_node = entries.get("count")
    count = 1 if count_node is None else read_int(count_node, 1)
    if count_node is not None and count > MAX_MAPS:
        count_node.fail(f"at most {MAX_MAPS} multipath maps, got {count}")
    paths_node = entries.get("paths")
    if paths_node is None or paths_node.value is None:
        node.fail("a multipath target needs paths: N (2 or more)")
    paths = read_int(paths_node, 2)
    if paths > MAX_PATHS:
        paths_node.fail(f"at most {MAX_PATHS} paths, got {paths}")
    selector = "round-robin"
    sel_node = entries.get("selector")
    if sel_node is not None and sel_node.value is not None:
        selector = read_choice(sel_node, SELECTORS)
    faults: tuple[PathFault, ...] = ()
    faults_node = entries.get("faults")
    if faults_node is not None and faults_node.value is not None:
        if count > 1:
            faults_node.fail(
                f"faults: fail a path of one map; this target has {count} (count: 1 for faults)"
            )
        faults = read_faults(faults_node, paths)
    spec = MultipathSpec(paths, cast(PathSelector, selector), faults)
    target = TargetSpec(
        "multipath",
        count,
        size_bytes=base.size_bytes,
        backing=base.backing,
        directory=base.directory,
        members=paths,
        multipath=spec,
    )
    return target, count_node


def read_faults(node: Node, paths: int) -> tuple[PathFault, ...]:
    """`[{at: 2s, fail: 1}, {at: 4s, restore: 1}]`: one path failed or reinstated at a time,
    never the last working one (the map has no queue_if_no_path: I/O would fail)."""
    if not node.is_list or not node.elements():
        node.fail(f"must be a list like [{{at: 2s, fail: 1}}], got {node.describe()}")
    out: list[PathFault] = []
    for item in node.elements():
        if not item.is_map:
            item.fail(f"must be a mapping like {{at: 2s, fail: 1}}, got {item.describe()}")
        fentries = item.items()
        for key, value in fentries.items():
            if key not in ("at", "fail", "restore"):
                value.fail(f"unknown key {key!r}; allowed: at, fail, restore", at_key=True)
        at_node = fentries.get("at")
        if at_node is None:
            item.fail("needs at: (seconds after the workload starts)")
        actions = [k for k in ("fail", "restore") if k in fentries]
        if len(actions) != 1:
            item.fail("needs exactly one of fail: PATH or restore: PATH")
        path_node = fentries[actions[0]]
        path = read_int(path_node, 0)
        if path >= paths:
            path_node.fail(f"there are {paths} paths (0..{paths - 1}), got {path}")
        action: Literal["fail", "restore"] = "fail" if actions[0] == "fail" else "restore"
        out.append(PathFault(read_duration(at_node), action, path))
    failed: set[int] = set()
    ordered = sorted(zip(out, node.elements(), strict=True), key=lambda pair: pair[0].at_s)
    for fault, item in ordered:
        if fault.action == "fail":
            if fault.path in failed:
                item.fail(f"path {fault.path} is failed already at {fault.at_s:g}s")
            if len(failed) + 1 >= paths:
                item.fail(f"failing path {fault.path} at {fault.at_s:g}s would leave no path")
            failed.add(fault.path)
        else:
            if fault.path not in failed:
                item.fail(f"path {fault.path} is not failed at {fault.at_s:g}s")
            failed.discard(fault.path)
    return tuple(fault for fault, _ in ordered)


def read_null_blk(node: Node, entries: dict[str, Node]) -> tuple[TargetSpec, Node | None]:
    count_node = entries.get("count")
    count = 1 if count_node is None or count_node.value is None else read_int(count_node, 1)
    if count > 16:
        (count_node or node).fail(f"at most 16 null_blk devices, got {count}")
    size = 1 << 30
    size_node = entries.get("size")
    if size_node is not None and size_node.value is not None:
        size = read_size(size_node)
        if size < (1 << 20) or size % (1 << 20):
            size_node.fail(f"a null_blk size is a whole number of MiB, got {size_node.value!r}")
    spec = NullBlkSpec()
    values: dict[str, object] = {}
    mode_node = entries.get("queue_mode")
    if mode_node is not None:
        values["queue_mode"] = read_choice(mode_node, ("bio", "mq"))
    bs_node = entries.get("blocksize")
    if bs_node is not None:
        bs = read_int(bs_node, 512)
        if bs not in NULLB_BLOCKSIZES:
            bs_node.fail(f"must be one of {', '.join(map(str, NULLB_BLOCKSIZES))}, got {bs}")
        values["blocksize"] = bs
    mem_node = entries.get("memory_backed")
    if mem_node is not None:
        values["memory_backed"] = read_bool(mem_node)
    irq_node = entries.get("irqmode")
    irqmode: str = spec.irqmode
    if irq_node is not None:
        irqmode = read_choice(irq_node, IRQMODES)
        values["irqmode"] = irqmode
    nsec_node = entries.get("completion_nsec")
    if nsec_node is not None:
        if irqmode != "timer":
            nsec_node.fail("completion_nsec is the timer's delay: it needs irqmode: timer")
        values["completion_nsec"] = read_int(nsec_node, 0)
    for key, low, high in (("submit_queues", 1, 256), ("hw_queue_depth", 1, 4096)):
        knode = entries.get(key)
        if knode is not None:
            value = read_int(knode, low)
            if value > high:
                knode.fail(f"at most {high}, got {value}")
            values[key] = value
    nullb = NullBlkSpec(**values)  # type: ignore[arg-type]
    if nullb.memory_backed and size * count > (64 << 30):
        (size_node or node).fail("memory-backed null_blk devices above 64G in all: not a plan")
    return TargetSpec("null_blk", count, size_bytes=size, null_blk=nullb), count_node


def check_filesystem(target: TargetSpec, node: Node) -> None:
    """A filesystem on null_blk needs its writes kept: memory_backed."""
    nullb = target.null_blk
    if nullb is not None and not nullb.memory_backed:
        node.fail(
            "a filesystem on null_blk needs memory_backed: true (otherwise writes are "
            "dropped and mkfs's work is gone); or use filesystem: none"
        )
