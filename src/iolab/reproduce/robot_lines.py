"""Which lines of a 0-day/LKP mail a robot plan (reproduce.robot) was made from, and which
of its parameters the plan leaves out — what `iolab reproduce` lists as used and ignored.

The plan follows one parameter set of its testcase (fio-basic, fsmark): the dimension
header of its table (`bs/compiler/…/testcase:` and the values line under it), or the
robot's `parameters:` block when the mail has no dimension header.  The robot's own block
is listed too when it is that same set (a headline of that testcase).  What each parameter
became, and why one was left out, is the plan module's own account (`RobotPlan.becomes`,
`RobotPlan.left_out`).  Besides the set: the headline that names the
metric (the plan's KPI), the commit and base lines (the kernels to compare), and the
`testcase:` / `test machine:` facts (`nr_task: 50%` is a share of the machine's threads).

Lines are numbered as the table readers number them (ingest.comparisons.table_lines): the
file's own lines, or the decoded body's for an encoded message.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from iolab.ingest import lkp
from iolab.reproduce.robot import RobotPlan

Entry = tuple[str, str, str]  # (where, mail text, what it became / why it was left out)

_REQUIREMENT = ("disk", "cpufreq_governor", "ucode", "numa_mem_policy", "numa_cpu_nodes")
# where the robot ran, not what it ran: not a choice a plan makes
_CONTEXT = ("compiler", "kconfig", "rootfs", "tbox_group")

_NOTICED = re.compile(r"\bnoticed (?:a|an)\s+\S+%\s+(?:regression|improvement)\s+of\b")
_SUBJECT = re.compile(r"^Subject:\s*\S")
_COMMIT = re.compile(r"^\s*commit:\s+[0-9a-f]{7,40}\b", re.I)
_COMMIT_HEAD = re.compile(r"^\s*commit:\s*$")
_SIDE = re.compile(r"^\s*[0-9a-f]{7,40}\s+\(\"")
_FACT = re.compile(r"^\s*(?:in\s+|on\s+)?(testcase|test machine):\s*(\S.*?)\s*$")


def used_lines(lines: list[str], offset: int, plan: RobotPlan) -> tuple[list[Entry], list[Entry]]:
    """(used, ignored) entries for `plan`, in mail order; `lines` and `offset` as
    ingest.comparisons.table_lines gives them."""
    used: list[Entry] = []
    ignored: list[Entry] = []
    params = plan.parameters
    table_line = (plan.table.line - offset - 1) if plan.table is not None else len(lines)

    def where(i: int, j: int | None = None) -> str:
        a = offset + i + 1
        return f"line {a}" if j is None or j == i else f"lines {a}-{offset + j + 1}"

    robot = plan.table.robot if plan.table is not None else None
    own_testcase = robot is not None and robot.testcase == plan.testcase
    # the testcase's headline: the mail's own, or its row in the "also has significant
    # impact" box (then that box's machine is the one nr_task shares)
    impact = None if own_testcase else _impact_row(lines, table_line, plan.testcase)
    headline = _headline(lines) if impact is None else impact
    if headline is not None:
        used.append((where(headline), lines[headline].strip(), "the plan's KPI (the headline)"))
    if impact is not None and "%" in params.get("nr_task", ""):
        machine = _impact_machine(lines, impact)
        if machine is not None:
            used.append((where(machine), lines[machine].strip(), _SHARE))
    for i, line in enumerate(lines[:table_line]):
        if _COMMIT.match(line):
            used.append((where(i), line.strip(), "the commit to compare (a kernel to run on)"))
            break
    sides = _sides(lines, table_line)
    if sides:
        text = " / ".join(lines[i].strip() for i in sides)
        used.append((where(sides[0], sides[-1]), text, "base and commit: the kernels compared"))
    own = _own_block(lines, table_line, params, plan.from_dimensions)
    for i, line in enumerate(lines[:table_line]):
        m = _FACT.match(line)
        if m is None:
            continue
        key, value = m.groups()
        if key == "testcase" and value == plan.testcase and "testcase" in plan.becomes:
            used.append((where(i), line.strip(), plan.becomes["testcase"]))
        elif key == "test machine" and own_testcase and "%" in params.get("nr_task", ""):
            used.append((where(i), line.strip(), _SHARE))
    if own:
        head = own[0]  # the `parameters:` line itself
        used.append((where(head), lines[head].strip(), "the robot's parameter set (below)"))
        for i, key, value in lkp.parameter_lines(lines, head + 1, own[-1] + 1):
            _param(used, ignored, where(i), f"{key}: {value}", key, plan)
    if plan.from_dimensions:
        dims = _dimension_lines(lines, table_line)
        if dims is not None:
            head, values = dims
            text = f"{lines[head].strip()} {lines[values].strip()}"
            used.append((where(head, values), text, _dimension_summary(plan)))
            for key in sorted(params):
                if key not in plan.becomes and key not in _REQUIREMENT and key not in _CONTEXT:
                    ignored.append((where(values), f"{key}: {params[key]}", _left_out(plan, key)))
    return sorted(used, key=_order), sorted(ignored, key=_order)


def _left_out(plan: RobotPlan, key: str) -> str:
    return plan.left_out.get(
        key, f"a {plan.testcase} parameter iolab does not map (the plan keeps LKP's default)"
    )


_SHARE = "its thread count: nr_task's share"
_MACHINE_CELL = re.compile(r"^\s*\|\s*test machine\s*\|")


def _impact_row(lines: list[str], end: int, testcase: str) -> int | None:
    row = re.compile(rf"^\s*\|\s*testcase: change\s*\|\s*{re.escape(testcase)}:")
    return next((i for i, line in enumerate(lines[:end]) if row.match(line)), None)


def _impact_machine(lines: list[str], row: int) -> int | None:
    for i in range(row + 1, min(row + 6, len(lines))):
        if _MACHINE_CELL.match(lines[i]):
            return i
    return None


def _param(
    used: list[Entry],
    ignored: list[Entry],
    where: str,
    text: str,
    key: str,
    plan: RobotPlan,
) -> None:
    if key in plan.becomes:
        used.append((where, text, plan.becomes[key]))
    elif key in _REQUIREMENT:
        used.append((where, text, "stated in the plan: not reproduced here (the target's)"))
    elif key not in plan.parameters:
        ignored.append((where, text, "not the parameter set this plan follows"))
    else:
        ignored.append((where, text, _left_out(plan, key)))


def _headline(lines: list[str]) -> int | None:
    for i, line in enumerate(lines):
        if _NOTICED.search(line):
            return i
    for i, line in enumerate(lines):
        if _SUBJECT.match(line) and "%" in line:
            return i
    return None


def _sides(lines: list[str], end: int) -> list[int]:
    """The two `sha ("subject")` lines under the `commit:` line nearest above the table."""
    for i in range(end - 1, -1, -1):
        if _COMMIT_HEAD.match(lines[i]):
            found = [j for j in range(i + 1, min(i + 4, end)) if _SIDE.match(lines[j])]
            return found[:2]
    return []


def _own_block(
    lines: list[str], end: int, params: Mapping[str, str], from_dimensions: bool
) -> list[int]:
    """The lines of the robot's `parameters:` block when they are the plan's set."""
    start = next((i for i, line in enumerate(lines[:end]) if lkp.parameters_head(line)), None)
    if start is None:
        return []
    found = lkp.parameter_lines(lines, start + 1, end)
    same = all(params.get(key, value) == value for _, key, value in found)
    if from_dimensions and not same:
        return []  # the robot's block is another testcase's set (a mail with several)
    return [start, *(i for i, _, _ in found)] if found else []


def _dimension_lines(lines: list[str], end: int) -> tuple[int, int] | None:
    for i in range(end - 1, -1, -1):
        header = lkp.dimension_header(lines, i, end)
        if header is not None:
            return i, header[0]
    return None


def _dimension_summary(plan: RobotPlan) -> str:
    params = plan.parameters
    fio = [k for k in params if k in plan.becomes and k != "testcase"]
    required = [k for k in params if k in _REQUIREMENT]
    parts = [f"the plan's parameter set: {', '.join(sorted(fio))} → the fio job and filesystem"]
    if required:
        parts.append(f"{', '.join(sorted(required))} → stated requirements")
    context = [k for k in params if k in _CONTEXT]
    if context:
        parts.append(f"{', '.join(sorted(context))}: where the robot ran, not used")
    return "; ".join(parts)


def _order(entry: Entry) -> int:
    digits = "".join(ch if ch.isdigit() else " " for ch in entry[0]).split()
    return int(digits[0]) if digits else 0
