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
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from iolab.errors import IolabError
from iolab.model.comparison import Comparison

FILESYSTEMS = ("ext4", "xfs", "btrfs")
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


def _seconds(text: str) -> int:
    m = re.fullmatch(r"\s*(\d+)\s*(s|m|h)?\s*", text)
    if m is None:
        raise IolabError(f"robot parameter runtime {text!r}: expected seconds (300s)")
    return int(m.group(1)) * {None: 1, "s": 1, "m": 60, "h": 3600}[m.group(2)]


def _flag(text: str | None) -> bool:
    """LKP's parse_bool: empty/0/no/false are off, anything else (1, tb, direct) is on."""
    return text is not None and text.strip().lower() not in ("", "0", "no", "false", "n")


def nr_jobs(nr_task: str, machine: str | None) -> tuple[int, str]:
    """`1` → 1; `50%` → half of the test machine's threads (from "72 threads …")."""
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
    if not text.isdigit() or int(text) < 1:
        raise IolabError(f"robot parameter nr_task {text!r}: expected a count or a share (50%)")
    return int(text), f"nr_task: {text}"


def fio_basic_plan(
    parameters: Mapping[str, str],
    *,
    name: str = "lkp-fio-basic",
    machine: str | None = None,
    commit: str | None = None,
    base: str | None = None,
    link: str | None = None,
    metric: str | None = None,
    target_size: int = 1 << 30,
) -> RobotPlan:
    """The plan YAML of an LKP fio-basic parameter set (`parameters:` block or dimensions).

    `target_size` is the loop image iolab makes; a `test_size` that does not fit in half of
    it is scaled to that half (said in the plan and in `notes`)."""
    p = {k: str(v) for k, v in parameters.items()}
    for key in _FIO_KEYS:
        if key in p and not _TOKEN.fullmatch(p[key]):
            # values go into a fio job file: one plain token each, never an option of its own
            raise IolabError(f"robot parameter {key} {p[key]!r}: not a plain value")
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
    size = test_size
    if test_size > target_size // 2:
        size = target_size // 2
        notes.append(
            f"test_size {p['test_size']} scaled to {_size_text(size)} to fit a "
            f"{_size_text(target_size)} loop image (the robot's file was "
            f"{test_size / size:.0f}x larger; cache and allocation behaviour differ)"
        )
    per_job = max(size // jobs, 1 << 20)
    runtime = _seconds(p.get("runtime", "300"))
    bs = p.get("bs", "4k")
    rw = p.get("rw", "write")
    ioengine = p.get("ioengine", "sync")
    iodepth = p.get("iodepth", "32")
    direct = 1 if _flag(p.get("direct")) else 0
    time_based = _flag(p.get("time_based"))
    for key in ("disk", "cpufreq_governor", "ucode", "numa_mem_policy", "numa_cpu_nodes"):
        if key in p:
            notes.append(f"not reproduced here: {key}: {p[key]} (a requirement of the target)")
    kpi = _kpi(metric, rw)

    q = _yaml_str
    c = _comment
    out = [
        "# Plan from a 0-day/LKP fio-basic report (iolab.reproduce.robot); each value names",
        "# the robot parameter it came from.  LKP's job: lkp-tests setup/fio-setup-basic.",
    ]
    if link:
        out.append(f"# report: {c(link)}")
    if base or commit:
        out.append(f"# compared: base {c(base or '?')} against commit {c(commit or '?')}: run")
        out.append("# this plan on each kernel (a kernel variant where the fleet offers one).")
    if machine:
        out.append(f"# robot's test machine: {c(machine)}")
    out += [f"# NOTE: {c(n)}" for n in notes]
    out += [
        f"name: {q(name)}",
        f"description: {q(_describe(p, jobs))}",
        "",
        "target:",
        f"  size: {_size_text(target_size)}  # a loop image; robot disk: {c(p.get('disk', '?'))}",
        "  backing: ram",
        "",
    ]
    if fs is None:
        out += ["filesystem: none  # robot parameters name no fs", ""]
    else:
        out += ["filesystem:", f"  type: {fs}  # robot parameter fs: {fs}", ""]
    out += [
        f"# fio: bs: {bs}, rw: {rw}, ioengine: {ioengine}, iodepth: {iodepth} "
        f"({'robot' if 'iodepth' in p else 'LKP default'}), direct: {direct}, {jobs_why},",
        f"# size = test_size / nr_task = {per_job} bytes, time_based: {time_based}.",
        "# LKP lays the file out first (create_only=1); fio does the same before its I/O.",
        "workload:",
        "  fio: |",
        "    [global]",
        f"    bs={bs}",
        f"    ioengine={ioengine}",
        f"    iodepth={iodepth}",
        f"    size={per_job}",
        f"    direct={direct}",
        "    runtime={runtime}",
        "    invalidate=1",
        "    fallocate=posix",
        "    nr_files=1",
        "    group_reporting",
    ]
    if time_based:
        out.append("    time_based")
    out += [
        "",
        "    [task_0]",
        f"    rw={rw}",
        "    directory={mnt}" if fs is not None else "    filename={dev}",
    ]
    if fs is not None:
        out.append("    filename=fio_testfile")
    out += [
        f"    numjobs={jobs}",
        "",
        "vars:",
        f"  runtime: {runtime}s  # robot parameter runtime: {c(p.get('runtime', '300 (default)'))}",
        "",
        "repeat: 5  # iolab's choice: the robot's run count is not in its parameters",
        "prepare:",
        "  mkfs: per-sample",
        "  drop_caches: true",
        "",
        f"kpis: [{kpi}]",
        f"timeout: {runtime + max(runtime // 2, 60)}s",
        "",
        "profiles:",
        "  quick:",
        "    vars: {runtime: 2s}",
        "    repeat: 3",
        "    timeout: 60s",
        "",
    ]
    return RobotPlan("\n".join(out), notes)


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


def _comment(text: str) -> str:
    """Text from a mail made safe for a YAML comment: one line, printable."""
    return "".join(ch if ch.isprintable() else " " for ch in text)[:300]


def _yaml_str(text: str) -> str:
    """A double-quoted YAML scalar (JSON's escapes are YAML's)."""
    import json

    return json.dumps(text)


def robot_plans(tables: Sequence[Comparison], target_size: int = 1 << 30) -> list[RobotPlan]:
    """One plan per fio-basic parameter set of a robot mail's tables (`iolab reproduce`).

    A set is a table whose dimension header says `testcase: fio-basic`, or, for a mail
    without dimension headers, the robot's own `parameters:` when its testcase is fio-basic."""
    plans: list[RobotPlan] = []
    seen: set[tuple[tuple[str, str], ...]] = set()
    for t in tables:
        robot = t.robot
        if robot is None:
            continue
        params = dict(t.dimensions)
        from_dimensions = bool(params)
        if not params and robot.testcase == "fio-basic":
            params = dict(robot.parameters)
        if params.get("testcase", robot.testcase) != "fio-basic" or not params:
            continue
        key = tuple(sorted(params.items()))
        if key in seen:
            continue
        seen.add(key)
        head = next((h for h in robot.headlines if h.testcase == "fio-basic"), None)
        plan = fio_basic_plan(
            params,
            name=f"lkp-fio-basic-{len(plans) + 1}" if plans else "lkp-fio-basic",
            machine=(head.machine if head else None) or robot.machine,
            commit=robot.commit,
            base=robot.base,
            link=robot.link,
            metric=head.metric if head else None,
            target_size=target_size,
        )
        plan.parameters, plan.table, plan.from_dimensions = params, t, from_dimensions
        plans.append(plan)
    return plans
