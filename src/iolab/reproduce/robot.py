"""The plan a 0-day/LKP fio-basic report implies: its parameters as an iolab plan's YAML.

LKP's fio-basic (lkp-tests setup/fio-setup-basic) writes one fio job from the report's
parameters: `size = test_size / nr_task`, defaults `bs=4k ioengine=sync runtime=300
rw=write iodepth=32 direct=0 fallocate=posix invalidate=1`, one `[task_N]` per storage with
`numjobs = nr_task / storages`, `filename=fio_testfile` in the mounted directory, and a
`create_only=1` pass first that lays the file out.  `nr_task: 50%` is a share of the test
machine's CPU threads.  This module writes the same job for iolab's lab, says where it could
not follow the robot (sizes a loop image cannot hold are scaled; the robot's disk and CPU
governor become stated requirements), and points every choice at the parameter it came from.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from iolab.errors import IolabError
from iolab.model.comparison import Comparison, RobotMail

FILESYSTEMS = ("ext4", "xfs", "btrfs")
MAPPED = ("fio-basic", "fsmark")  # the LKP testcases a plan is written for (fsmark: as fio)
# what each fio-basic parameter becomes in the plan
FIO_BASIC_BECOMES = {
    "testcase": "the LKP job the plan writes (setup/fio-setup-basic)",
    "rw": "fio rw",
    "bs": "fio bs",
    "ioengine": "fio ioengine",
    "iodepth": "fio iodepth",
    "direct": "fio direct",
    "nr_task": "fio numjobs",
    "test_size": "fio size (test_size / nr_task, scaled to the loop image if it does not fit)",
    "runtime": "the plan's runtime",
    "time_based": "fio time_based",
    "fs": "the plan's filesystem",
}
_SUFFIX = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}
_THREADS = re.compile(r"(\d+)\s+threads\b")
_TOKEN = re.compile(r"[A-Za-z0-9_.%:+-]{1,64}")
# the parameters whose values the plan's fio job or keys take over
_FIO_KEYS = (
    *("rw", "bs", "ioengine", "iodepth", "direct", "nr_task"),
    *("fs", "test_size", "runtime", "time_based", "testcase"),
)
# fio-basic headline metrics → iolab metric names
_KPI = {
    "write_iops": "write.iops",
    "read_iops": "read.iops",
    "write_bw_MBps": "write.bw_bytes",
    "read_bw_MBps": "read.bw_bytes",
}


@dataclass
class RobotPlan:
    """The plan's YAML text and what it could not take over as the robot had it."""

    text: str
    notes: list[str] = field(default_factory=list)
    parameters: dict[str, str] = field(default_factory=dict)  # the set the plan follows
    table: Comparison | None = None  # the table whose parameter set it is
    from_dimensions: bool = False  # the set is the table's dimension header (not `parameters:`)
    testcase: str = "fio-basic"  # the LKP testcase whose parameters these are
    # what each parameter of the testcase becomes in the plan, and why the plan leaves
    # others out (what `iolab reproduce` lists as used and ignored: reproduce.robot_lines)
    becomes: dict[str, str] = field(default_factory=dict)
    left_out: dict[str, str] = field(default_factory=dict)


def to_bytes(text: str) -> int:
    """LKP's to_byte: `128G`, `100G`, `4k`, `512M` (1024-based), or plain bytes."""
    m = re.fullmatch(r"\s*(\d+)\s*([kmgt]?)i?b?\s*", text, re.IGNORECASE)
    if m is None:
        raise IolabError(f"robot parameter size {text!r}: expected a number with k/M/G/T")
    return int(m.group(1)) * _SUFFIX[m.group(2).lower()]


def _size_text(n: int) -> str:
    for suffix, unit in (("G", 1 << 30), ("M", 1 << 20), ("k", 1 << 10)):
        if n % unit == 0:
            return f"{n // unit}{suffix}"
    return str(n)


def _flag(text: str | None) -> bool:
    """LKP's parse_bool: empty/0/no/false are off, anything else (1, tb, direct) is on."""
    return text is not None and text.strip().lower() not in ("", "0", "no", "false", "n")


