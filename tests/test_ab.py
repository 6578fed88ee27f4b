"""End to end on real loop devices with real fio: `iolab run` then `iolab compare` on the
stored run, and `iolab ab` with a small budget — the run kind, the stored samples, the
report's numbers against the stored values, and the --ci exit status."""

from __future__ import annotations

import json
import math
import os
import statistics
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from iolab.store import open_store

pytestmark = pytest.mark.lab

PLAN = """\
name: ab-test
target: {size: 48M}
filesystem: {type: ext4, mkfs_options: -m 1, mount_options: noatime}
workload:
  fio: |
    [w]
    filename={mnt}/f
    size=2M
    bs=16k
    rw=randwrite
    ioengine=psync
    fsync=1
    runtime=300ms
    time_based=1
variants:
  big: {fio: {bs: 16k}}
  small: {fio: {bs: 4k}}
repeat: 3
kpis: [write.iops]
prepare: {drop_caches: false}
"""


@pytest.fixture
def lab(tmp_path: Path) -> Iterator[dict[str, str]]:
    env = dict(os.environ)
    env["IOLAB_DB"] = str(tmp_path / "store.db")
    env["IOLAB_JOURNAL_DIR"] = str(tmp_path / "journal")
    env.pop("NO_COLOR", None)
    try:
        yield env
    finally:  # whatever a failed test left behind: only this test's journal is consulted
        subprocess.run([sys.executable, "-m", "iolab", "cleanup"], env=env, capture_output=True)


