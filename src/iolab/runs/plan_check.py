"""`iolab plan check PLAN`: what a plan is, where it can run and how long it takes, before
anything is run.

Nothing here is a second reading of the plan or a second preflight: the plan is loaded and
expanded by `load_plan` (for its full profile and for `quick`), the question "can it run
here" is answered by the same `lifecycle.check` that `iolab run` and `iolab ab` pass first
(the lab's preflight included), and the boot count of a kernel plan by the schedule the
fleet runs (`kernels.order`).  Nothing touches the machine or opens a store.

The wall times count what the plan itself fixes: each sample's timed workload (fio's
`runtime` and `ramp_time`), its timed warm-up and fill, and `settle`.  Making the filesystem,
dropping caches and booting kernels come on top; a workload bounded by its size, not a time,
is counted at its `timeout` and the total is then an upper bound.
"""

from __future__ import annotations

from iolab.errors import IolabError, PlanError
from iolab.model.plan_check import CaseLine, Place, PlanCheck, WallTime
from iolab.plan import load_plan
from iolab.plan.fiojob import fio_seconds
from iolab.plan.model import Case, Plan, WorkloadSpec


def check_plan(path: str, *, max_blocks: int | None = None) -> PlanCheck:
    """Validate PLAN (a PlanError when it is not valid) and say what, where and how long."""
    from iolab.runs.meta import DEFAULT_MAX_BLOCKS

    plan = load_plan(path)
    notes: list[str] = []
    times = [_wall_time("run", plan, plan.repeat)]
    try:
        quick = load_plan(path, "quick")
    except PlanError as exc:
        if "quick" not in exc.message:
            raise
        times.append(WallTime("run --quick", 0, 0, None, False, why="no `quick` profile"))
    else:
        times.append(_wall_time("run --quick", quick, quick.repeat))
    budget = max_blocks or DEFAULT_MAX_BLOCKS
    if len(plan.variants) < 2:
        times.append(WallTime("ab", 0, 0, None, False, why="ab compares two or more variants"))
    else:
        ab = _wall_time("ab", plan, budget)
        times.append(WallTime("ab", ab.blocks, ab.samples, ab.seconds, True, ab.boots, "at most"))
    return PlanCheck(
        path=plan.path,
        name=plan.name,
        variants=plan.variants,
        baseline=plan.baseline,
        matrix=dict(plan.matrix),
        repeat=plan.repeat,
        kpis=tuple((k.metric, k.direction.value) for k in plan.kpis),
        requires=tuple(sorted(plan.requirements())),
        cases=tuple(_case_line(case) for case in plan.cases),
        places=tuple(_places(plan)),
        times=tuple(times),
        notes=tuple(notes),
    )


# --------------------------------------------------------------------------- what


def _target(case: Case) -> str:
    t = case.target
    if t.kind == "device":
        return "device " + ",".join(t.devices)
    if t.kind == "null_blk":
        return f"null_blk ×{t.count} {_size(t.size_bytes)}"
    if t.md is not None:
        over = "designated" if t.devices else f"loop {_size(t.size_bytes)} {t.backing}"
        return f"md raid{t.md.level} over {t.members} {over}"
    if t.multipath is not None:
        maps = f"×{t.count} " if t.count > 1 else ""
        return f"dm-multipath {maps}{t.members} paths over loop {_size(t.size_bytes)} {t.backing}"
    count = f"×{t.count} " if t.count > 1 else ""
    return f"loop {count}{_size(t.size_bytes)} {t.backing}"


def _size(n: int) -> str:
    for unit, scale in (("T", 1 << 40), ("G", 1 << 30), ("M", 1 << 20), ("K", 1 << 10)):
        if n >= scale and n % scale == 0:
            return f"{n // scale}{unit}"
    return f"{n}B"


def _step_seconds(step: WorkloadSpec | None) -> float | None:
    if step is None:
        return 0.0
    if step.kind == "fio" and step.fio_text is not None:
        return fio_seconds(step.fio_text)
    return None


