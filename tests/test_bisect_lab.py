"""`iolab bisect` end to end: real git repositories in a tmp dir, a real workload (dd with
O_DIRECT on a real RAM-backed loop device) run from each commit's own work tree.

The workload script lives in the repository; one commit changes its block size from 1 MiB
to 4 KiB (16 MiB written either way), which makes it clearly slower.  Tiny workloads, a
small per-test budget and alpha 0.2 keep each bisect to seconds; the statistics behind the
defaults are validated by bench/sim_bisect.py (docs/bisect.md).  The equal-ends repository
holds a fio job file instead (read from each commit's tree: `fio_file: "{src}/job.fio"`),
rate-limited so that both ends measure the same IOPS."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

from iolab.store import open_store

pytestmark = pytest.mark.lab

PLAN = """\
name: bisect-dd
target: {size: 20M}
filesystem: none
workload:
  command:
    argv: ["{src}/bench.sh", "{dev}"]
    metric: {name: write.bw_bytes, regex: 'bw ([0-9.e+]+)'}
kpis: [write.bw_bytes]
prepare: {drop_caches: false}
"""

SCRIPT = """#!/bin/sh
# commit {n}: write 16 MiB to the device with O_DIRECT; print the bandwidth
dd if=/dev/zero of="$1" bs={bs} count={count} oflag=direct 2>&1 |
  awk '/copied/ {{print "bw", $1 / $(NF-3)}}'
"""

FIO_PLAN = """\
name: bisect-fio
target: {size: 20M}
filesystem: none
workload:
  fio_file: "{src}/job.fio"