def nr_jobs(nr_task: str, machine: str | None) -> tuple[int, str]:
    """`1` → 1; `8t` → 8 (LKP's task count, as its fio-basic read jobs write it); `50%` →
    half of the test machine's threads (from "72 threads …")."""
    text = nr_task.strip()
    if text.endswith("%"):
        threads = _THREADS.search(machine or "")
        if threads is None:
            raise IolabError(
                f"robot parameter nr_task {text!r} is a share of the test machine's CPUs, "
                "and the report names no thread count"
            )
        share = float(text[:-1])
        n = max(int(int(threads.group(1)) * share / 100), 1)
        return n, f"nr_task: {text} of the test machine's {threads.group(1)} threads"
    tasks = re.fullmatch(r"(\d+)\s*t", text)  # `8t`: 8 tasks (jobs/fio-basic/*-read.yaml)
    if tasks is not None and int(tasks.group(1)) >= 1:
        return int(tasks.group(1)), f"nr_task: {text} (tasks)"
    if not text.isdigit() or int(text) < 1:
        raise IolabError(
            f"robot parameter nr_task {text!r}: expected a count (8, 8t) or a share (50%)"
        )
    return int(text), f"nr_task: {text}"


def plain_parameters(parameters: Mapping[str, str], keys: tuple[str, ...]) -> dict[str, str]:
    """The robot's parameters as text, those of `keys` checked to be one plain token each:
    their values go into a fio job file, never as an option of their own."""
    p = {k: str(v) for k, v in parameters.items()}
    for key in keys:
        if key in p and not _TOKEN.fullmatch(p[key]):
            raise IolabError(f"robot parameter {key} {p[key]!r}: not a plain value")
    return p


