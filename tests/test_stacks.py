"""Stacked targets on the host: plans read (kinds, knobs, only:, requirements), and refused in
one line (exit 3, no store made) where the kernel lacks md, dm-multipath or null_blk.

The guest tests (tests/test_guest_stacks.py) build and measure them for real."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from iolab.errors import EXIT_REFUSED, PlanError
from iolab.lab import stack
from iolab.plan import load_plan
from iolab.plan.model import Plan

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
RAW = """\
filesystem: none
workload:
  fio: |
    [j]
    filename={dev}
    rw=write
    bs=128k
    size=1M
kpis: [write.bw_bytes]
"""
NULLB = "name: nb\ntarget: {kind: null_blk, queue_mode: mq, irqmode: none}\n" + RAW


def plan_of(tmp_path: Path, text: str, profile: str | None = None) -> Plan:
    path = tmp_path / "plan.yaml"
    path.write_text(text)
    return load_plan(str(path), profile)


def error_of(tmp_path: Path, text: str) -> str:
    with pytest.raises(PlanError) as info:
        plan_of(tmp_path, text)
    return info.value.message.replace(str(tmp_path) + "/", "")


def test_the_seed_plans_expand(tmp_path: Path) -> None:
    zero = load_plan(str(EXAMPLES / "0day-ext4-raid-writeback.yaml"))
    # 3 raid x 3 writers x 3 thresholds, and the stripe-cache variant in the 9 raid5 cells
    assert len(zero.cases) == 27 + 9
    raid5 = [c for c in zero.cases if c.variant == "stripe-cache-4096"]
    assert {c.cell["raid"] for c in raid5} == {"raid5"}
    assert all(c.md == {"stripe_cache_size": "4096"} for c in raid5)
    kinds = {c.cell["raid"]: c.target for c in zero.cases}
    assert kinds["jbod"].kind == "loop" and kinds["jbod"].count == 12
    assert kinds["raid0"].md is not None and kinds["raid0"].md.level == 0
    assert kinds["raid5"].md is not None and kinds["raid5"].md.resync == "assume-clean"
    assert kinds["raid5"].members == 12 and kinds["raid5"].md.chunk_bytes == 64 << 10
    assert zero.requirements() == {"md", "raid0", "raid5"}
    quick = load_plan(str(EXAMPLES / "0day-ext4-raid-writeback.yaml"), "quick")
    assert len(quick.cases) == 3 * 2 + 2 and quick.repeat == 2
    mp = load_plan(str(EXAMPLES / "multipath-mq-deadline.yaml"), "quick")
    assert mp.requirements() == {"dm-multipath"}
    assert {c.variant: c.member_queue["scheduler"] for c in mp.cases} == {
        "mq-deadline": "mq-deadline",
        "none": "none",
    }
    assert all(c.queue == {} for c in mp.cases)  # the map itself keeps its default


@pytest.mark.parametrize(
    ("target", "knobs", "wanted"),
    [
        ("{kind: md, level: 5, members: 3}", "", "RAID5 has an initial resync: say resync"),
        ("{kind: md, level: 6, members: 3, resync: wait}", "", "RAID6 needs at least 4"),
        ("{raid: raid0, members: 2}", "{queue.scheduler: mq-deadline}", "is bio-based"),
        ("{raid: raid0, members: 2}", "{md.stripe_cache_size: 512}", "RAID0 has no stripe_"),
        ("{kind: loop}", "{md.stripe_cache_size: 512}", "md knobs need an md target"),
        (
            "{raid: raid5, members: 3, resync: wait}",
            "{md.stripe_cache_size: 16}",
            "stripe_cache_size is 17..32768",
        ),
        ("{kind: multipath, paths: 2, faults: [{at: 1s, fail: 2}]}", "", "there are 2 paths"),
        (
            "{kind: multipath, paths: 2, faults: [{at: 1s, fail: 0}, {at: 2s, fail: 1}]}",
            "",
            "would leave no path",
        ),
        ("{kind: multipath, paths: 2, count: 9}", "", "at most 8 multipath maps, got 9"),
        (
            "{kind: multipath, paths: 2, count: 2, faults: [{at: 1s, fail: 1}]}",
            "",
            "this target has 2 (count: 1 for faults)",
        ),
        ("{kind: null_blk, completion_nsec: 5}", "", "needs irqmode: timer"),
        ("{kind: null_blk, blocksize: 3000}", "", "must be one of 512"),
        ("{kind: null_blk}", "{member_queue.scheduler: none}", "no members"),
        ("{kind: null_blk, queue_mode: bio}", "{queue.nr_requests: 64}", "is bio-based"),
    ],
)
def test_bad_stack_plans_fail_in_one_line(
    tmp_path: Path, target: str, knobs: str, wanted: str
) -> None:
    text = f"name: t\ntarget: {target}\n" + (f"knobs: {knobs}\n" if knobs else "") + RAW
    message = error_of(tmp_path, text)
    assert wanted in message, message
    assert "\n" not in message


def test_multipath_count_is_one_map_per_device(tmp_path: Path) -> None:
    """`count: 2`: {dev0} and {dev1} are two maps, each over its own 2 paths; a workload
    naming more devices than maps is refused, pointing at count."""
    two = RAW.replace("filename={dev}", "filename={dev0}\n    [k]\n    filename={dev1}")
    text = "name: t\ntarget: {kind: multipath, paths: 2, count: 2, size: 64M}\n" + two
    case = plan_of(tmp_path, text).cases[0]
    assert (case.target.kind, case.target.count, case.target.members) == ("multipath", 2, 2)
    assert stack.describe(case.target) == "2 dm-multipath maps over 2 paths each"
    from iolab.lab.runner import plan_loop_needs

    assert [n for _, n in plan_loop_needs(plan_of(tmp_path, text))] == [2 * (64 << 20)]
    one = text.replace(", count: 2", "")
    message = error_of(tmp_path, one)
    assert "uses 2 devices" in message and "is 1 multipath map (count: 2 makes" in message


def test_several_maps_have_numbered_roles() -> None:
    """Two maps' devices carry top0/top1, their paths path0..path3 (map 0's first): the
    names the per-layer table and dm.path<i> metrics share."""
    from iolab.lab.evidence import role_labels
    from iolab.lab.target import Device, Target

    made = Target(
        devices=[Device("/dev/dm-3", "dm-3"), Device("/dev/dm-4", "dm-4")],
        members=[Device(f"/dev/loop{i}", f"loop{i}") for i in range(4)],
        maps=["a", "b"],
    )
    assert role_labels(made) == {
        "dm-3": "top0", "dm-4": "top1",
        "loop0": "path0", "loop1": "path1", "loop2": "path2", "loop3": "path3",
    }  # fmt: skip
    made.devices, made.maps = made.devices[:1], ["a"]
    assert role_labels(made)["dm-3"] == "top"


def test_a_filesystem_on_null_blk_needs_memory_backed(tmp_path: Path) -> None:
    text = NULLB.replace("filesystem: none", "filesystem: ext4").replace("{dev}", "{mnt}/f")
    assert "memory_backed: true" in error_of(tmp_path, text)


def test_only_limits_a_variant_to_cells(tmp_path: Path) -> None:
    text = (
        "name: t\ntarget: {members: 3, size: 16M, resync: wait}\n"
        + RAW.replace("filename={dev}", "filename={dev}")
        + "matrix: {raid: [raid0, raid5]}\n"
        "variants:\n  base: {}\n  big: {only: {raid: raid5}, knobs: {md.stripe_cache_size: 1024}}\n"
    )
    plan = plan_of(tmp_path, text)
    assert sorted((c.variant, c.cell["raid"]) for c in plan.cases) == [
        ("base", "raid0"),
        ("base", "raid5"),
        ("big", "raid5"),
    ]
    bad = text.replace("only: {raid: raid5}", "only: {raid: raid9}")
    assert "must be one of raid's values" in error_of(tmp_path, bad)
    base_only = text.replace("base: {}", "base: {only: {raid: raid0}}")
    assert "is the baseline" in error_of(tmp_path, base_only)


def test_requirements_implied_and_stated(tmp_path: Path) -> None:
    md = "name: t\ntarget: {raid: raid5, members: 3, resync: wait}\n" + RAW
    assert plan_of(tmp_path, md).requirements() == {"md", "raid5"}
    assert plan_of(tmp_path, md).elsewhere() is None
    met = md + "requires: {md: 12 disks, raid5: ''}\n"
    assert plan_of(tmp_path, met).elsewhere() is None
    # a stated stack the target is not, or a name iolab cannot build: refused as before
    loop = "name: t\n" + RAW + "requires: {dm-multipath: 2 paths}\n"
    why = plan_of(tmp_path, loop).elsewhere()
    assert why is not None and "dm-multipath (2 paths), but a target is loop" in why
    other = md + "requires: [nvme]\n"
    why = plan_of(tmp_path, other).elsewhere()
    assert why is not None and "nvme" in why


def _iolab(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "iolab", "--db", str(tmp_path / "s.db"), *args],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )


def _kernel_lacks(plan_path: Path) -> str | None:
    plan = load_plan(str(plan_path), "quick" if plan_path.parent == EXAMPLES else None)
    problems = {stack.support_problem(c.target) for c in plan.cases} - {None}
    return next(iter(problems), None)


@pytest.mark.parametrize(
    "name", ["0day-ext4-raid-writeback.yaml", "multipath-mq-deadline.yaml", "null_blk"]
)
def test_stacks_refused_where_the_kernel_lacks_them(tmp_path: Path, name: str) -> None:
    """On a kernel without md / dm-multipath / null_blk (this build host): one line, exit 3,
    and no store file — nothing was touched."""
    if name == "null_blk":
        path = tmp_path / "nb.yaml"
        path.write_text(NULLB)
        args = ["run", str(path)]
    else:
        path = EXAMPLES / name
        args = ["run", "--quick", str(path)]
    if _kernel_lacks(path) is None:
        pytest.skip("this kernel has the stack: the guest tests run it")
    proc = _iolab(tmp_path, *args)
    assert proc.returncode == EXIT_REFUSED, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("iolab: refusing target "), proc.stderr
    assert "this kernel has no" in lines[0]
    assert not (tmp_path / "s.db").exists()


def test_the_per_layer_table_lists_each_map_then_the_paths() -> None:
    """With two maps the table has top0 and top1 first, then path0..path3 in order."""
    from iolab.report.layout import _layer_block
    from iolab.stats.comparison import compare_metric
    from iolab.stats.types import MetricInput

    names = ["path3", "top1", "path0", "top0", "path2", "path1"]
    metrics = [
        compare_metric(MetricInput(f"diskstats.{n}.write_ios", [10.0, 11, 12], [20.0, 21, 22]))
        for n in names
    ]
    block = _layer_block(metrics)
    assert block is not None
    assert [row[0] for row in block.rows] == ["top0", "top1", "path0", "path1", "path2", "path3"]
    assert _layer_block(metrics[1:2] + metrics[3:4]) is None  # the maps alone: no layers below
