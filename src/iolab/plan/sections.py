"""One reader per configuration section: a merged Node in, a resolved spec out.

Every reader checks its keys (unknown ones are errors with a "did you mean") and its values,
and raises PlanError at the line the offending value came from — the variant, matrix or
profile line when the value was merged in from there.
"""

from __future__ import annotations

import os
import posixpath
import re
import shlex
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import cast

from iolab.plan import confine, placeholders, stacks
from iolab.plan.fiojob import apply_overrides
from iolab.plan.model import (
    KNOWN_MONITORS,
    FilesystemSpec,
    FsType,
    MdLevel,
    MetricRule,
    PrepareSpec,
    TargetSpec,
    WorkloadSpec,
)
from iolab.plan.nodes import Node, did_you_mean
from iolab.plan.values import (
    read_bool,
    read_choice,
    read_duration,
    read_int,
    read_size,
    read_str,
    read_str_list,
)

FS_TYPES = ("ext4", "xfs", "btrfs")
SCHEDULERS = ("none", "mq-deadline", "bfq", "kyber")
# /sys/block/<dev>/queue attributes a plan may set; `iosched.NAME` reaches queue/iosched/NAME.
QUEUE_KEYS = (
    "scheduler",
    "nr_requests",
    "read_ahead_kb",
    "max_sectors_kb",
    "rq_affinity",
    "nomerges",
    "rotational",
    "add_random",
    "iostats",
    "wbt_lat_usec",
    "io_poll",
    "io_poll_delay",
    "write_cache",
)
WORKLOAD_KINDS = ("fio", "fio_file", "xfs_io", "dd", "command")
DEFAULT_LOOP_SIZE = 1 << 30
MAX_LOOP_SIZE = 16 << 40
MAX_DEVICES = 64
DEFAULT_TIMEOUT_S = 600.0
_SYSCTL_NAME = re.compile(r"[a-z0-9_]+(\.[A-Za-z0-9_-]+)+")
_PROC_SYS = Path("/proc/sys")


def check_keys(node: Node, allowed: tuple[str, ...], what: str) -> dict[str, Node]:
    """The mapping's entries; an unknown key is an error at its own line."""
    if not node.is_map:
        node.fail(f"must be {what}, got {node.describe()}")
    entries = node.items()
    for key, value in entries.items():
        if key not in allowed:
            value.fail(
                f"unknown key {key!r}{did_you_mean(key, allowed)}; allowed: {', '.join(allowed)}",
                at_key=True,
            )
    return entries


def present(entries: Mapping[str, Node], key: str) -> Node | None:
    """The entry unless it is missing or null."""
    node = entries.get(key)
    return None if node is None or node.value is None else node


# --- target -------------------------------------------------------------------------------


@dataclass(frozen=True)
class TargetDraft:
    """The target before the workload says how many devices it needs."""

    spec: TargetSpec
    count_node: Node | None  # where `count` / `devices` was written (for count errors)
    explicit: bool  # count given (or implied by `devices`)


TARGET_KINDS = ("loop", "device", "md", "multipath", "null_blk")
LOOP_KEYS = ("size", "backing", "directory", "count")
KIND_KEYS: dict[str, tuple[str, ...]] = {
    "loop": LOOP_KEYS,
    "device": ("devices",),
    "md": stacks.MD_KEYS,
    "multipath": stacks.MULTIPATH_KEYS,
    "null_blk": stacks.NULLB_KEYS,
}
# raid: jbod is loop images (or designated devices) with a filesystem each; the array's keys
# are accepted there so that one target can carry a matrix dimension over raid levels
JBOD_KEYS = ("members", "size", "backing", "directory", "devices", "chunk", "resync")
TARGET_KEYS = tuple(dict.fromkeys(("kind", "raid", *(k for ks in KIND_KEYS.values() for k in ks))))


