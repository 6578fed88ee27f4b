"""Overrides: the canonical shape of a configuration and how overrides merge into it.

Profiles, variants and matrix cells are all overrides of the same configuration keys.  They
are brought to one shape first (`normalise`: `knobs: {queue.scheduler: x}` →
`knobs: {queue: {scheduler: x}}`, `filesystem: ext4` → `filesystem: {type: ext4}`), then
deep-merged: mappings merge key by key, anything else (lists, scalars, null) replaces.
A workload and the prepare steps `fill`/`warmup` replace as a whole, since their keys are
alternatives (`fio` or `xfs_io`), not parts.
"""

from __future__ import annotations

from iolab.plan.nodes import Node, child_path, did_you_mean, map_node, scalar_node

# Keys that describe one case's configuration: allowed at the top, in variants and matrix paths.
CONFIG_KEYS = (
    "target",
    "filesystem",
    "knobs",
    "workload",
    "fio",
    "vars",
    "prepare",
    "monitors",
    "cpus",
    "timeout",
    "kernel",
    "cmdline",
)
# Configuration keys that are one value, so a matrix path may name them alone (`kernel`).
SCALAR_KEYS = ("kernel", "cmdline", "timeout")
# knobs: sysctls, the top devices' queues, the members' / paths' queues, the md array's own
KNOB_GROUPS = ("sysctl", "queue", "member_queue", "md")
SYSCTL_ROOTS = ("vm.", "kernel.", "fs.", "dev.", "net.", "abi.", "debug.", "user.")
_WHOLE = {("workload",), ("prepare", "fill"), ("prepare", "warmup")}


def normalise(config: Node) -> Node:
    """`config` (a mapping of configuration keys) with knobs and filesystem in canonical form."""
    if not config.is_map:
        return config
    entries = dict(config.items())
    if "knobs" in entries:
        entries["knobs"] = _normalise_knobs(entries["knobs"])
    fs = entries.get("filesystem")
    if fs is not None and isinstance(fs.value, str) and fs.value != "none":
        entries["filesystem"] = map_node(
            {"type": scalar_node(fs.value, fs, child_path(fs.path, "type"))}, fs
        )
    return map_node(entries, config)


def _normalise_knobs(knobs: Node) -> Node:
    if knobs.value is None:
        return map_node({}, knobs)
    if not knobs.is_map:
        knobs.fail(
            f"must be a mapping with sysctl:, queue:, member_queue: or md:, got {knobs.describe()}"
        )
    groups: dict[str, dict[str, Node]] = {g: {} for g in KNOB_GROUPS}
    heads: dict[str, Node] = {}
    for key, value in knobs.items().items():
        if key in groups:
            if value.value is None:
                continue
            if not value.is_map:
                value.fail(f"must be a mapping of names to values, got {value.describe()}")
            heads[key] = value
            groups[key].update(value.items())
            continue
        group, _, name = key.partition(".")
        if group in groups and name:
            groups[group][name] = value
        elif key.startswith(SYSCTL_ROOTS):
            groups["sysctl"][key] = value
        else:
            value.fail(
                f"unknown knob {key!r}: use sysctl: {{vm.dirty_bytes: ..}} or "
                f"queue: {{scheduler: ..}}{did_you_mean(key, groups)}",
                at_key=True,
            )
    entries = {
        group: map_node(names, heads.get(group, knobs)) for group, names in groups.items() if names
    }
    return map_node(entries, knobs)


def merge(base: Node, over: Node, where: tuple[str, ...] = ()) -> Node:
    """`over` deep-merged into `base` (neither is changed)."""
    if not (base.is_map and over.is_map) or where in _WHOLE:
        return over
    entries = dict(base.items())
    for key, value in over.items().items():
        old = entries.get(key)
        entries[key] = value if old is None else merge(old, value, (*where, key))
    return map_node(entries, base)


def path_override(path: str, value: Node, at: Node) -> Node:
    """The override that sets the dotted `path` (a matrix dimension) to `value`.

    Sysctl names, queue attributes and fio options contain dots or are free-form, so the
    path stops splitting there: `knobs.sysctl.vm.dirty_bytes`, `knobs.queue.iosched.fifo_batch`,
    `fio.numjobs`, `vars.size`.
    """
    parts = path.split(".")
    head = parts[0]
    single = head in SCALAR_KEYS and len(parts) == 1
    if head not in CONFIG_KEYS or (len(parts) < 2 and not single) or "" in parts:
        at.fail(
            f"path {path!r} does not name a setting; it starts with one of "
            f"{', '.join(CONFIG_KEYS)}{did_you_mean(head, CONFIG_KEYS)}"
        )
    if head == "knobs":
        if parts[1] not in KNOB_GROUPS or len(parts) < 3:
            at.fail(
                f"path {path!r}: use knobs.sysctl.NAME, knobs.queue.NAME, "
                "knobs.member_queue.NAME or knobs.md.NAME"
            )
        keys = [head, parts[1], ".".join(parts[2:])]
    elif head in ("fio", "vars"):
        keys = [head, ".".join(parts[1:])]
    else:
        keys = parts
    node = value
    for depth in range(len(keys) - 1, -1, -1):
        node = map_node({keys[depth]: node}, at)
    return normalise(node)