def fio_basic_plan(
    parameters: Mapping[str, str],
    *,
    name: str = "lkp-fio-basic",
    machine: str | None = None,
    robot: RobotMail | None = None,
    metric: str | None = None,
    target_size: int = 1 << 30,
) -> RobotPlan:
    """The plan of an LKP fio-basic parameter set (`parameters:` block or dimensions), drafted
    as any reproduction is (reproduce.draft.Draft, written by reproduce.writer).

    `target_size` is the loop image iolab makes; a `test_size` that does not fit in half of
    it is scaled to that half (said in the plan and in `notes`).  The robot's base and commit
    become two kernel variants by commit (`kernel: {commit: SHA}`), its subjects beside them."""
    from iolab.reproduce.draft import Draft, Ref, fit, seconds

    p = plain_parameters(parameters, _FIO_KEYS)
    if p.get("testcase", "fio-basic") != "fio-basic":
        raise IolabError(f"testcase {p['testcase']!r}: only fio-basic reports map to a fio plan")
    fs = p.get("fs")
    if fs is not None and fs not in FILESYSTEMS:
        raise IolabError(f"robot parameter fs {fs!r}: iolab makes {', '.join(FILESYSTEMS)}")
    if "test_size" not in p:
        raise IolabError("robot parameters name no test_size (fio-basic requires it)")
    if p.get("raw_disk") and _flag(p.get("raw_disk")):
        raise IolabError("robot parameter raw_disk: a raw-device fio-basic run is not mapped yet")
    notes: list[str] = []
    jobs, jobs_why = nr_jobs(p.get("nr_task", "1"), machine)
    test_size = to_bytes(p["test_size"])
    per_job = max(test_size // jobs, 1 << 20)
    runtime = seconds(p.get("runtime", "300"))
    if runtime is None:
        raise IolabError(f"robot parameter runtime {p['runtime']!r}: expected seconds (300s)")
    bs, rw = p.get("bs", "4k"), p.get("rw", "write")
    ioengine, iodepth = p.get("ioengine", "sync"), p.get("iodepth", "32")
    direct = 1 if _flag(p.get("direct")) else 0
    for key in ("disk", "cpufreq_governor", "ucode", "numa_mem_policy", "numa_cpu_nodes"):
        if key in p:
            notes.append(f"not reproduced here: {key}: {p[key]} (a requirement of the target)")
    job = [
        "[global]", f"bs={bs}", f"ioengine={ioengine}", f"iodepth={iodepth}",
        f"size={per_job}", f"direct={direct}", "runtime={runtime}", "invalidate=1",
        "fallocate=posix", "nr_files=1", "group_reporting",
        *(["time_based"] if _flag(p.get("time_based")) else []),
        "", "[task_0]", f"rw={rw}",
        *(["directory={mnt}", "filename=fio_testfile"] if fs is not None else ["filename={dev}"]),
        f"numjobs={jobs}",
    ]  # fmt: skip
    params = ", ".join(f"{k}: {p[k]}" for k in ("bs", "rw", "ioengine", "iodepth") if k in p)
    draft = Draft(
        name=name,
        description=_describe(p, jobs),
        source="a 0-day/LKP fio-basic report (LKP's job: lkp-tests setup/fio-setup-basic)",
        fstype=fs,
        fstype_ref=Ref("robot parameter", f"fs: {fs}") if fs else None,
        target_size=target_size,
        target_note=f"a loop image; the robot's disk: {p.get('disk', '?')}",
        workload_kind="fio",
        fio_text="\n".join(job) + "\n",
        workload_ref=Ref(
            "robot parameters",
            f"{params or 'LKP defaults'}, direct: {direct}, {jobs_why}, "
            f"size = test_size / nr_task = {per_job} bytes",
        ),
        kpis=[_kpi(metric, rw)],
        kpi_note=f"the report's headline metric: {metric}" if metric else "LKP's fio-basic metric",
        timeout=f"{runtime + max(runtime // 2, 60)}s",
        quick_timeout="60s",
    )
    draft.vars["runtime"] = (f"{runtime}s", f"robot parameter runtime: {p.get('runtime', '300')}")
    draft.quick_vars["runtime"] = "2s"
    if fs is None:
        draft.notes.append("robot parameters name no fs: raw device")
    fit(draft, test_size, f"robot parameter test_size: {p['test_size']}")
    plan = finish(draft, notes, robot, machine)
    plan.becomes = dict(FIO_BASIC_BECOMES)
    return plan


def finish(draft: Any, notes: list[str], robot: RobotMail | None, machine: str | None) -> RobotPlan:
    """What every robot plan gets: the base and the commit as two kernel variants by commit
    (`kernel: {commit: SHA}`, their subjects beside them), the report's link and machine,
    the notes; rendered."""
    from iolab.reproduce.draft import Ref, Variant
    from iolab.reproduce.writer import render

    if robot is not None and robot.base and robot.commit:
        draft.variants = [
            Variant("base", {"kernel": {"commit": robot.base}},
                    Ref("base", _subject(robot.base, robot.base_subject))),
            Variant("commit", {"kernel": {"commit": robot.commit}},
                    Ref("commit", _subject(robot.commit, robot.subject))),
        ]  # fmt: skip
        draft.baseline = "base"
        draft.quick_here = "on the kernel this host runs: a check that the plan runs builds none"
        draft.variants_note = (
            "the robot compares its commit against the base: each kernel built from that "
            "commit of the repository given with --kernel-repo"
        )
    elif robot is not None and (robot.base or robot.commit):
        draft.variants_note = (
            f"the report names only one side (commit {robot.commit or '?'}, base "
            f"{robot.base or '?'}): no kernel variants"
        )
    notes += [n for n in draft.notes if n.startswith("SCALED")]
    if robot is not None and robot.link:
        draft.comments.append(f"report: {robot.link}")
    if machine:
        draft.comments.append(f"robot's test machine: {machine}")
    draft.comments += [f"NOTE: {n}" for n in notes]
    draft.notes = notes
    text = render(draft)
    return RobotPlan(text, notes)


def _subject(sha: str, subject: str | None) -> str:
    return f'{sha[:12]} ("{subject}")' if subject else sha


def _kpi(metric: str | None, rw: str) -> str:
    if metric and metric.startswith("fio."):
        found = _KPI.get(metric[4:])
        if found:
            return found
    return "read.iops" if rw in ("read", "randread") else "write.iops"


def _describe(p: Mapping[str, str], jobs: int) -> str:
    keys = ("fs", "rw", "bs", "ioengine")
    parts = [f"{k}={p[k]}" for k in keys if k in p]
    return f"LKP fio-basic {' '.join(parts)} numjobs={jobs}"