def read_target(node: Node | None) -> TargetDraft:
    if node is None or node.value is None:
        return TargetDraft(TargetSpec("loop", 1, DEFAULT_LOOP_SIZE), None, False)
    entries = check_keys(
        node, TARGET_KEYS, "a mapping (kind: loop|device|md|multipath|null_blk, or raid:)"
    )
    entries = {k: v for k, v in entries.items() if v.value is not None}
    kind_node, raid_node = entries.get("kind"), entries.get("raid")
    level: MdLevel | None = None
    if raid_node is not None:
        if kind_node is not None:
            raid_node.fail(
                "raid: names the kind itself (jbod: loop images, raidN: md)", at_key=True
            )
        raid = read_choice(raid_node, stacks.RAID_NAMES)
        if raid == "jbod":
            return _jbod(node, entries)
        kind = "md"
        level = stacks.level_of(raid_node)
        if "level" in entries:
            entries["level"].fail("raid: gives the level already", at_key=True)
    elif kind_node is not None:
        kind = read_choice(kind_node, TARGET_KINDS)
    else:
        kind = "device" if "devices" in entries else "loop"
    allowed = KIND_KEYS[kind]
    for key, value in entries.items():
        if key not in ("kind", "raid", *allowed):
            value.fail(
                f"{key!r} does not apply to kind: {kind}; its keys: {', '.join(allowed)}",
                at_key=True,
            )
    if kind == "device":
        return _devices(node, entries)
    if kind == "null_blk":
        spec, count_node = stacks.read_null_blk(node, entries)
        return TargetDraft(spec, count_node, count_node is not None)
    base = _loop_base(entries, 1)
    if kind == "md":
        if level is None:
            level_node = entries.get("level")
            if level_node is None:
                node.fail("kind: md needs level: 0, 1, 4, 5, 6 or 10 (or write raid: raid5)")
            level = stacks.level_of(level_node)
        devices = _device_list(entries["devices"]) if "devices" in entries else ()
        base = replace(base, devices=devices)
        spec, count_node = stacks.read_md(node, entries, level, entries.get("members"), base)
        return TargetDraft(spec, count_node, True)
    if kind == "multipath":
        spec, count_node = stacks.read_multipath(node, entries, base)
        return TargetDraft(spec, count_node or node, True)
    count_node = entries.get("count")
    count = 1 if count_node is None else read_int(count_node, 1)
    if count_node is not None and count > MAX_DEVICES:
        count_node.fail(f"at most {MAX_DEVICES} loop images, got {count}")
    return TargetDraft(replace(base, count=count), count_node, count_node is not None)


def _jbod(node: Node, entries: dict[str, Node]) -> TargetDraft:
    """raid: jbod — N loop images (members: N) or the designated devices, a filesystem each."""
    for key, value in entries.items():
        if key not in ("raid", *JBOD_KEYS):
            value.fail(f"{key!r} does not apply to raid: jbod; its keys: members, size, "
                       "backing, directory, devices", at_key=True)  # fmt: skip
    if "devices" in entries:
        if "members" in entries:
            entries["members"].fail("give members: or devices:, not both", at_key=True)
        return _devices(node, {"devices": entries["devices"]})
    members_node = entries.get("members")
    if members_node is None:
        node.fail("raid: jbod needs members: N (loop images, a filesystem on each)")
    count = read_int(members_node, 1)
    if count > MAX_DEVICES:
        members_node.fail(f"at most {MAX_DEVICES} loop images, got {count}")
    return TargetDraft(replace(_loop_base(entries, 1), count=count), members_node, True)


def _device_list(dev_node: Node) -> tuple[str, ...]:
    devices = read_str_list(dev_node, "a list of /dev paths")
    for item, path in zip(dev_node.elements(), devices, strict=True):
        # {dev:NAME}: a fleet host's device of that name (its host.toml [devices])
        if not path.startswith("/dev/") and not re.fullmatch(r"\{dev:[A-Za-z0-9][\w.-]*\}", path):
            item.fail(f"must be a block device path under /dev/ or {{dev:NAME}}, got {path!r}")
    if not devices or len(set(devices)) != len(devices):
        dev_node.fail("must list one or more distinct devices")
    return devices


def _devices(node: Node, entries: dict[str, Node]) -> TargetDraft:
    dev_node = entries.get("devices")
    if dev_node is None:
        node.fail("kind: device needs devices: [/dev/...]")
    devices = _device_list(dev_node)
    return TargetDraft(TargetSpec("device", len(devices), devices=devices), dev_node, True)