kpis: [write.iops]
prepare: {drop_caches: false}
"""

FIO_JOB = """\
# commit {n}
[w]
filename={{dev}}
size=8M
bs=4k
rw=randwrite
direct=1
rate_iops=400
runtime=300ms
time_based=1
"""

BUILD = "sh build.sh"
FAST_ARGS = ("--alpha", "0.2", "--max-blocks", "20", "--margin", "25", "-q")
# samples stored before the kill: past the ends (6 blocks, 12 samples: measured on to fit
# the noise), inside the steps (a whole one is not much longer: its tests bet on signs)
KILL_AT = 16


def make_repo(
    path: Path, commits: int, culprit: int | None, broken: int | None = None, fio: bool = False
) -> list[str]:
    """`commits` commits; from `culprit` on (1-based) the workload is slower; commit
    `broken` does not build; `fio`: a rate-limited job file that never changes.  Returns the
    shas, oldest first."""
    path.mkdir()

    def git(*args: str) -> str:
        return subprocess.run(
            ["git", "-C", str(path), *args], check=True, capture_output=True, text=True
        ).stdout

    git("init", "-q")
    git("config", "user.email", "lab@example.org")
    git("config", "user.name", "Lab")
    shas = []
    for n in range(1, commits + 1):
        slow = culprit is not None and n >= culprit
        bs, count = ("4k", 4096) if slow else ("1M", 16)
        script = path / "bench.sh"
        script.write_text(SCRIPT.format(n=n, bs=bs, count=count))
        script.chmod(0o755)
        (path / "build.sh").write_text("exit 1\n" if n == broken else "exit 0\n")
        if fio:
            (path / "job.fio").write_text(FIO_JOB.format(n=n))
        git("add", "-A")
        git("commit", "-q", "-m", f"commit {n}")
        shas.append(git("rev-parse", "HEAD").strip())
    return shas


@pytest.fixture
def lab(tmp_path: Path) -> Iterator[dict[str, str]]:
    env = dict(os.environ)
    env["IOLAB_DB"] = str(tmp_path / "store.db")
    env["IOLAB_JOURNAL_DIR"] = str(tmp_path / "journal")
    env["XDG_CACHE_HOME"] = str(tmp_path / "cache")
    try:
        yield env
    finally:
        subprocess.run([sys.executable, "-m", "iolab", "cleanup"], env=env, capture_output=True)


def bisect_argv(plan: Path, repo: Path, shas: list[str], *extra: str) -> list[str]:
    return [
        sys.executable, "-m", "iolab", "bisect", str(plan), "--repo", str(repo),
        "--good", shas[0], "--bad", shas[-1], *extra,
    ]  # fmt: skip


def bisect(env: dict[str, str], *argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(list(argv), env=env, capture_output=True, text=True, timeout=300)


def write_plan(tmp_path: Path, text: str = PLAN) -> Path:
    plan = tmp_path / "plan.yaml"
    plan.write_text(text)
    return plan


def test_bisect_names_the_culprit_and_resumes_after_kill(
    lab: dict[str, str], tmp_path: Path
) -> None:
    """kill -9 mid-bisect, `iolab cleanup`, `--resume`: the culprit, no duplicated sample."""
    repo = tmp_path / "repo"
    shas = make_repo(repo, 17, culprit=11)  # good = commit 1, 16 candidates
    head_before = (repo / ".git" / "HEAD").read_text()
    status_before = subprocess.run(
        ["git", "-C", str(repo), "status", "--porcelain"], capture_output=True, text=True
    ).stdout
    argv = bisect_argv(write_plan(tmp_path), repo, shas, "--build", BUILD, *FAST_ARGS)
    proc = subprocess.Popen(argv, env=lab, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 120
        stored = 0
        while time.monotonic() < deadline and stored < KILL_AT and proc.poll() is None:
            time.sleep(0.3)
            with open_store(lab["IOLAB_DB"]) as store:
                runs = store.runs()
                stored = len(store.samples(run_id=runs[0].id)) if runs else 0
        assert proc.poll() is None, "the bisect ended before it could be killed"
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    with open_store(lab["IOLAB_DB"]) as store:
        (run,) = store.runs()
        before = {(s.block, s.variant) for s in store.samples(run_id=run.id)}
    assert len(before) >= KILL_AT
    cleaned = subprocess.run(
        [sys.executable, "-m", "iolab", "cleanup"], env=lab, capture_output=True, text=True
    )
    assert cleaned.returncode == 0, cleaned.stderr
    done = bisect(
        lab, sys.executable, "-m", "iolab", "bisect", "--resume", str(run.id), "--format", "json"
    )
    assert done.returncode == 0, done.stderr
    assert "(blocks 1-" in done.stderr and "replayed" in done.stderr
    data = json.loads(done.stdout)
    assert data["schema"] == "iolab-bisect/1" and data["result"] == "found"
    assert data["culprit"]["sha"] == shas[10] and data["parent"]["sha"] == shas[9]
    assert data["verification"]["verdict"] == "regression"
    assert data["verification"]["estimate_pct"] < -20
    # the KPI is among the evidence compared between parent and culprit
    kpi = data["evidence"]["groups"][0]["metrics"][0]
    assert kpi["name"] == "write.bw_bytes" and kpi["verdict"] in ("regression", "inconclusive")
    with open_store(lab["IOLAB_DB"]) as store:
        samples = store.samples(run_id=run.id)
    keys = Counter((s.block, s.variant) for s in samples)
    assert max(keys.values()) == 1, "a (block, commit) sample was stored twice"
    assert before <= set(keys), "resume lost samples stored before the kill"
    assert {s.variant for s in samples} <= set(shas)
    assert data["runs"] == sum(1 for s in samples if s.status == "ok")
    # the user's checkout was never touched; the work trees were removed at the end
    assert (repo / ".git" / "HEAD").read_text() == head_before
    assert (
        subprocess.run(
            ["git", "-C", str(repo), "status", "--porcelain"], capture_output=True, text=True
        ).stdout
        == status_before
    )
    assert not list((tmp_path / "cache").glob("iolab/bisect/run-*/trees/*"))


def test_a_bisect_out_of_time_is_a_range_that_resume_goes_on_with(
    lab: dict[str, str], tmp_path: Path
) -> None:
    """`--max-time` stops a bisect with what is known — a range (exit 20), or "not known"
    (22) when the ends were still being measured — but does not end it: its run is left
    interrupted, so `--resume` continues where it stopped instead of refusing."""
    repo = tmp_path / "repo"
    shas = make_repo(repo, 9, culprit=6)
    argv = bisect_argv(write_plan(tmp_path), repo, shas, "--build", BUILD, *FAST_ARGS)
    stopped = bisect(lab, *argv, "--max-time", "1s", "--format", "json")
    assert stopped.returncode in (20, 22), stopped.stderr  # where the second fell: timing
    assert "time budget of 1 s spent" in json.loads(stopped.stdout)["reason"]
    with open_store(lab["IOLAB_DB"]) as store:
        (run,) = store.runs()
        assert run.status == "interrupted"
    done = bisect(
        lab, sys.executable, "-m", "iolab", "bisect", "--resume", str(run.id), "--format", "json"
    )
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert data["result"] == "found" and data["culprit"]["sha"] == shas[5]


def test_bisect_equal_ends_names_no_culprit(lab: dict[str, str], tmp_path: Path) -> None:
    """Ends that perform the same: "no regression between the ends", no step, no culprit
    (alpha 0.01 so that a false difference at the ends is rare; ±25% margin)."""
    repo = tmp_path / "repo"
    shas = make_repo(repo, 17, culprit=None, fio=True)
    plan = write_plan(tmp_path, FIO_PLAN)
    # a rate-limited job repeats its IOPS to the digit, but a loaded machine now and then
    # delays one run by 10-20%: a margin above that keeps one such run from undoing the rest
    report = tmp_path / "report.json"
    argv = ("--alpha", "0.01", "--max-runs", "30", "--margin", "25", "-q", "--format", "json",
            "-o", str(report))  # fmt: skip
    done = bisect(lab, *bisect_argv(plan, repo, shas, *argv))
    assert done.returncode == 21, done.stderr
    assert done.stdout == ""  # the report went to -o FILE
    data = json.loads(report.read_text())
    assert data["result"] == "no regression" and data["culprit"] is None
    assert data["steps"] == [] and data["verification"] is None
    assert data["ends"]["verdict"] == "no change"
    assert -25 < data["ends"]["estimate_pct"] < 25


JOB_PLAN = """\
name: bisect-fio-overrides
target: {size: 20M}
filesystem: none
workload:
  fio_file: "{src}/jobs/randwrite.fio"
