"""From plan text to a `Plan`: top-level keys, profiles, variants × matrix, one Case each.

Order of application for a case: the plan's own settings, then the selected profile, then the
variant's overrides, then the matrix cell (so a cell's label is always true of the case).
Cases are listed cell by cell, each cell's variants in plan order.  Every profile is built
too (and thrown away) so that a mistake in a profile that is not selected is still reported.
"""

from __future__ import annotations

import hashlib
import itertools
import math
import os
import re
import stat
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Literal

from iolab.errors import PlanError
from iolab.model.metrics import Direction, metric_info
from iolab.plan import fiojob, stacks
from iolab.plan.merge import CONFIG_KEYS, merge, normalise, path_override
from iolab.plan.model import Case, Kpi, Plan, WorkloadSpec
from iolab.plan.nodes import Node, did_you_mean, map_node, parse_yaml
from iolab.plan.sections import (
    DEFAULT_TIMEOUT_S,
    Context,
    check_keys,
    present,
    read_allow_paths,
    read_cmdline,
    read_filesystem,
    read_fio_overrides,
    read_kernel,
    read_knobs,
    read_monitors,
    read_prepare,
    read_requires,
    read_target,
    read_vars,
    read_workload,
)
from iolab.plan.values import read_choice, read_cpus, read_duration, read_int, read_str

PLAN_KEYS = (
    "name",
    "description",
    *CONFIG_KEYS,
    "variants",
    "matrix",
    "repeat",
    "kpis",
    "on_failure",
    "seed",
    "baseline",
    "profiles",
    "allow_paths",
    "reboot",
    "warmups",
    "requires",
)
PROFILE_KEYS = tuple(
    k for k in PLAN_KEYS if k not in ("name", "profiles", "allow_paths", "requires")
)
DEFAULT_REPEAT = 5
# Upper bounds a plan must stay within: beyond them it is a mistake (or hostile), not a plan.
MAX_PLAN_BYTES = 1 << 20
MAX_REPEAT = 10_000
MAX_WARMUPS = 100
MAX_CASES = 10_000
# Matrix dimensions whose name alone says what they set.
DIMENSION_PATHS = {
    "fs": "filesystem.type",
    "scheduler": "knobs.queue.scheduler",
    "kernel": "kernel",
    "raid": "target.raid",
}
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.+-]*")
_DIM = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")

FioChecker = Callable[[str], str | None]


def build_plan(path: str, profile: str | None = None, *, check_fio: bool = True) -> Plan:
    """Read, validate and expand `path` with `profile` applied (see the module docstring)."""
    try:
        text = read_plan_text(path).decode("utf-8")
    except UnicodeDecodeError as e:
        raise PlanError(
            f"{path}: not UTF-8 text (byte {e.object[e.start]:#04x} at offset {e.start})"
        ) from None
    except OSError as e:
        raise PlanError(f"{path}: cannot read the plan: {e.strerror or e}") from None
    return plan_from_text(text, path, profile, check_fio=check_fio)


def read_plan_text(path: str) -> bytes:
    """The plan file's bytes: a regular file of at most MAX_PLAN_BYTES (a FIFO, a device such
    as /dev/zero or a huge file is refused at once instead of being read forever)."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)  # a FIFO must not block the open
    with os.fdopen(fd, "rb") as fh:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise PlanError(f"{path}: not a regular file")
        data = fh.read(MAX_PLAN_BYTES + 1)
    if len(data) > MAX_PLAN_BYTES:
        raise PlanError(f"{path}: larger than {MAX_PLAN_BYTES >> 10} KiB; not a plan")
    return data


def plan_from_text(
    text: str, path: str, profile: str | None = None, *, check_fio: bool = True
) -> Plan:
    root = parse_yaml(text, path)
    if not root.is_map:
        root.fail(f"a plan is a mapping of keys ({', '.join(PLAN_KEYS[:6])}, ...)")
    check_keys(root, PLAN_KEYS, "a mapping")
    profiles = _profiles(root)
    if profile is not None and profile not in profiles:
        where = root.items().get("profiles", root)
        have = ", ".join(profiles) or "none"
        where.fail(
            f"no profile {profile!r} in this plan{did_you_mean(profile, profiles)}; it has: {have}",
            at_key=True,
        )
    checker = fiojob.check_job if check_fio and fiojob.fio_available() else None
    builder = _Builder(root, text, path, checker)
    plan = builder.build(profile)
    for other in profiles:
        if other != profile:
            builder.build(other)
    return plan


def _profiles(root: Node) -> dict[str, Node]:
    node = present(root.items(), "profiles")
    if node is None:
        return {}
    if not node.is_map:
        node.fail(f"must be a mapping of profile names to overrides, got {node.describe()}")
    for name, body in node.items().items():
        if body.value is not None:
            check_keys(body, PROFILE_KEYS, "a mapping of plan keys to override")
        if not _NAME.fullmatch(name):
            body.fail(f"{name!r} is not a usable profile name", at_key=True)
    return dict(node.items())


def _prepared(node: Node) -> Node:
    """A plan or profile mapping with its own and its variants' settings normalised."""
    if not node.is_map:
        return node
    entries = dict(normalise(node).items())
    variants = entries.get("variants")
    if variants is not None and variants.is_map:
        entries["variants"] = map_node(
            {k: normalise(v) for k, v in variants.items().items()}, variants
        )
    return map_node(entries, node)