def _loop_base(entries: dict[str, Node], count: int) -> TargetSpec:
    """Loop images' settings (of the target itself, or of an array's members / a map's paths)."""
    size_node = entries.get("size")
    size = DEFAULT_LOOP_SIZE if size_node is None else read_size(size_node)
    if size_node is not None and size < (16 << 20):
        size_node.fail(f"a loop image needs at least 16M, got {size_node.value!r}")
    if size_node is not None and size > MAX_LOOP_SIZE:
        size_node.fail(f"a loop image is at most 16T, got {size_node.value!r}")
    backing_node = entries.get("backing")
    backing = "ram" if backing_node is None else read_choice(backing_node, ("ram", "disk"))
    dir_node = entries.get("directory")
    directory = None
    if dir_node is not None:
        if backing != "disk":
            dir_node.fail("only with backing: disk (ram images live in /dev/shm)", at_key=True)
        directory = read_str(dir_node, "a directory path")
        if not directory.startswith("/"):
            dir_node.fail(f"must be an absolute path, got {directory!r}")
        real = os.path.realpath(directory)
        if system_dir(real):
            dir_node.refuse(
                f"{real} is a system directory; loop images go in a directory of their own"
            )
    return TargetSpec(
        "loop",
        count,
        size_bytes=size,
        backing="disk" if backing == "disk" else "ram",
        directory=directory,
    )


# --- filesystem -----------------------------------------------------------------------------


def read_filesystem(node: Node) -> FilesystemSpec | None:
    if node.value is None or node.value == "none":
        return None
    entries = check_keys(
        node, ("type", "mkfs_options", "mount_options"), "none, ext4, xfs, btrfs or a mapping"
    )
    type_node = present(entries, "type")
    if type_node is None:
        node.fail("needs type: ext4, xfs or btrfs (or write filesystem: none)")
    fs_type = read_choice(type_node, FS_TYPES)
    mkfs: tuple[str, ...] = ()
    mkfs_node = present(entries, "mkfs_options")
    if mkfs_node is not None:
        mkfs = _words(mkfs_node)
    mount: tuple[str, ...] = ()
    mount_node = present(entries, "mount_options")
    if mount_node is not None:
        if mount_node.is_list:
            given = ",".join(read_str_list(mount_node))
        else:
            given = read_str(mount_node, "mount options like noatime,data=ordered")
        if any(c.isspace() for c in given):
            mount_node.fail(f"mount options are comma-separated without spaces, got {given!r}")
        mount = tuple(o for o in given.split(",") if o)
    return FilesystemSpec(cast(FsType, fs_type), mkfs, mount)


def _words(node: Node) -> tuple[str, ...]:
    """A list of words, or one string split like a shell would (no shell is ever run)."""
    if node.is_list:
        return read_str_list(node)
    text = read_str(node, "a list of arguments or one string")
    try:
        return tuple(shlex.split(text))
    except ValueError as e:
        node.fail(f"cannot split {text!r} into words: {e}")


# --- knobs ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Knobs:
    """A case's knobs, values as the lab writes them (sizes in bytes)."""

    sysctls: dict[str, str]
    queue: dict[str, str]  # the top device(s): what {dev} names
    member_queue: dict[str, str]  # every md member / multipath path
    md: dict[str, str]  # /sys/block/mdX/md/<name>


# /sys/block/mdX/md attributes a plan may set, and the levels that have them
MD_KNOBS: dict[str, frozenset[int]] = {
    "stripe_cache_size": frozenset({4, 5, 6}),
    "group_thread_cnt": frozenset({4, 5, 6}),
    "preread_bypass_threshold": frozenset({4, 5, 6}),
    "skip_copy": frozenset({4, 5, 6}),
    "sync_speed_max": frozenset(stacks.MD_LEVELS),
    "sync_speed_min": frozenset(stacks.MD_LEVELS),
    "safe_mode_delay": frozenset(stacks.MD_LEVELS),
}
# what the kernel accepts (drivers/md/raid5.c, md.c): stripe_cache_size 17..32768
_MD_RANGES = {"stripe_cache_size": (17, 32768), "group_thread_cnt": (0, 8192)}
# queue settings a bio-based device (an md array, null_blk queue_mode: bio) does not have
_RQ_ONLY = ("scheduler", "nr_requests")


