"""The plan YAML of a draft, every choice preceded by a comment naming its mail line.

The layout is written as text, because comments are the point of this file and PyYAML's
emitter drops them (ruamel.yaml keeps comments, but would be a second YAML library for one
writer whose shape is fixed); every value still goes through PyYAML's emitter, so quoting is
YAML's own, and the service loads the written text as a plan before anyone sees it.
"""

from __future__ import annotations

import yaml

from iolab.reproduce.draft import Draft, Ref

# libyaml's emitter when PyYAML has it (the same text, several times faster)
_DUMPER = getattr(yaml, "CSafeDumper", yaml.SafeDumper)


def _scalar(value: object) -> str:
    text = yaml.dump(
        value, Dumper=_DUMPER, default_flow_style=True, width=1 << 16, allow_unicode=True
    )
    return text.removesuffix("\n").removesuffix("\n...").strip()


def _comment(text: str) -> str:
    """A one-line YAML comment (control characters and line breaks made spaces)."""
    return "".join(ch if ch.isprintable() else " " for ch in text)


class _Out:
    def __init__(self) -> None:
        self.lines: list[str] = []

    def note(self, indent: int, text: str) -> None:
        self.lines.append(" " * indent + "# " + _comment(text))

    def ref(self, indent: int, ref: Ref | None, what: str = "") -> None:
        if ref is not None:
            lead = f"{what}: " if what else ""
            self.note(indent, f"{lead}{ref.where}: {ref.quote}")

    def key(self, indent: int, key: str, value: object | None = None) -> None:
        name = _scalar(key)  # `5.10:` unquoted would be the number 5.1
        if value is None:
            self.lines.append(" " * indent + f"{name}:")
        else:
            self.lines.append(" " * indent + f"{name}: {_scalar(value)}")

    def block(self, indent: int, key: str, text: str) -> None:
        self.lines.append(" " * indent + f"{key}: |")
        for line in text.rstrip("\n").split("\n"):
            self.lines.append(" " * (indent + 2) + line if line else "")