fio: {filename: "{dev}", runtime: 300ms, rate_iops: null}
kpis: [write.iops]
prepare: {drop_caches: false}
"""

# a job as a user's repository holds it: written for another machine's disk and a long run
# (the plan's `fio:` overrides point it at the lab's device for 300 ms, and drop its rate
# limit); from the culprit on, the job thinks 2 ms after every write (at most 500 IOPS)
USER_JOB = """\
# commit {n}
[global]
filename=/dev/disk/by-id/nvme-their-disk
runtime=600
rate_iops=50
[w]
size=8M
bs=4k
rw=randwrite
direct=1
time_based=1
{extra}
"""


def make_job_repo(path: Path, commits: int, culprit: int) -> list[str]:
    path.mkdir()

    def git(*args: str) -> str:
        return subprocess.run(
            ["git", "-C", str(path), *args], check=True, capture_output=True, text=True
        ).stdout

    git("init", "-q")
    git("config", "user.email", "lab@example.org")
    git("config", "user.name", "Lab")
    (path / "jobs").mkdir()
    (path / "build.sh").write_text("exit 0\n")
    shas = []
    for n in range(1, commits + 1):
        extra = "thinktime=2ms\nioengine=psync" if n >= culprit else "ioengine=psync"
        (path / "jobs" / "randwrite.fio").write_text(USER_JOB.format(n=n, extra=extra))
        git("add", "-A")
        git("commit", "-q", "-m", f"commit {n}")
        shas.append(git("rev-parse", "HEAD").strip())
    return shas


def test_bisect_job_file_from_the_tree_with_the_plans_overrides(
    lab: dict[str, str], tmp_path: Path
) -> None:
    """`fio_file: "{src}/…"` plus `fio:` overrides: each commit's job file is read and the
    overrides applied to it as plan loading applies them (without them the job names a disk
    that is not there and runs for 10 minutes), and the culprit is found."""
    repo = tmp_path / "repo"
    # good = commit 1, 2 candidates: one step (what a longer search adds is tested above)
    shas = make_job_repo(repo, 3, culprit=3)
    plan = write_plan(tmp_path, JOB_PLAN)
    done = bisect(lab, *bisect_argv(plan, repo, shas, *FAST_ARGS, "--format", "json"))
    assert done.stdout, done.stderr
    data = json.loads(done.stdout)
    assert done.returncode == 0 and data["result"] == "found", json.dumps(data)[:3000]
    assert data["culprit"]["sha"] == shas[2] and data["parent"]["sha"] == shas[1]
    assert data["verification"]["estimate_pct"] < -50
    with open_store(lab["IOLAB_DB"]) as store:
        samples = store.samples(run_id=data["run"], status=None)
    assert samples and all(s.status == "ok" for s in samples)
    # the overrides reached fio: the lab's loop device, and no rate limit of 50 IOPS (the
    # good commits' writes run far faster); 300 ms, or this test would have timed out
    assert all(s.provenance["devices"][0]["name"].startswith("loop") for s in samples)
    good = sorted(s.metrics["write.iops"] for s in samples if s.variant == shas[0])
    assert good and good[len(good) // 2] > 1000, good


def test_unbuildable_commit_before_the_culprit_gives_a_range(
    lab: dict[str, str], tmp_path: Path
) -> None:
    repo = tmp_path / "repo"
    shas = make_repo(repo, 17, culprit=11, broken=10)
    done = bisect(
        lab,
        *bisect_argv(
            write_plan(tmp_path),
            repo,
            shas,
            "--build",
            BUILD,
            *FAST_ARGS,
            "--search",
            "binary",
            "--format",
            "json",
        ),
    )
    assert done.returncode == 20, done.stdout[-3000:] + done.stderr
    data = json.loads(done.stdout)
    assert data["result"] == "range" and data["culprit"] is None
    in_range = [c["sha"] for c in data["range"]]
    assert shas[9] in in_range and shas[10] in in_range
    assert [u["commit"] for u in data["unbuildable"]] == [shas[9]]
    assert data["unbuildable"][0]["build"].startswith("failed: build exited with 1")
    # the build log is kept
    logs = list((tmp_path / "cache").glob(f"iolab/bisect/run-*/logs/{shas[9]}.log"))
    assert len(logs) == 1 and "sh build.sh" in logs[0].read_text()


def test_api_bisect_finds_the_culprit(
    lab: dict[str, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The Python face (`iolab.api.bisect`): the same bisect, the report the command renders,
    kept in the run's meta as the command keeps it."""
    from iolab import api

    monkeypatch.setenv("IOLAB_JOURNAL_DIR", lab["IOLAB_JOURNAL_DIR"])
    repo = tmp_path / "repo"
    shas = make_repo(repo, 9, culprit=6)  # good = commit 1, 8 candidates
    report = api.bisect(
        str(write_plan(tmp_path)),
        repo=repo,
        good=shas[0],
        bad=shas[-1],
        db=lab["IOLAB_DB"],
        build=("sh", "build.sh"),
        alpha=0.2,
        margin_pct=25,
        max_blocks=20,
        cache=tmp_path / "cache",
    )
    assert report.outcome.kind == "found", report.outcome.reason
    culprit = report.commit(report.outcome.first)
    assert culprit is not None and culprit.sha == shas[5]
    with open_store(lab["IOLAB_DB"]) as store:
        (run,) = store.runs()
    assert run.id == report.run_id and run.kind == "bisect" and run.status == "finished"
    assert run.meta["bisect_result"]["culprit"]["sha"] == shas[5]