def read_knobs(node: Node | None, target: TargetSpec | None = None) -> Knobs:
    """The knobs; `target` (when given) is what they are checked against: member_queue needs
    members, md knobs an array of a level that has them, a scheduler a request queue."""
    if node is None or node.value is None:
        return Knobs({}, {}, {}, {})
    entries = check_keys(
        node, ("sysctl", "queue", "member_queue", "md"), "a mapping with sysctl: and queue:"
    )
    sysctls: dict[str, str] = {}
    sys_node = present(entries, "sysctl")
    if sys_node is not None:
        for name, value in check_keys(sys_node, tuple(sys_node.items()), "a mapping").items():
            sysctls[name] = _sysctl_value(name, value)
    queues: dict[str, dict[str, str]] = {"queue": {}, "member_queue": {}}
    for group, out in queues.items():
        queue_node = present(entries, group)
        if queue_node is None:
            continue
        items = check_keys(queue_node, tuple(queue_node.items()), "a mapping")
        for name, value in items.items():
            out[name] = _queue_value(name, value)
            if target is not None:
                _check_queue_target(group, name, value, target)
    md: dict[str, str] = {}
    md_node = present(entries, "md")
    if md_node is not None:
        for name, value in check_keys(md_node, tuple(MD_KNOBS), "a mapping").items():
            md[name] = _md_value(name, value, target)
    if target is not None and not target.stacked:
        # loop images and designated devices are their own members (a raid: jbod cell of a
        # matrix whose other cells are arrays): both groups land on the same queues
        for name, wanted in queues["member_queue"].items():
            if queues["queue"].get(name, wanted) != wanted:
                entries["member_queue"].items()[name].fail(
                    f"a {target.kind} target's devices are its members: queue.{name} "
                    f"says {queues['queue'][name]}",
                    at_key=True,
                )
    return Knobs(sysctls, queues["queue"], queues["member_queue"], md)


def _check_queue_target(group: str, name: str, node: Node, target: TargetSpec) -> None:
    if group == "member_queue" and target.kind == "null_blk":
        node.fail("null_blk devices have no members: use queue:", at_key=True)
    if group != "queue":
        return
    bio = target.kind == "md" or (
        target.null_blk is not None and target.null_blk.queue_mode == "bio"
    )
    base = name.split(".")[0]
    if (
        bio
        and (name in _RQ_ONLY or base == "iosched")
        and not (name == "scheduler" and node.value == "none")
    ):
        what = "an md array" if target.kind == "md" else "null_blk with queue_mode: bio"
        hint = "; set it on the members (member_queue:)" if target.kind == "md" else ""
        node.fail(f"{what} is bio-based: it has no I/O scheduler or request queue{hint}",
                  at_key=True)  # fmt: skip


def _md_value(name: str, node: Node, target: TargetSpec | None) -> str:
    if target is not None:
        if target.md is None:
            node.fail(f"md knobs need an md target (kind: md or raid: raidN), "
                      f"this one is {target.kind}", at_key=True)  # fmt: skip
        if target.md.level not in MD_KNOBS[name]:
            levels = "/".join(str(x) for x in sorted(MD_KNOBS[name]))
            node.fail(f"RAID{target.md.level} has no {name} (RAID{levels} only)", at_key=True)
    if name.startswith("sync_speed_") and node.value == "system":
        return "system"
    value = read_int(node, 0)
    low, high = _MD_RANGES.get(name, (0, 1 << 31))
    if not low <= value <= high:
        node.fail(f"{name} is {low}..{high}, got {value}")
    return str(value)


def _sysctl_value(name: str, node: Node) -> str:
    if not _SYSCTL_NAME.fullmatch(name):
        node.fail(f"{name!r} is not a sysctl name like vm.dirty_bytes", at_key=True)
    path = _PROC_SYS.joinpath(*name.split("."))
    if _PROC_SYS.is_dir() and not path.exists():
        parent = path.parent
        siblings = (
            [".".join([*name.split(".")[:-1], p.name]) for p in parent.iterdir()]
            if parent.is_dir()
            else []
        )
        node.fail(f"no sysctl {name!r} on this machine{did_you_mean(name, siblings)}", at_key=True)
    if name.endswith("_bytes"):
        return str(read_size(node, repr(name)))
    if isinstance(node.value, bool) or not node.is_scalar or node.value is None:
        node.fail(f"{name!r} must be a number or a word, got {node.describe()}")
    return str(node.value)