def render(draft: Draft) -> str:
    out = _Out()
    out.note(0, f"iolab reproduce: a plan drafted from {draft.source}")
    out.note(
        0, "Every choice names the mail line it came from; read them before trusting a verdict."
    )
    for comment in draft.comments:
        out.note(0, comment)
    if draft.description.startswith("reproduces: "):
        out.note(0, "name and description: the mail's Subject")
    out.key(0, "name", draft.name)
    out.key(0, "description", draft.description)
    out.lines.append("")
    out.key(0, "target")
    if draft.target_note:
        out.note(2, draft.target_note)
    size = draft.target_size
    out.key(2, "size", f"{size >> 30}G" if size % (1 << 30) == 0 else f"{size >> 20}M")
    out.note(2, "iolab's choice: a loop image in RAM (quiet, and nothing of this host's disks)")
    out.key(2, "backing", "ram")
    for key, value in draft.target_extra.items():
        out.key(2, key, value)
    if draft.target_kind == "multipath":
        out.ref(2, draft.target_ref, "a multipath setup")
        out.key(2, "kind", "multipath")
        out.key(2, "paths", draft.target_paths)
        if draft.target_count > 1:
            out.note(2, "one map in place of each of the mail's devices, {dev0} .. in order")
            out.key(2, "count", draft.target_count)
    elif draft.target_count > 1:
        out.key(2, "count", draft.target_count)
    if draft.requires:
        out.lines.append("")
        out.note(0, "what the measurement needs that a loop image here is not: `iolab run` refuses")
        out.note(0, "this plan until it runs where these are (or you remove them knowingly)")
        out.key(0, "requires")
        for name, text, ref in draft.requires:
            out.ref(2, ref)
            out.key(2, name, text)
    out.lines.append("")
    _filesystem(out, draft)
    _knobs(out, draft)
    out.lines.append("")
    out.key(0, "workload")
    out.ref(2, draft.workload_ref)
    if draft.workload_kind == "fio":
        out.block(2, "fio", draft.fio_text)
    else:
        out.key(2, draft.workload_kind, draft.argv)
    if draft.vars:
        out.lines.append("")
        out.key(0, "vars")
        for name, (value, why) in draft.vars.items():
            out.note(2, why)
            out.key(2, name, value)
    if draft.matrix:
        out.lines.append("")
        out.note(0, draft.matrix_note)
        out.key(0, "matrix")
        for name, values, ref in draft.matrix:
            path = draft.matrix_paths.get(name)
            spec: dict[str, object] = {"path": path} if path else {}
            if name in draft.matrix_vars:
                spec["vars"] = draft.matrix_vars[name]
            out.ref(2, ref, "" if path else "the first")
            out.key(2, name, {**spec, "values": values} if spec else values)
    if draft.variants:
        out.lines.append("")
        out.note(0, draft.variants_note)
        out.key(0, "variants")
        for variant in draft.variants:
            out.ref(2, variant.ref)
            if variant.overrides:
                out.key(2, variant.name)
                _mapping(out, 4, variant.overrides)
            else:
                out.key(2, variant.name, {})
        out.key(0, "baseline", draft.baseline)
    elif draft.variants_note:
        out.lines.append("")
        out.note(0, draft.variants_note)
    out.lines.append("")
    out.note(0, "iolab's choices, not the mail's: 10 randomized blocks, a fresh fs each sample")
    out.key(0, "repeat", 10)
    out.key(0, "prepare")
    out.key(2, "mkfs", "per-sample")
    if draft.drop_caches is not None:
        out.ref(2, draft.drop_caches)
    else:
        out.note(2, "iolab's default: sync and drop caches before each sample")
    out.key(2, "drop_caches", True)
    if draft.fill_text:
        out.ref(2, draft.fill_ref, "the --create_only pre-pass")
        out.key(2, "fill")
        out.block(4, "fio", draft.fill_text)
    kernels = any("kernel" in v.overrides for v in draft.variants)
    if kernels:
        out.note(0, "iolab's choice: one unmeasured sample after each boot (docs/plan.md)")
        out.key(0, "warmups", 1)
    out.note(0, draft.kpi_note)
    out.key(0, "kpis", draft.kpis)
    if draft.timeout:
        out.key(0, "timeout", draft.timeout)
    if draft.monitors:
        out.note(0, "the evidence, measured beside the KPIs")
        out.key(0, "monitors")
        for name, ref in draft.monitors:
            out.ref(2, ref)
            out.lines.append(f"  - {_scalar(name)}")
    out.lines.append("")
    out.note(0, "--quick: a short check that the plan runs, not a measurement to quote")
    out.key(0, "profiles")
    out.key(2, "quick")
    out.key(4, "repeat", 3)
    if draft.quick_here:
        out.note(4, draft.quick_here)
        out.lines += ["    variants: null", "    baseline: null"]
        if kernels:
            out.key(4, "warmups", 0)
    if draft.quick_vars:
        out.key(4, "vars", dict(draft.quick_vars))
    if draft.quick_timeout:
        out.key(4, "timeout", draft.quick_timeout)
    for why, key, value in draft.quick_extra:
        out.note(4, why)
        if isinstance(value, dict):
            out.key(4, key)
            _mapping(out, 6, value)
        else:
            out.key(4, key, value)
    return "\n".join(out.lines) + "\n"


def _filesystem(out: _Out, draft: Draft) -> None:
    if draft.fstype is None and draft.workload_kind == "fio" and "{dev" in draft.fio_text:
        out.note(0, "the workload names block devices")
        out.key(0, "filesystem", "none")
        return
    out.key(0, "filesystem")
    if draft.fstype is None:
        out.note(2, "the mail names no filesystem: ext4 assumed")
    else:
        out.ref(2, draft.fstype_ref)
    out.key(2, "type", draft.fstype or "ext4")
    if draft.mkfs_options:
        out.ref(2, draft.mkfs_ref)
        out.key(2, "mkfs_options", " ".join(draft.mkfs_options))
    if draft.mount_options:
        if draft.mount_ref is not None:
            out.ref(2, draft.mount_ref)
        else:
            out.note(2, "the options every mount line of the mail shares")
        out.key(2, "mount_options", ",".join(draft.mount_options))


def _knobs(out: _Out, draft: Draft) -> None:
    if not draft.sysctl and not draft.queue:
        return
    out.lines.append("")
    out.key(0, "knobs")
    for group, entries in (("sysctl", draft.sysctl), ("queue", draft.queue)):
        if not entries:
            continue
        out.key(2, group)
        for name, (value, ref) in entries.items():
            out.ref(4, ref)
            out.key(4, name, value)


def _mapping(out: _Out, indent: int, values: dict[str, object]) -> None:
    for key, value in values.items():
        if isinstance(value, dict):
            out.key(indent, key)
            _mapping(out, indent + 2, value)
        else:
            out.key(indent, key, value)
