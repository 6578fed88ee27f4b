"""`kernel: {commit: SHA}`: a variant's kernel named by a commit of a kernel repository (built
for it), beside release variants; a run without a kernel repository refuses it in one line."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from iolab.cli.main import cli
from iolab.errors import PlanError
from iolab.plan import load_plan

BASE = """\
name: kcommit
repeat: 2
target: {kind: loop, size: 64M}
filesystem: {type: ext4}
workload:
  fio: |
    [w]
    rw=write
    size=1m
kpis: [write.bw_bytes]
"""
BASE_SHA = "4d0d4b9c0b1e5b6a0f2c5b9e8a7d6c5b4a3f2e1d"
NEW_SHA = "a1b2c3d4e5f6"


def write(tmp_path: Path, text: str) -> str:
    path = tmp_path / "plan.yaml"
    path.write_text(BASE + text)
    return str(path)


def test_variants_by_commit_and_by_release(tmp_path: Path) -> None:
    plan = load_plan(
        write(
            tmp_path,
            f"variants:\n  base: {{kernel: {{commit: {BASE_SHA}}}}}\n"
            f"  head: {{kernel: {{commit: {NEW_SHA}, cmdline: quiet}}}}\n"
            "  release: {kernel: 6.1.0-50-cloud-amd64}\n",
        )
    )
    base, head, release = plan.cases
    assert (base.kernel, base.kernel_commit) == (None, BASE_SHA)
    assert (head.kernel_commit, head.kernel_cmdline) == (NEW_SHA, ("quiet",))
    assert (release.kernel, release.kernel_commit) == ("6.1.0-50-cloud-amd64", None)
    assert plan.switches_kernels and plan.kernel_commits() == (BASE_SHA, NEW_SHA)
    assert "--kernel-repo DIR" in (plan.needs_kernel_repo() or "")
    assert "commit 4d0d4b9c0b1e" in (plan.needs_worker() or "")


@pytest.mark.parametrize(
    ("kernel", "line", "message"),
    [
        ("{commit: v6.1}", 12, "'v6.1' is not a commit sha (7 to 40 lower-case hex digits)"),
        ("{commit: abc}", 12, "'abc' is not a commit sha"),
        (f"{{commit: {NEW_SHA}, release: 6.1.0}}", 12, "give release: (a built kernel) or commit:"),
        ("{cmdline: quiet}", 12, "needs release: (the kernel as `uname -r` prints it) or commit:"),
        ("{sha: abc1234}", 12, "unknown key 'sha'"),
    ],
)
def test_a_bad_commit_is_refused_at_its_line(
    tmp_path: Path, kernel: str, line: int, message: str
) -> None:
    path = write(tmp_path, f"variants:\n  a: {{kernel: {kernel}}}\n")
    with pytest.raises(PlanError) as caught:
        load_plan(path)
    assert f"plan.yaml:{line}" in caught.value.message
    assert message in caught.value.message


@pytest.mark.parametrize("command", ["run", "ab"])
def test_run_and_ab_without_a_kernel_repository_refuse_in_one_line(
    tmp_path: Path, command: str
) -> None:
    """The same exit status as a release-kernel plan run without --fleet (2)."""
    path = write(tmp_path, f"variants:\n  base: {{kernel: {{commit: {BASE_SHA}}}}}\n  now: {{}}\n")
    db = str(tmp_path / "s.db")
    done = CliRunner().invoke(cli, ["--db", db, command, path])
    assert done.exit_code == 2, done.output
    (line,) = done.stderr.strip().splitlines()
    # `iolab run` has no --kernel-repo: the line names the command that builds them
    assert line.endswith(
        "they are built from a kernel repository: "
        "`iolab ab PLAN --kernel-repo DIR --kernel-build CMD --fleet CLASS`"
    )
    release = write(tmp_path, "variants:\n  a: {kernel: 6.1.0-50-cloud-amd64}\n  now: {}\n")
    assert CliRunner().invoke(cli, ["--db", db, command, release]).exit_code == done.exit_code