def _queue_value(name: str, node: Node) -> str:
    if name.startswith("iosched."):
        if not re.fullmatch(r"iosched\.[a-z0-9_]+", name):
            node.fail(f"{name!r} is not a scheduler attribute like iosched.fifo_batch", at_key=True)
    elif name not in QUEUE_KEYS:
        node.fail(
            f"unknown queue setting {name!r}{did_you_mean(name, QUEUE_KEYS)}; "
            f"allowed: {', '.join(QUEUE_KEYS)}, iosched.NAME",
            at_key=True,
        )
    if name == "scheduler":
        return read_choice(node, SCHEDULERS)
    if name.startswith("iosched."):
        return read_str(node, "a number or a word")
    if isinstance(node.value, str) and node.value.isdigit():
        return node.value
    return str(read_int(node, 0))


# --- workloads --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Context:
    """What a workload reader needs besides its node."""

    plan_dir: Path
    values: Mapping[str, str]  # vars and matrix dimensions, substituted now
    has_filesystem: bool
    used: set[str]  # names substituted so far (a matrix dimension nobody uses is an error)
    allowed: tuple[str, ...] = ()  # the plan's allow_paths (absolute, normalised)


def read_workload(
    node: Node,
    ctx: Context,
    fio_overrides: Mapping[str, str | None],
    what: str = "workload",
    overrides_node: Node | None = None,
) -> tuple[WorkloadSpec, int]:
    """(the workload, how many devices its placeholders need)."""
    if node.value is None:
        node.fail(f"{what} needs one of {', '.join(WORKLOAD_KINDS)}")
    kinds = ", ".join(WORKLOAD_KINDS)
    entries = check_keys(node, WORKLOAD_KINDS, f"a mapping with one of {kinds}")
    given = [k for k in WORKLOAD_KINDS if k in entries]
    if len(given) != 1:
        node.fail(f"needs exactly one of {kinds}, got {', '.join(given) or 'none'}")
    kind = given[0]
    body = entries[kind]
    if kind in ("fio", "fio_file"):
        options = {
            key: None if value is None else placeholders.substitute(value, ctx.values, ctx.used)
            for key, value in fio_overrides.items()
        }
    if kind == "fio_file" and _commit_path(body):
        # read per commit by `iolab bisect` (bisect.commit_arms.bind), which applies `options`
        # with apply_overrides as below; the overrides alone are confined here already
        path = placeholders.substitute(str(body.value), ctx.values, ctx.used)
        needed = _check_placeholders(body, [path], ctx)
        given = [v for v in options.values() if v is not None]
        needed = max(needed, _check_placeholders(overrides_node or body, given, ctx))
        problem = confine.fio_problem(apply_overrides("[job]\n", options), ctx.allowed)
        if problem:
            (overrides_node or body).refuse(f"the fio job leaves the sample: {problem}")
        return WorkloadSpec("fio", fio_file=path, fio_overrides=tuple(options.items())), needed
    if kind in ("fio", "fio_file"):
        text, source = _fio_text(body, kind, ctx)
        spec = WorkloadSpec("fio", fio_text=apply_overrides(text, options))
        needed = _check_placeholders(source, [spec.fio_text or ""], ctx)
        problem = confine.fio_problem(spec.fio_text or "", ctx.allowed)
        if problem:
            (overrides_node or source).refuse(f"the fio job leaves the sample: {problem}")
        return spec, needed
    if overrides_node is not None and fio_overrides:
        overrides_node.fail(f"fio option overrides need a fio workload, but it is {kind}")
    if kind == "command":
        centries = check_keys(body, ("argv", "metric"), "a mapping with argv: and metric:")
        argv_node = present(centries, "argv")
        if argv_node is None:
            body.fail("needs argv: [program, args...]")
        argv = _words(argv_node)
        if not argv:
            argv_node.fail("must name a program")
        metric_node = present(centries, "metric")
        if metric_node is None:
            body.fail("needs metric: {name, regex} to read the result from its output")
        metric = _metric_rule(metric_node)
        spec = WorkloadSpec("command", argv=_fill(argv, ctx), metric=metric)
        return spec, _check_placeholders(argv_node, list(spec.argv), ctx)
    args = _words(body)
    if not args:
        body.fail(f"needs the {kind} arguments")
    spec = WorkloadSpec("xfs_io" if kind == "xfs_io" else "dd", argv=(kind, *_fill(args, ctx)))
    needed = _check_placeholders(body, list(spec.argv), ctx)
    check = confine.xfs_io_problem if kind == "xfs_io" else confine.dd_problem
    problem = check(spec.argv, ctx.allowed)
    if problem:
        body.refuse(f"the {kind} workload leaves the sample: {problem}")
    return spec, needed