def iolab(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "iolab", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_run_then_compare(lab: dict[str, str], tmp_path: Path) -> None:
    plan = tmp_path / "plan.yaml"
    plan.write_text(PLAN)
    done = iolab(lab, "run", str(plan), "-q")
    assert done.returncode == 0, done.stderr
    with open_store(lab["IOLAB_DB"]) as store:
        (run,) = store.runs()
        big = store.samples(run_id=run.id, variant="big")
        small = store.samples(run_id=run.id, variant="small")
    assert len(big) == len(small) == 3
    done = iolab(lab, "compare", f"{run.id}:big", f"{run.id}:small", "--format", "json", "--ci")
    assert done.returncode in (10, 11, 0), done.stderr
    data = json.loads(done.stdout)
    kpi = next(m for m in data["groups"][0]["metrics"] if m["name"] == "write.iops")
    assert kpi["kpi"] and kpi["paired"] and kpi["n_a"] == kpi["n_b"] == 3
    # 3 pairs: the median of within-block log ratios' Walsh averages, from the stored values
    by_block_a = {s.block: s.metrics["write.iops"] for s in big}
    by_block_b = {s.block: s.metrics["write.iops"] for s in small}
    d = sorted(math.log(by_block_b[k] / by_block_a[k]) for k in by_block_a)
    walsh = [(d[i] + d[j]) / 2 for i in range(3) for j in range(i, 3)]
    expected = 100 * (math.exp(statistics.median(walsh)) - 1)
    assert kpi["change_pct"] == pytest.approx(expected, rel=1e-6)
    assert kpi["verdict"] == "inconclusive"  # 3 pairs can never reach p <= 0.05
    assert data["ci_exit_code"] == 11 and done.returncode == 11
    text = iolab(lab, "compare", str(run.id))
    assert (
        text.returncode == 0 and f"variant=small  against  run {run.id} variant=big" in text.stdout
    )


def test_ab_small_budget(lab: dict[str, str], tmp_path: Path) -> None:
    """Three blocks, asked one-sided (`--one-sided`): the run keeps the question, and its
    evidence is the worse side's alone."""
    from iolab.stats import SequentialDecision

    plan = tmp_path / "plan.yaml"
    plan.write_text(PLAN)
    done = iolab(lab, "ab", str(plan), "--max-runs", "3", "--one-sided", "--ci", "--format", "json")
    assert done.returncode in (0, 10, 11), done.stderr
    assert "budget of 3 blocks spent" in done.stderr or "every KPI has a verdict" in done.stderr
    assert "block   1" in done.stderr  # the estimate is printed as it goes
    with open_store(lab["IOLAB_DB"]) as store:
        (run,) = store.runs()
        samples = store.samples(run_id=run.id)
    assert run.kind == "ab" and run.status == "finished"
    assert len(samples) == 6 and {s.block for s in samples} == {1, 2, 3}
    data = json.loads(done.stdout)
    assert data["sequential"] is True
    (state,) = data["groups"][0]["sequential"]
    assert state["n_blocks"] == 3 and state["verdict"] == "inconclusive"
    kpi = next(m for m in data["groups"][0]["metrics"] if m["kpi"])
    assert kpi["verdict"] == "inconclusive"
    assert done.returncode == 11
    assert run.meta["ab_result"]["states"][0]["blocks"] == 3
    assert run.meta["ab"]["one_sided"] is True
    value = {(s.variant, s.block): s.metrics["write.iops"] for s in samples}
    again = SequentialDecision("write.iops", max_blocks=3, one_sided=True).update(
        (value[("big", b)], value[("small", b)]) for b in range(1, 4)
    )
    assert state["e_value"] == pytest.approx(again.e_value, rel=1e-12)
    assert kpi["ci_low_pct"] == pytest.approx(-75.0)  # a bound on the worse side only


def test_ab_resume_continues_the_same_test(lab: dict[str, str], tmp_path: Path) -> None:
    """An inconclusive ab run is continued with a larger budget: the stored blocks are
    replayed into the same test (same alpha, margin and stakes), new blocks follow them."""
    from iolab.stats import SequentialDecision

    plan = tmp_path / "plan.yaml"
    plan.write_text(PLAN)
    first = iolab(lab, "ab", str(plan), "--max-runs", "2", "-q", "--format", "json")
    assert first.returncode == 0, first.stderr
    refused = {
        ("--resume", "1"): "iolab: run 1 has spent its budget of 2 blocks; "
        "give --max-blocks above 2 to continue it",
        ("--resume", "1", "--margin", "2", "--tag", "k=v"): "iolab: --margin, --tag: "
        "run 1 keeps its own",
        ("--resume", "1", "--one-sided"): "iolab: --one-sided: run 1 keeps its own",
        ("--resume", "1", str(plan)): "iolab: give either PLAN or --resume RUN, not both",
    }
    for args, line in refused.items():
        done = iolab(lab, "ab", *args)
        assert (done.returncode, done.stderr.strip()) == (2, line), args
    done = iolab(lab, "run", "--resume", "1")
    assert done.returncode == 2
    assert done.stderr.strip() == (
        "iolab: run 1 is an ab run, not a lab run; `iolab ab --resume 1` continues it"
    )

    done = iolab(lab, "ab", "--resume", "1", "--max-blocks", "4", "--format", "json")
    assert done.returncode == 0, done.stderr
    assert "ab run 1 resumed at block 3 (blocks 1-2 replayed)" in done.stderr
    assert "block   3" in done.stderr and "block   1 " not in done.stderr
    with open_store(lab["IOLAB_DB"]) as store:
        (run,) = store.runs()
        samples = store.samples(run_id=run.id)
    assert run.status == "finished" and run.meta["ab"]["max_blocks"] == 4
    assert run.meta["ab"]["stake_blocks"] == 2
    assert run.meta["ab"]["sign_bets"] is True  # a 2-block budget bets on signs too
    assert sorted(s.block or 0 for s in samples) == [1, 1, 2, 2, 3, 3, 4, 4]
    (state,) = json.loads(done.stdout)["groups"][0]["sequential"]
    assert state["n_blocks"] == 4
    # the same decision, fed the four stored pairs with the first budget's stakes
    value = {(s.variant, s.block): s.metrics["write.iops"] for s in samples}
    again = SequentialDecision("write.iops", max_blocks=4, stake_blocks=2).update(
        (value[("big", b)], value[("small", b)]) for b in range(1, 5)
    )
    assert state["e_value"] == pytest.approx(again.e_value, rel=1e-12)
    assert state["estimate_pct"] == pytest.approx(again.estimate_pct, rel=1e-12)


def test_a_run_stored_without_sign_bets_resumes_without_them() -> None:
    """The bettors are fixed before the first block: a run begun before sign bets existed
    (no `sign_bets` in its meta) goes on with the signed-rank bettors alone, whatever its
    budget; one begun with them keeps them."""
    from datetime import UTC, datetime

    from iolab.model.sample import RunInfo
    from iolab.runs.meta import ab_settings

    ab = {"alpha": 0.05, "margin_pct": 1.0, "max_blocks": 10, "stake_blocks": 10}
    old = RunInfo(1, "ab", None, "interrupted", datetime.now(UTC), meta={"ab": ab})
    assert ab_settings(old).sign_bets is False
    new = RunInfo(
        2, "ab", None, "interrupted", datetime.now(UTC), meta={"ab": {**ab, "sign_bets": True}}
    )
    assert ab_settings(new).sign_bets is True
    assert ab_settings(old).one_sided is False  # begun two-sided, resumed two-sided
    one = RunInfo(
        3, "ab", None, "interrupted", datetime.now(UTC), meta={"ab": {**ab, "one_sided": True}}
    )
    assert ab_settings(one).one_sided is True


def test_ab_brief_names_its_report_and_what_to_try_next(
    lab: dict[str, str], tmp_path: Path
) -> None:
    """`make demo`'s ending: the answer (here "not known yet" after a 2-block budget), the
    HTML report written and named, then three commands, and --ci still decides the status."""
    plan = tmp_path / "plan.yaml"
    plan.write_text(PLAN)
    page = tmp_path / "ab.html"
    done = iolab(
        lab, "ab", str(plan), "--max-blocks", "2", "--format", "brief", "--html", str(page), "--ci"
    )
    assert done.returncode == 11, done.stderr
    first = done.stdout.splitlines()[0]
    assert (
        first.startswith("small vs big: write.iops ") and "after 2 blocks: not known yet" in first
    )
    tail = done.stderr.splitlines()[-5:]
    assert tail[0] == f"HTML report: {page}" and tail[1] == "next:"
    db = lab["IOLAB_DB"]
    assert tail[2].startswith(f"  iolab --db {db} compare 1 --all ")
    assert tail[3].startswith(f"  iolab --db {db} ab --resume 1 --max-blocks ")
    assert tail[4].startswith(f"  iolab --db {db} results --run 1 ")
    html = page.read_text()
    assert "<svg" in html and "confidence sequence" in html
    # the page as a format, written to a file (one more block): nothing on stdout
    again = tmp_path / "again.html"
    done = iolab(
        lab, "ab", "--resume", "1", "--max-blocks", "3", "--format", "html", "-o", str(again),
        "-q",
    )  # fmt: skip
    assert done.returncode == 0 and done.stdout == "", done.stderr
    assert "<svg" in again.read_text() and "confidence sequence" in again.read_text()


def test_next_steps_name_the_program_as_it_can_be_called_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`make demo` runs .venv/bin/iolab: its "next" commands must say so unless `iolab` on
    PATH is that same program (a fresh shell has no `iolab` on PATH)."""
    from iolab.cli.ab_cmd import _program

    script = tmp_path / "venv" / "bin" / "iolab"
    script.parent.mkdir(parents=True)
    script.write_text("#!/bin/sh\n")
    script.chmod(0o755)
    monkeypatch.setattr(sys, "argv", [str(script), "ab"])
    monkeypatch.setenv("PATH", "/nonexistent")
    assert _program() == str(script)
    monkeypatch.setenv("PATH", str(script.parent))
    assert _program() == "iolab"
    monkeypatch.setattr(sys, "argv", ["/usr/lib/python3/dist-packages/iolab/__main__.py"])
    assert _program() == "iolab"
