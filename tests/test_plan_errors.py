"""Bad plans: one line each, naming the file, the line and the key at fault."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from iolab.errors import EXIT_BAD_INPUT, PlanError
from iolab.plan import load_plan

GOOD = """\
name: t
filesystem:
  type: ext4
  mount_options: noatime
knobs:
  sysctl:
    vm.dirty_bytes: 100M
workload:
  fio: |
    [global]
    directory={mnt}
    rw=write
    size=1M
    [j]
kpis: [write.iops]
variants:
  a: {}
  b:
    fio: {fsync: 1}
"""


def load(tmp_path: Path, text: str, profile: str | None = None) -> str:
    """The PlanError message, with the temporary directory cut off."""
    path = tmp_path / "plan.yaml"
    path.write_text(text)
    with pytest.raises(PlanError) as info:
        load_plan(str(path), profile)
    assert info.value.exit_code == EXIT_BAD_INPUT
    message = info.value.message
    assert "\n" not in message
    return message.replace(str(tmp_path) + "/", "")


def test_good_plan_loads(tmp_path: Path) -> None:
    path = tmp_path / "plan.yaml"
    path.write_text(GOOD)
    assert [c.key for c in load_plan(str(path)).cases] == ["a", "b"]


# (how to break GOOD, expected message pattern)
BAD = [
    (
        ("    vm.dirty_bytes: 100M", "    vm.dirty_bytes: lots"),
        r"plan\.yaml:7: knobs\.sysctl\.vm\.dirty_bytes: 'vm\.dirty_bytes' must be a size "
        r"like 100M, got 'lots'",
    ),
    (
        ("kpis: [write.iops]", "kpis: [write.iops]\nmonitor: [jbd2]"),
        r"plan\.yaml:16: monitor: unknown key 'monitor' \(did you mean 'monitors'\?\)",
    ),
    (
        ("  mount_options: noatime", "  mount_option: noatime"),
        r"plan\.yaml:4: filesystem\.mount_option: unknown key 'mount_option' "
        r"\(did you mean 'mount_options'\?\)",
    ),
    (
        ("  type: ext4", "  type: ext5"),
        r"plan\.yaml:3: filesystem\.type: must be one of ext4, xfs, btrfs, got 'ext5' "
        r"\(did you mean 'ext4'\?\)",
    ),
    (
        ("    fio: {fsync: 1}", "    fio: {fsync: 1}\n    repeat: 3"),
        r"plan\.yaml:20: variants\.b\.repeat: 'repeat' applies to the whole plan, not to a variant",
    ),
    (
        ("    rw=write", "    rw=write\n    bs={blocksize}"),
        r"plan\.yaml:9: workload\.fio: unknown placeholder \{blocksize\}",
    ),
    (
        ("    rw=write", "    rw=bogus"),
        r"plan\.yaml:12: workload\.fio: fio rejects the job: .*rw=bogus",
    ),
    (
        ("  b:\n    fio: {fsync: 1}", "  b:\n    knobs: {queue.schedular: none}"),
        r"plan\.yaml:19: variants\.b\.knobs\.queue\.schedular: unknown queue setting "
        r"'schedular' \(did you mean 'scheduler'\?\)",
    ),
    (
        ("  a: {}", "  a: {}\n  a: {fio: {fsync: 0}}"),
        r"plan\.yaml:18: variants\.a: duplicate key \(first on line 17\)",
    ),
    (
        ("kpis: [write.iops]", "kpis: [jbd2.handles_per_txn]"),
        r"plan\.yaml:15: kpis\[0\]: iolab does not know whether more jbd2\.handles_per_txn "
        r"is better",
    ),
    (
        ("kpis: [write.iops]", "kpis: [write.iops]\nmatrix:\n  depth: [1, 2]"),
        r"plan\.yaml:17: matrix\.depth: \{depth\} appears in no workload",
    ),
    (
        ("kpis: [write.iops]", "kpis: [write.iops]\nrepeat: 0"),
        r"plan\.yaml:16: repeat: must be a whole number >= 1, got 0",
    ),
    (
        ("name: t", "name: t\ntarget: {kind: loop, size: 1G, backing: nvme}"),
        r"plan\.yaml:2: target\.backing: must be one of ram, disk, got 'nvme'",
    ),
    (
        ("name: t", "name: t\ntarget: {kind: device, devices: [sdb]}"),
        r"plan\.yaml:2: target\.devices\[0\]: must be a block device path under /dev/",
    ),
    (
        ("  type: ext4\n  mount_options: noatime", "  [ext4]"),
        r"plan\.yaml:3: filesystem: must be none, ext4, xfs, btrfs or a mapping, got a list",
    ),
    (
        ("  mount_options: noatime", "  mount_options: noatime\n  - x"),
        r"plan\.yaml:5: not valid YAML: ",
    ),
    (
        ("kpis: [write.iops]", "kpis: [write.iops]\nmatrix:\n  d: {path: knobs.vm.x, values: [1]}"),
        r"plan\.yaml:17: matrix\.d: path 'knobs\.vm\.x': use knobs\.sysctl\.NAME",
    ),
    (
        ("name: t", "name: t\ntarget:\n  size: 1M"),
        r"plan\.yaml:3: target\.size: a loop image needs at least 16M, got '1M'",
    ),
    (
        (
            "kpis: [write.iops]",
            "kpis: [write.iops]\nmatrix:\n  n:\n    values: [1, 2]\n    vars: {sz: [1M]}",
        ),
        r"plan\.yaml:19: matrix\.n\.vars\.sz: must list one value per dimension value \(2\)",
    ),
    (
        ("name: t", "name: t\nprofiles:\n  quick: {repeat: -1}"),
        r"plan\.yaml:3: profiles\.quick\.repeat: must be a whole number >= 1, got -1",
    ),
]


@pytest.mark.parametrize(("edit", "expected"), BAD, ids=[str(i) for i in range(len(BAD))])
def test_bad_plan_message(tmp_path: Path, edit: tuple[str, str], expected: str) -> None:
    old, new = edit
    assert old in GOOD
    message = load(tmp_path, GOOD.replace(old, new, 1))
    assert re.match(expected, message), message


def test_raw_device_plan_cannot_use_mount_point(tmp_path: Path) -> None:
    text = GOOD.replace("  type: ext4\n  mount_options: noatime", " none")
    text = text.replace("filesystem:\n none", "filesystem: none")
    message = load(tmp_path, text)
    assert re.match(r"plan\.yaml:\d+: workload\.fio: \{mnt\} needs a filesystem", message)


def test_unknown_profile(tmp_path: Path) -> None:
    text = GOOD + "profiles:\n  quick: {repeat: 1}\n"
    message = load(tmp_path, text, "quik")
    assert message.startswith("plan.yaml:20: profiles: no profile 'quik'")
    assert "did you mean 'quick'" in message


def test_target_count_too_small_for_placeholders(tmp_path: Path) -> None:
    text = GOOD.replace("directory={mnt}", "directory={mnt1}") + "target: {count: 1}\n"
    message = load(tmp_path, text)
    assert message.startswith("plan.yaml:20: target.count: the workload uses 2 devices")


def test_unreadable_and_empty(tmp_path: Path) -> None:
    with pytest.raises(PlanError, match="cannot read the plan"):
        load_plan(str(tmp_path / "missing.yaml"))
    assert load(tmp_path, "# nothing\n") == "plan.yaml:1: the plan is empty"
    assert load(tmp_path, "- a\n").startswith("plan.yaml:1: a plan is a mapping")