def _fill(words: tuple[str, ...], ctx: Context) -> tuple[str, ...]:
    return tuple(placeholders.substitute(w, ctx.values, ctx.used) for w in words)


def _commit_path(body: Node) -> bool:
    """A fio_file path inside the commit's tree ({src}/...): read per commit by bisect."""
    return isinstance(body.value, str) and placeholders.uses_commit(body.value)


def _fio_text(body: Node, kind: str, ctx: Context) -> tuple[str, Node]:
    if kind == "fio":
        text = read_str(body, "the fio job file text (use a | block)")
    else:
        rel = read_str(body, "a path to a fio job file")
        path = ctx.plan_dir / rel
        try:
            text = path.read_text()
        except OSError as e:
            body.fail(f"cannot read {str(path)!r}: {e.strerror}")
    text = placeholders.substitute(text, ctx.values, ctx.used)
    if not any(True for line in text.splitlines() if line.strip().startswith("[")):
        body.fail("the fio job file has no [job] section")
    return text, body


def _metric_rule(node: Node) -> MetricRule:
    entries = check_keys(node, ("name", "regex", "scale"), "a mapping with name: and regex:")
    name_node, regex_node = present(entries, "name"), present(entries, "regex")
    if name_node is None or regex_node is None:
        node.fail("needs name: (metric name, e.g. write.bw_bytes) and regex: (one group)")
    name = read_str(name_node, "a metric name")
    pattern = read_str(regex_node, "a regular expression")
    try:
        groups = re.compile(pattern).groups
    except re.error as e:
        regex_node.fail(f"not a valid regular expression: {e}")
    if groups != 1:
        regex_node.fail(f"needs exactly one (group) around the number, has {groups}")
    scale = 1.0
    scale_node = present(entries, "scale")
    if scale_node is not None:
        if isinstance(scale_node.value, bool) or not isinstance(scale_node.value, int | float):
            scale_node.fail(f"must be a number, got {scale_node.describe()}")
        scale = float(scale_node.value)
    return MetricRule(name, pattern, scale)


def _check_placeholders(node: Node, texts: list[str], ctx: Context) -> int:
    """Every placeholder left must be the lab's; returns the device count they need."""
    needed = 1
    for text in texts:
        for name in placeholders.names_in(text):
            if not placeholders.is_lab_placeholder(name):
                known = [*ctx.values, "mnt", "dev", "workdir", *placeholders.COMMIT_NAMES]
                node.fail(f"unknown placeholder {{{name}}}{did_you_mean(name, known)}")
            if name.startswith("mnt") and not ctx.has_filesystem:
                node.fail(f"{{{name}}} needs a filesystem, but this case has filesystem: none")
            index = placeholders.device_index(name)
            if index is not None:
                needed = max(needed, index + 1)
    return needed


# --- prepare, monitors, cpus ---------------------------------------------------------------