def _case_line(case: Case) -> CaseLine:
    parts = [
        _step_seconds(case.workload),
        _step_seconds(case.prepare.warmup),
        _step_seconds(case.prepare.fill),
    ]
    bounded = any(p is None for p in parts)
    seconds = sum(case.timeout_s if p is None else p for p in parts) + case.prepare.settle_s
    return CaseLine(
        key=case.key,
        variant=case.variant,
        cell=dict(case.cell),
        target=_target(case),
        workload=case.workload.kind,
        kernel=case.kernel or (f"commit {case.kernel_commit[:12]}" if case.kernel_commit else None),
        seconds=seconds,
        bounded=bounded,
    )


# --------------------------------------------------------------------------- how long


def _wall_time(how: str, plan: Plan, blocks: int) -> WallTime:
    lines = [_case_line(case) for case in plan.cases]
    boots = 0
    if plan.switches_kernels:
        from iolab.kernels.order import boot_schedule, paired_orders

        orders = paired_orders(len(plan.cases), blocks, 0)
        boots = sum(slot.boot for slot in boot_schedule(plan, orders))
    # the plan's warm-up samples: before the first sample of each session (one here, one
    # per boot on a host that boots kernels), each about as long as an average sample
    sessions = max(1, boots)
    warm = plan.warmups * sessions * sum(line.seconds for line in lines) / max(1, len(lines))
    return WallTime(
        how=how,
        blocks=blocks,
        samples=blocks * len(lines),
        seconds=blocks * sum(line.seconds for line in lines) + warm,
        at_most=any(line.bounded for line in lines),
        boots=boots,
    )


# --------------------------------------------------------------------------- where


def _places(plan: Plan) -> list[Place]:
    return [_here(plan), _guest(plan), _fleet(plan)]


def _here(plan: Plan) -> Place:
    """`iolab run` on this machine: the check `run` and `ab` pass first, preflight included."""
    from iolab.runs.lifecycle import check

    try:
        check(plan, here=True)
    except IolabError as exc:
        return Place("here", False, exc.message)
    return Place("here", True, f"iolab run {plan.path}")


def _guest(plan: Plan) -> Place:
    from iolab.guest.recipe import recipe_for

    why = plan.unmeetable()
    if why is not None:
        return Place("a guest", False, why)
    designated = sorted({d for c in plan.cases for d in c.target.devices})
    if designated:
        return Place(
            "a guest", False, f"it names devices of this machine ({', '.join(designated)})"
        )
    kernels = tuple(sorted({c.kernel for c in plan.cases if c.kernel is not None}))
    try:
        recipe_for(kernels)
    except IolabError as exc:
        return Place("a guest", False, exc.message)
    if plan.kernel_commits():
        return Place(
            "a guest",
            True,
            "as a fleet host (iolab guest up NAME --kernels R --class CLASS …) that boots the "
            f"kernels built from its commits: {_built_on_fleet(plan)}",
        )
    if plan.switches_kernels:
        names = ",".join(kernels) if kernels else "R1,R2"
        return Place(
            "a guest",
            True,
            f"as a fleet host: iolab guest up NAME --kernels {names} --class CLASS …, "
            f"then iolab run --fleet CLASS {plan.path}",
        )
    return Place("a guest", True, f"iolab guest run --file {plan.path} SCRIPT")


def _fleet(plan: Plan) -> Place:
    why = plan.unmeetable()
    if why is not None:
        return Place("a fleet", False, why)
    needs = sorted(plan.requirements())
    kernels = sorted({c.kernel for c in plan.cases if c.kernel is not None})
    kernels += [f"kernels built from commit {sha[:12]}" for sha in plan.kernel_commits()]
    wanted = []
    if needs:
        wanted.append(f"that can make {', '.join(needs)}")
    if plan.switches_kernels:
        wanted.append(f"that boot {', '.join(kernels) if kernels else 'kernel command lines'}")
    hosts = f"hosts {' and '.join(wanted)}" if wanted else "any host"
    if plan.kernel_commits():
        return Place("a fleet", True, f"{_built_on_fleet(plan)}, a CLASS of {hosts}")
    return Place("a fleet", True, f"iolab run --fleet CLASS {plan.path}, a CLASS of {hosts}")


def _built_on_fleet(plan: Plan) -> str:
    """The command that builds a plan's kernel commits and runs it on a fleet."""
    return f"iolab ab --kernel-repo DIR --kernel-build CMD --fleet CLASS {plan.path}"
