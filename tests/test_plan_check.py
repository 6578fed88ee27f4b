"""`iolab plan check PLAN`: the plan validated, its cases listed, where it can run, and wall
times that follow from the plan's own timed parts."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from iolab.cli.main import cli
from iolab.plan import load_plan
from iolab.runs.meta import DEFAULT_MAX_BLOCKS
from iolab.runs.plan_check import check_plan

PLAN = """\
name: pc
repeat: 4
target: {kind: loop, size: 64M}
filesystem: {type: ext4}
workload:
  fio: |
    [global]
    directory={mnt}
    rw=write
    bs={bs}
    size=8m
    time_based
    runtime={runtime}
    ramp_time=1s
    [w]
vars: {runtime: 6s}
prepare: {warmup: 2s, settle: 1s}
variants:
  a: {}
  b: {filesystem: {mount_options: noatime}}
matrix:
  bs: [4k, 64k]
kpis: [write.bw_bytes]
profiles:
  quick:
    vars: {runtime: 1s}
    repeat: 2
"""


def invoke(*args: str) -> tuple[int, str, str]:
    done = CliRunner().invoke(cli, list(args), catch_exceptions=False)
    return done.exit_code, done.stdout, done.stderr


def write(tmp_path: Path, text: str) -> str:
    path = tmp_path / "plan.yaml"
    path.write_text(text)
    return str(path)


def test_cases_places_and_wall_times_follow_from_the_plan(tmp_path: Path) -> None:
    path = write(tmp_path, PLAN)
    plan = load_plan(path)
    found = check_plan(path)
    assert [c.key for c in found.cases] == [c.key for c in plan.cases]
    assert found.variants == ("a", "b") and found.matrix == {"bs": ("4k", "64k")}
    # one sample: ramp_time + runtime, the warm-up's runtime (the lab drops its ramp), settle
    per_sample = {c.seconds for c in found.cases}
    assert per_sample == {(1 + 6) + 2 + 1}
    run, quick, ab = found.times
    assert (run.how, quick.how, ab.how) == ("run", "run --quick", "ab")
    assert run.samples == plan.repeat * len(plan.cases) and not run.at_most
    assert run.seconds == run.samples * per_sample.pop()
    assert quick.blocks == load_plan(path, "quick").repeat and quick.seconds is not None
    assert run.seconds is not None and quick.seconds < run.seconds
    assert ab.blocks == DEFAULT_MAX_BLOCKS and ab.at_most and ab.seconds is not None
    assert ab.seconds / run.seconds == pytest.approx(DEFAULT_MAX_BLOCKS / plan.repeat)
    assert [p.where for p in found.places] == ["here", "a guest", "a fleet"]
    guest, fleet = found.places[1:]
    assert guest.ok and fleet.ok and "any host" in fleet.how


def test_warmups_count_once_here_and_once_per_boot(tmp_path: Path) -> None:
    """A warm-up is about a sample long: once per session, and a kernel plan's session is a
    boot."""
    run = check_plan(write(tmp_path, PLAN)).times[0]
    warm = check_plan(write(tmp_path, PLAN + "warmups: 2\n")).times[0]
    assert run.seconds is not None and warm.seconds is not None
    assert warm.seconds - run.seconds == pytest.approx(2 * run.seconds / run.samples)
    kernels = PLAN.replace("  a: {}", "  a: {kernel: 6.1.0-47-cloud-amd64}")
    one = check_plan(write(tmp_path, kernels)).times[0]
    booted = check_plan(write(tmp_path, kernels + "warmups: 1\n")).times[0]
    assert one.seconds is not None and booted.seconds is not None and booted.boots > 1
    per = one.seconds / one.samples
    assert booted.seconds - one.seconds == pytest.approx(booted.boots * per)


def test_text_and_json_forms(tmp_path: Path) -> None:
    path = write(tmp_path, PLAN)
    code, text, _ = invoke("plan", "check", path)
    assert code == 0, text
    assert "a valid plan" in text and "a/bs=4k" in text and "here:" in text
    assert "run --quick" in text and "ab" in text
    out = tmp_path / "check.json"
    code, stdout, _ = invoke("plan", "check", "--format", "json", "-o", str(out), path)
    assert code == 0 and stdout == ""
    data = json.loads(out.read_text())
    assert data["valid"] and len(data["cases"]) == 4
    assert [t["how"] for t in data["wall_time"]] == ["run", "run --quick", "ab"]


def test_an_invalid_plan_exits_2_with_its_line(tmp_path: Path) -> None:
    path = write(tmp_path, PLAN.replace("repeat: 4", "repeat: many"))
    code, stdout, stderr = invoke("plan", "check", path)
    assert code == 2 and stdout == ""
    assert stderr.startswith(f"iolab: {path}:2:") and "repeat" in stderr


def test_a_kernel_plan_runs_on_a_fleet_or_a_guest_not_here(tmp_path: Path) -> None:
    text = PLAN.replace("  a: {}", "  a: {kernel: 6.1.0-47-cloud-amd64}")
    found = check_plan(write(tmp_path, text))
    here, guest, fleet = found.places
    assert not here.ok and "--fleet" in here.how
    assert guest.ok and "guest up" in guest.how and "6.1.0-47-cloud-amd64" in guest.how
    assert fleet.ok and "boot 6.1.0-47-cloud-amd64" in fleet.how
    run = found.times[0]
    assert 0 < run.boots <= run.samples  # a boot per sample of the kernel's variant


def test_a_requirement_no_lab_builds_runs_nowhere(tmp_path: Path) -> None:
    found = check_plan(write(tmp_path, PLAN + "requires: {nvme: a real NVMe drive}\n"))
    assert [p.ok for p in found.places] == [False, False, False]
    assert all("nvme" in p.how for p in found.places)


def test_no_quick_profile_and_one_variant(tmp_path: Path) -> None:
    text = PLAN.split("profiles:")[0].replace(
        "variants:\n  a: {}\n  b: {filesystem: {mount_options: noatime}}\n", ""
    )
    found = check_plan(write(tmp_path, text))
    run, quick, ab = found.times
    assert run.seconds is not None
    assert quick.seconds is None and "quick" in quick.why
    assert ab.seconds is None and "variants" in ab.why


def test_a_workload_bounded_by_size_counts_at_its_timeout(tmp_path: Path) -> None:
    text = PLAN.replace("    time_based\n    runtime={runtime}\n", "").replace(
        "vars: {runtime: 6s}\n", "timeout: 90s\n"
    )
    text = text.split("profiles:")[0]
    found = check_plan(write(tmp_path, text))
    assert all(c.bounded for c in found.cases)
    assert found.times[0].at_most
    assert {c.seconds for c in found.cases} == {90 + 2 + 1}


def test_0s_is_a_duration_and_a_timeout_must_be_longer(tmp_path: Path) -> None:
    from iolab.errors import PlanError

    plan = load_plan(
        write(tmp_path, PLAN.replace("{warmup: 2s, settle: 1s}", "{warmup: 0s, settle: 0s}"))
    )
    assert all(c.prepare.warmup is None and c.prepare.settle_s == 0 for c in plan.cases)
    minutes = load_plan(write(tmp_path, PLAN.replace("settle: 1s", "settle: 1.5min")))
    assert {c.prepare.settle_s for c in minutes.cases} == {90.0}
    with pytest.raises(PlanError, match="timeout: must be longer than 0s"):
        load_plan(write(tmp_path, PLAN + "timeout: 0s\n"))


def test_a_plan_naming_kernel_commits_runs_with_ab_kernel_repo(tmp_path: Path) -> None:
    text = PLAN.replace("  a: {}", "  a: {kernel: {commit: 3430818739}}").replace(
        "  b: {filesystem: {mount_options: noatime}}", "  b: {kernel: {commit: 4e159150a9}}"
    )
    found = check_plan(write(tmp_path, text))
    here, guest, fleet = found.places
    assert not here.ok
    assert guest.ok and fleet.ok and "--kernel-repo" in fleet.how and "4e159150a9" in fleet.how
    assert {c.kernel for c in found.cases} == {"commit 3430818739", "commit 4e159150a9"}