def read_prepare(
    node: Node | None, ctx: Context, workload: WorkloadSpec
) -> tuple[PrepareSpec, int]:
    """(the preparation, devices its fill/warmup placeholders need)."""
    if node is None or node.value is None:
        return PrepareSpec(), 1
    keys = ("mkfs", "drop_caches", "fstrim", "fill", "warmup", "settle")
    entries = check_keys(node, keys, f"a mapping with {', '.join(keys)}")
    needed = 1
    mkfs_node = present(entries, "mkfs")
    mkfs = "per-sample" if mkfs_node is None else read_choice(mkfs_node, ("per-sample", "per-run"))
    drop = present(entries, "drop_caches")
    trim = present(entries, "fstrim")
    fill = None
    fill_node = present(entries, "fill")
    if fill_node is not None:
        fill, n = read_workload(fill_node, ctx, {}, "prepare.fill")
        needed = max(needed, n)
    warmup = None
    warm_node = present(entries, "warmup")
    if warm_node is not None:
        if warm_node.is_map:
            warmup, n = read_workload(warm_node, ctx, {}, "prepare.warmup")
            needed = max(needed, n)
        elif (seconds := read_duration(warm_node)) > 0:  # `warmup: 0s` is no warm-up
            if workload.kind != "fio" or workload.fio_text is None:
                warm_node.fail("warm-up in seconds needs a fio workload; give a workload instead")
            text = apply_overrides(
                workload.fio_text,
                {"runtime": f"{seconds:g}s", "time_based": "", "ramp_time": None},
            )
            warmup = WorkloadSpec("fio", fio_text=text)
    settle_node = present(entries, "settle")
    spec = PrepareSpec(
        mkfs="per-run" if mkfs == "per-run" else "per-sample",
        drop_caches=True if drop is None else read_bool(drop),
        fstrim=False if trim is None else read_bool(trim),
        fill=fill,
        warmup=warmup,
        settle_s=0.0 if settle_node is None else read_duration(settle_node),
    )
    return spec, needed


def read_monitors(node: Node | None) -> tuple[str, ...]:
    if node is None or node.value is None:
        return ()
    if not node.is_list:
        node.fail(f"must be a list of monitor names, got {node.describe()}")
    names = tuple(read_choice(item, KNOWN_MONITORS) for item in node.elements())
    return tuple(dict.fromkeys(names))


def read_fio_overrides(node: Node | None) -> dict[str, str | None]:
    """`fio: {fsync: 1, direct: true, ramp_time: null}` → option → text (None: remove)."""
    if node is None or node.value is None:
        return {}
    if not node.is_map:
        node.fail(f"must be a mapping of fio options, got {node.describe()}")
    out: dict[str, str | None] = {}
    for key, value in node.items().items():
        if not re.fullmatch(r"[a-z_][a-z0-9_]*", key):
            value.fail(f"{key!r} is not a fio option name", at_key=True)
        if value.value is None:
            out[key] = None
        elif isinstance(value.value, bool):
            out[key] = "1" if value.value else "0"
        else:
            out[key] = read_str(value, "a fio option value")
    return out


# Directories of the operating system: never a place for loop images or workload files.
SYSTEM_DIRS = (
    "/", "/bin", "/boot", "/dev", "/etc", "/lib", "/lib32", "/lib64", "/libx32",
    "/proc", "/root", "/run", "/sbin", "/sys", "/usr", "/var",
)  # fmt: skip
UNDER_SYSTEM = ("/boot", "/dev", "/etc", "/proc", "/sys", "/usr", "/bin", "/sbin", "/lib")


def system_dir(path: str) -> bool:
    """One of SYSTEM_DIRS itself, or anywhere under one that belongs wholly to the system."""
    norm = posixpath.normpath(path)
    return norm in SYSTEM_DIRS or any(norm.startswith(d + "/") for d in UNDER_SYSTEM)


def read_allow_paths(node: Node | None) -> tuple[str, ...]:
    """`allow_paths: [/srv/traces]` — absolute paths a workload may name besides its own."""
    if node is None or node.value is None:
        return ()
    paths = read_str_list(node, "a list of absolute paths")
    out = []
    for item, path in zip(node.elements(), paths, strict=True):
        if not path.startswith("/") or ".." in path.split("/"):
            item.fail(f"must be an absolute path without '..', got {path!r}")
        norm = posixpath.normpath(path)
        if system_dir(norm):
            item.refuse(f"{norm} is a system directory; a workload may not be let in there")
        out.append(norm)
    return tuple(out)