@dataclass(frozen=True)
class _Dimension:
    name: str
    values: tuple[Node, ...]
    path: str | None  # setting it changes, or None: a placeholder only
    key_node: Node
    extra: dict[str, tuple[str, ...]]  # `vars:` placeholder values that go with each value


class _Builder:
    def __init__(self, root: Node, text: str, path: str, checker: FioChecker | None) -> None:
        self.root = root
        self.text = text
        self.path = path
        self.checker = checker
        self.plan_dir = Path(path).resolve().parent
        self.allowed = read_allow_paths(present(root.items(), "allow_paths"))

    def build(self, profile: str | None) -> Plan:
        top = _prepared(self.root)
        if profile is not None:
            body = self.root.items()["profiles"].items()[profile]
            if body.value is not None:
                top = merge(top, _prepared(body))
        entries = top.items()
        variants = self._variants(entries)
        dims = self._matrix(entries)
        only = {name: self._only(body, dims) for name, body in variants.items()}
        baseline = self._baseline(entries, variants)
        if baseline is not None and only.get(baseline):
            variants[baseline].items()["only"].fail(
                f"{baseline!r} is the baseline: it runs in every cell (give only: to the others)",
                at_key=True,
            )
        base = map_node({k: v for k, v in entries.items() if k in CONFIG_KEYS}, top)
        cases: list[Case] = []
        used: set[str] = set()
        n_cases = math.prod(len(d.values) for d in dims) * max(1, len(variants))
        if n_cases > MAX_CASES:
            top.fail(f"{n_cases} cases (variants × matrix cells); at most {MAX_CASES}")
        cells = list(itertools.product(*(d.values for d in dims))) if dims else [()]
        for cell_values in cells:
            cell = dict(zip((d.name for d in dims), cell_values, strict=True))
            pairs: list[tuple[str | None, Node | None]] = list(variants.items()) or [(None, None)]
            for variant, override in pairs:
                if variant is not None and not _in_cells(only.get(variant), cell):
                    continue
                if override is not None and override.is_map and "only" in override.items():
                    kept = {k: v for k, v in override.items().items() if k != "only"}
                    override = map_node(kept, override)
                config = base
                if override is not None and override.value is not None:
                    config = merge(base, override)
                for dim in dims:
                    if dim.path is not None:
                        config = merge(
                            config, path_override(dim.path, cell[dim.name], dim.key_node)
                        )
                case = self._case(len(cases), variant, cell, dims, config, used)
                cases.append(case)
        for dim in dims:
            if dim.path is None and not used.intersection([dim.name, *dim.extra]):
                dim.key_node.fail(
                    f"{{{dim.name}}} appears in no workload and the dimension has no path:, "
                    "so every value would run the same case",
                    at_key=True,
                )
        return Plan(
            name=self._name(entries),
            description=_optional_str(entries, "description"),
            path=self.path,
            text=self.text,
            sha256=hashlib.sha256(self.text.encode("utf-8")).hexdigest(),
            profile=profile,
            cases=tuple(cases),
            repeat=self._repeat(entries),
            kpis=self._kpis(entries),
            on_failure=self._on_failure(entries),
            seed=self._seed(entries),
            variants=tuple(variants),
            baseline=baseline,
            matrix={d.name: tuple(str(v.value) for v in d.values) for d in dims},
            reboot=self._reboot(entries),
            warmups=self._warmups(entries),
            requires=read_requires(present(self.root.items(), "requires")),
        )

    # --- top-level keys ---------------------------------------------------------------------

    def _name(self, entries: dict[str, Node]) -> str:
        node = present(entries, "name")
        if node is None:
            return Path(self.path).stem
        name = read_str(node, "a plan name")
        if not _NAME.fullmatch(name):
            node.fail(f"use letters, digits and -_.+ only, got {name!r}")
        return name

    def _repeat(self, entries: dict[str, Node]) -> int:
        node = present(entries, "repeat")
        repeat = DEFAULT_REPEAT if node is None else read_int(node, 1)
        if node is not None and repeat > MAX_REPEAT:
            node.fail(f"at most {MAX_REPEAT} blocks, got {repeat}")
        return repeat

    def _warmups(self, entries: dict[str, Node]) -> int:
        node = present(entries, "warmups")
        warmups = 0 if node is None else read_int(node, 0)
        if node is not None and warmups > MAX_WARMUPS:
            node.fail(f"at most {MAX_WARMUPS} warm-up samples, got {warmups}")
        return warmups

    def _seed(self, entries: dict[str, Node]) -> int | None:
        node = present(entries, "seed")
        return None if node is None else read_int(node, 0)

    def _reboot(self, entries: dict[str, Node]) -> Literal["per-sample", "per-switch"]:
        node = present(entries, "reboot")
        if node is None:
            return "per-sample"
        choice = read_choice(node, ["per-sample", "per-switch"])
        return "per-switch" if choice == "per-switch" else "per-sample"

    def _on_failure(self, entries: dict[str, Node]) -> Literal["continue", "stop"]:
        node = present(entries, "on_failure")
        if node is None:
            return "continue"
        return "stop" if read_choice(node, ("continue", "stop")) == "stop" else "continue"

    def _kpis(self, entries: dict[str, Node]) -> tuple[Kpi, ...]:
        node = present(entries, "kpis")
        if node is None:
            self.root.fail("missing kpis: the metrics the verdict is about, e.g. [write.iops]")
        if not node.is_list or not node.elements():
            node.fail(f"must be a list of metrics like [write.iops], got {node.describe()}")
        kpis: list[Kpi] = []
        for item in node.elements():
            direction_node = None
            if item.is_map:
                kentries = check_keys(item, ("metric", "direction"), "a metric")
                metric_node = present(kentries, "metric")
                if metric_node is None:
                    item.fail("needs metric: NAME")
                direction_node = present(kentries, "direction")
            else:
                metric_node = item
            metric = read_str(metric_node, "a metric name like write.iops")
            if direction_node is not None:
                direction = Direction(read_choice(direction_node, ("higher", "lower")))
            else:
                direction = metric_info(metric).direction
                if direction is Direction.NEUTRAL:
                    metric_node.fail(
                        f"iolab does not know whether more {metric} is better; "
                        "write {metric: ..., direction: higher|lower}"
                    )
            kpis.append(Kpi(metric, direction))
        return tuple(kpis)

    def _variants(self, entries: dict[str, Node]) -> dict[str, Node]:
        node = present(entries, "variants")
        if node is None:
            return {}
        if not node.is_map or not node.items():
            node.fail(f"must map variant names to overrides, got {node.describe()}")
        for name, body in node.items().items():
            if not _NAME.fullmatch(name):
                body.fail(f"{name!r} is not a usable variant name", at_key=True)
            if body.is_map:
                for key, value in body.items().items():
                    if key in PLAN_KEYS and key not in CONFIG_KEYS:
                        value.fail(
                            f"{key!r} applies to the whole plan, not to a variant", at_key=True
                        )
            if body.value is not None:
                check_keys(
                    body, (*CONFIG_KEYS, "only"), "a mapping of settings to override (or {})"
                )
        return dict(node.items())

    def _only(self, body: Node, dims: list[_Dimension]) -> dict[str, tuple[str, ...]]:
        """A variant's `only: {dim: [values]}`: the matrix cells it runs in (default: all)."""
        node = present(body.items(), "only") if body.is_map else None
        if node is None:
            return {}
        if not node.is_map or not node.items():
            node.fail(f"must map matrix dimensions to values, got {node.describe()}")
        by_name = {d.name: d for d in dims}
        out: dict[str, tuple[str, ...]] = {}
        for name, values_node in node.items().items():
            dim = by_name.get(name)
            if dim is None:
                values_node.fail(
                    f"no matrix dimension {name!r}{did_you_mean(name, list(by_name))}",
                    at_key=True,
                )
            known = [str(v.value) for v in dim.values]
            items = values_node.elements() if values_node.is_list else [values_node]
            chosen = []
            for item in items:
                if not item.is_scalar or str(item.value) not in known:
                    item.fail(f"must be one of {name}'s values ({', '.join(known)}), "
                              f"got {item.describe()}")  # fmt: skip
                chosen.append(str(item.value))
            out[name] = tuple(chosen)
        return out

    def _baseline(self, entries: dict[str, Node], variants: dict[str, Node]) -> str | None:
        node = present(entries, "baseline")
        if node is None:
            return next(iter(variants), None)
        if not variants:
            node.fail("a baseline needs variants:")
        return read_choice(node, list(variants))

    def _matrix(self, entries: dict[str, Node]) -> list[_Dimension]:
        node = present(entries, "matrix")
        if node is None:
            return []
        if not node.is_map:
            node.fail(f"must map dimension names to value lists, got {node.describe()}")
        dims: list[_Dimension] = []
        for name, body in node.items().items():
            if not _DIM.fullmatch(name):
                body.fail(f"{name!r} cannot be a dimension name (letters, digits, _)", at_key=True)
            path = DIMENSION_PATHS.get(name)
            values_node = body
            if body.is_map:
                dentries = check_keys(
                    body, ("path", "values", "vars"), "a mapping with path:, values:, vars:"
                )
                path_node = present(dentries, "path")
                values_node = dentries.get("values", body)
                if path_node is not None:
                    path = read_str(path_node, "a dotted setting path like knobs.sysctl.vm.x")
            if not values_node.is_list or not values_node.elements():
                values_node.fail(
                    f"must be a non-empty list of values, got {values_node.describe()}"
                )
            values = tuple(values_node.elements())
            for value in values:
                if not value.is_scalar or value.value is None:
                    value.fail(f"a matrix value must be a number or a word, got {value.describe()}")
            seen = [str(v.value) for v in values]
            if len(set(seen)) != len(seen):
                values_node.fail("lists a value twice")
            extra: dict[str, tuple[str, ...]] = {}
            vars_node = present(body.items(), "vars") if body.is_map else None
            if vars_node is not None:
                if not vars_node.is_map:
                    vars_node.fail(
                        f"must map placeholder names to lists, got {vars_node.describe()}"
                    )
                for var, column in vars_node.items().items():
                    if not _DIM.fullmatch(var):
                        column.fail(f"{var!r} cannot be a placeholder name", at_key=True)
                    if not column.is_list or len(column.elements()) != len(values):
                        column.fail(f"must list one value per dimension value ({len(values)})")
                    extra[var] = tuple(read_str(v, "a number or a word") for v in column.elements())
            dims.append(_Dimension(name, values, path, body, extra))
        return dims

    # --- one case ---------------------------------------------------------------------------

    def _case(
        self,
        index: int,
        variant: str | None,
        cell: dict[str, Node],
        dims: list[_Dimension],
        config: Node,
        used: set[str],
    ) -> Case:
        entries = config.items()
        for required in ("filesystem", "workload"):
            if required not in entries:
                hint = (
                    " (write filesystem: none for raw devices)" if required == "filesystem" else ""
                )
                raise PlanError(f"{self.path}:1: missing {required}:{hint}")
        values = read_vars(present(entries, "vars"))
        for dim in dims:
            position = dim.values.index(cell[dim.name])
            values.update({var: column[position] for var, column in dim.extra.items()})
        values.update({name: str(node.value) for name, node in cell.items()})
        filesystem = read_filesystem(entries["filesystem"])
        target = read_target(present(entries, "target"))
        knobs = read_knobs(present(entries, "knobs"), target.spec)
        if filesystem is not None:
            stacks.check_filesystem(target.spec, present(entries, "target") or config)
        ctx = Context(self.plan_dir, values, filesystem is not None, used, self.allowed)
        workload_node = entries["workload"]
        overrides_node = present(entries, "fio")
        workload, needed = read_workload(
            workload_node, ctx, read_fio_overrides(overrides_node), "workload", overrides_node
        )
        self._check_fio(workload, workload_node)
        prepare_node = present(entries, "prepare")
        prepare, needed_prep = read_prepare(prepare_node, ctx, workload)
        if prepare_node is not None:
            steps = prepare_node.items()
            if prepare.fill is not None:
                self._check_fio(prepare.fill, steps["fill"])
            if prepare.warmup is not None and steps["warmup"].is_map:
                self._check_fio(prepare.warmup, steps["warmup"])
        needed = max(needed, needed_prep)
        spec = target.spec
        if needed > spec.count and spec.kind == "md":
            workload_node.fail(
                f"the workload uses {needed} devices ({{dev{needed - 1}}}/{{mnt{needed - 1}}}) "
                "but the target is an md array: one device ({dev}, {mnt})"
            )
        if needed > spec.count and spec.kind == "multipath":
            workload_node.fail(
                f"the workload uses {needed} devices ({{dev{needed - 1}}}/{{mnt{needed - 1}}}) "
                f"but the target is {spec.count} multipath map{'s' if spec.count > 1 else ''} "
                f"(count: {needed} makes one map per device)"
            )
        if needed > spec.count:
            if target.explicit and target.count_node is not None:
                target.count_node.fail(
                    f"the workload uses {needed} devices ({{dev{needed - 1}}}/{{mnt{needed - 1}}}) "
                    f"but the target has {spec.count}"
                )
            spec = replace(spec, count=needed)
        cpus_node = present(entries, "cpus")
        timeout_node = present(entries, "timeout")
        kernel, cmdline, commit = read_kernel(present(entries, "kernel"))
        cmdline += read_cmdline(present(entries, "cmdline"))
        key_parts = ([variant] if variant else []) + [f"{k}={v.value}" for k, v in cell.items()]
        return Case(
            index=index,
            key="/".join(key_parts) or "default",
            variant=variant,
            cell={k: str(v.value) for k, v in cell.items()},
            target=spec,
            filesystem=filesystem,
            sysctls=knobs.sysctls,
            queue=knobs.queue,
            workload=workload,
            prepare=prepare,
            cpus=None if cpus_node is None else read_cpus(cpus_node),
            monitors=read_monitors(present(entries, "monitors")),
            timeout_s=DEFAULT_TIMEOUT_S
            if timeout_node is None
            else read_duration(timeout_node, positive=True),
            vars=values,
            member_queue=knobs.member_queue,
            md=knobs.md,
            kernel=kernel,
            kernel_cmdline=cmdline,
            kernel_commit=commit,
        )

    def _check_fio(self, workload: WorkloadSpec, node: Node) -> None:
        if self.checker is None or workload.fio_text is None:
            return
        problem = self.checker(workload.fio_text)
        if problem is None:
            return
        line = node.line
        body = next(iter(node.items().values()), node) if node.is_map else node
        blamed = fiojob.offending_option(problem)
        if blamed is not None and isinstance(body.value, str) and "fio" in node.items():
            key = fiojob.option_key(blamed)
            for offset, text in enumerate(body.value.splitlines()):
                if key is not None and fiojob.option_key(text) == key:
                    line = body.line + 1 + offset  # a `|` block starts on the next line
                    break
        raise PlanError(f"{node.file}:{line}: {body.path}: fio rejects the job: {problem}")


def _optional_str(entries: dict[str, Node], key: str) -> str:
    node = present(entries, key)
    return "" if node is None else read_str(node, "text")


def _in_cells(only: dict[str, tuple[str, ...]] | None, cell: dict[str, Node]) -> bool:
    """Whether a cell is one of those a variant's `only:` names (no `only:`: every cell)."""
    return not only or all(str(cell[name].value) in values for name, values in only.items())
