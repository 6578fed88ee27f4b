"""The plans a robot mail's tables imply: one per parameter set of a testcase iolab maps,
written by that testcase's own module (`robot` for fio-basic, `robot_fsmark` for fsmark).
Apart from both so that neither names the other."""

from __future__ import annotations

from collections.abc import Sequence

from iolab.model.comparison import Comparison
from iolab.reproduce.robot import MAPPED, RobotPlan, fio_basic_plan
from iolab.reproduce.robot_fsmark import fsmark_plan


def robot_plans(tables: Sequence[Comparison], target_size: int = 1 << 30) -> list[RobotPlan]:
    """One plan per mapped parameter set of a robot mail's tables (`iolab reproduce`).

    A set is a table whose dimension header names a mapped testcase (`testcase: fio-basic`,
    `fsmark`), or, for a mail without dimension headers, the robot's own `parameters:` when
    its testcase is one of them."""
    plans: list[RobotPlan] = []
    seen: set[tuple[tuple[str, str], ...]] = set()
    for t in tables:
        robot = t.robot
        if robot is None:
            continue
        params = dict(t.dimensions)
        from_dimensions = bool(params)
        if not params and robot.testcase in MAPPED:
            params = dict(robot.parameters)
        testcase = params.get("testcase", robot.testcase)
        if testcase not in MAPPED or not params:
            continue
        key = tuple(sorted(params.items()))
        if key in seen:
            continue
        seen.add(key)
        head = next((h for h in robot.headlines if h.testcase == testcase), None)
        make = fsmark_plan if testcase == "fsmark" else fio_basic_plan
        plan = make(
            params,
            name=f"lkp-{testcase}-{len(plans) + 1}" if plans else f"lkp-{testcase}",
            machine=(head.machine if head else None) or robot.machine,
            robot=robot,
            metric=head.metric if head else None,
            target_size=target_size,
        )
        plan.parameters, plan.table, plan.from_dimensions = params, t, from_dimensions
        plans.append(plan)
    return plans