def read_vars(node: Node | None) -> dict[str, str]:
    if node is None or node.value is None:
        return {}
    if not node.is_map:
        node.fail(f"must be a mapping of placeholder names to values, got {node.describe()}")
    out: dict[str, str] = {}
    for key, value in node.items().items():
        if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", key) or placeholders.is_lab_placeholder(key):
            value.fail(f"{key!r} cannot be a placeholder name", at_key=True)
        out[key] = read_str(value, "a number or a word")
    return out


# --- kernels and target requirements --------------------------------------------------------

_RELEASE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._+~-]{0,99}")
_REQUIREMENT = re.compile(r"[a-z][a-z0-9-]{0,39}")


_COMMIT = re.compile(r"[0-9a-f]{7,40}")


def read_kernel(node: Node | None) -> tuple[str | None, tuple[str, ...], str | None]:
    """`kernel: 6.1.0-47-cloud-amd64`, `kernel: {release: R, cmdline: "a=1 b"}` or `kernel:
    {commit: SHA}` (a commit of the kernel repository given to `--kernel-repo`, built for the
    case) → (release, cmdline words, commit); (None, (), None) when the case runs on whatever
    kernel the host has."""
    if node is None or node.value is None:
        return None, (), None
    cmdline: tuple[str, ...] = ()
    release_node = node
    if node.is_map:
        entries = check_keys(
            node, ("release", "commit", "cmdline"), "a release, {release, cmdline} or {commit}"
        )
        found = present(entries, "release")
        commit_node = present(entries, "commit")
        cmd_node = present(entries, "cmdline")
        if cmd_node is not None:
            cmdline = read_cmdline(cmd_node)
        if found is not None and commit_node is not None:
            commit_node.fail("give release: (a built kernel) or commit: (one to build), not both")
        if commit_node is not None:
            commit = read_str(commit_node, "a commit of the kernel repository (hex sha)")
            if not _COMMIT.fullmatch(commit):
                commit_node.fail(f"{commit!r} is not a commit sha (7 to 40 lower-case hex digits)")
            return None, cmdline, commit
        if found is None:
            node.fail(
                "needs release: (the kernel as `uname -r` prints it) or commit: (a sha of the "
                "kernel repository)"
            )
        release_node = found
    release = read_str(release_node, "a kernel release as `uname -r` prints it")
    if not _RELEASE.fullmatch(release):
        release_node.fail(f"{release!r} is not a kernel release like 6.1.0-47-cloud-amd64")
    return release, cmdline, None


_CMDLINE_WORD = re.compile(r"[A-Za-z0-9_.,:/=+@%-]+")
MAX_CMDLINE = 1024


def read_cmdline(node: Node | None) -> tuple[str, ...]:
    """`cmdline: "mitigations=off ext4.x=1"` (or a list): words added to the kernel's command
    line when a case's kernel is booted; plain words only, so no hook ever sees a quote."""
    if node is None or node.value is None:
        return ()
    words = read_str_list(node) if node.is_list else tuple(read_str(node).split())
    for word in words:
        if not _CMDLINE_WORD.fullmatch(word):
            node.fail(f"command line word {word!r}: letters, digits and _.,:/=+@%- only")
    if len(" ".join(words)) > MAX_CMDLINE:
        node.fail(f"command line additions longer than {MAX_CMDLINE} characters")
    return words


def read_requires(node: Node | None) -> dict[str, str]:
    """`requires: {dm-multipath: "2 paths"}` (or a list of names): what the target must be
    that a loop image is not; stated so that nothing the measurement needs is dropped."""
    if node is None or node.value is None:
        return {}
    pairs: list[tuple[str, str, Node]] = []
    if node.is_list:
        for item in node.elements():
            pairs.append((read_str(item, "a requirement name like dm-multipath"), "", item))
    elif node.is_map:
        for name, value in node.items().items():
            text = "" if value.value is None else read_str(value, "what is required, as text")
            pairs.append((name, text, value))
    else:
        node.fail(f"must map requirement names to text, got {node.describe()}")
    out: dict[str, str] = {}
    for name, text, item in pairs:
        if not _REQUIREMENT.fullmatch(name):
            item.fail(f"{name!r} is not a requirement name like dm-multipath or md", at_key=True)
        if name in out:
            item.fail(f"{name!r} is listed twice")
        out[name] = text
    return out
