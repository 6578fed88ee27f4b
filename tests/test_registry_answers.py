"""The registry closes the loop: an entry imported from a robot mail takes the lab's answer
from an A/B run of its two commits (reproduced, not reproduced, not known — each linked to
the run) and a bisect's culprit or range, which `--format regzbot` then prints.

The runs are stored as `iolab ab` stores its own (kind "ab", the plan's text, one sample per
variant and block) and reported by the same code (`by_report`, then `record_report`, the
call `ab` makes when it ends), on SQLite and PostgreSQL.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner, Result

from iolab.analysis.build import Options, by_report
from iolab.analysis.select import Selector
from iolab.builds.kernel_commits import with_releases
from iolab.cli.main import cli
from iolab.history.answers import record_bisect, run_commits, same_commit, variant_commits
from iolab.history.registry import record_report
from iolab.model.sample import Sample
from iolab.plan.expand import plan_from_text
from iolab.store import open_store
from iolab.store import registry as table
from store_backends import BACKENDS, location_for

MAIL = Path(__file__).parent / "data" / "reports" / "lkp" / "2026-btrfs-fio-write-iops.txt"
COMMIT = "4e159150a9a56d66d247f4b5510bed46fe58aa1c"  # the mail's `commit:`
BASE = "3430818739"  # its base, as the mail's comparison table names it (10 digits)
BASE_FULL = "34308187395ff01f00000000000000000000beef"  # one spelling of it the lab could use


@pytest.fixture(params=BACKENDS)
def location(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    yield from location_for(request.param, tmp_path)


def iolab(db: str, *args: str) -> Result:
    return CliRunner().invoke(cli, ["--db", db, *args], env={"COLUMNS": "250"})


def _plan(base: str, bad: str) -> str:
    return (
        "name: robot\n"
        "variants:\n"
        f"  base: {{kernel: {{commit: '{base}'}}}}  # the mail's base\n"
        f"  commit: {{kernel: {{commit: '{bad}'}}}}  # the mail's commit\n"
    )


def _ab_run(db: str, plan: str, iops_ratio: float, txn_ratio: float, blocks: int, seed: int) -> int:
    """An ab run as the fleet stores one: both variants in every block, B's write.iops and
    jbd2.transactions scaled by the ratios, 0.5% noise, a metric that does not move."""
    rng = np.random.default_rng(seed)
    with open_store(db) as store:
        run = store.create_run(
            "ab", label="robot", host="guest", meta={"kpis": ["write.iops"]}, plan_text=plan
        )
        at = datetime(2026, 11, 26, tzinfo=UTC)
        for block in range(blocks):
            for position, variant in enumerate(("base", "commit")):
                iops = 1000.0 * (iops_ratio if variant == "commit" else 1.0)
                txn = 500.0 * (txn_ratio if variant == "commit" else 1.0)
                store.add_sample(
                    Sample(
                        run_id=run,
                        variant=variant,
                        block=block,
                        position=position,
                        metrics={
                            "write.iops": iops * float(np.exp(rng.normal(0, 0.005))),
                            "jbd2.transactions": txn * float(np.exp(rng.normal(0, 0.005))),
                            "read.iops": 10.0,
                        },
                        started_at=at + timedelta(minutes=2 * block + position),
                    )
                )
        store.finish_run(run)
    return run


def _finish_like_ab(db: str, run: int) -> list[int]:
    """What `iolab ab` does when a run ends: the variant report, then record_report."""
    with open_store(db) as store:
        report = by_report(store, Selector(f"run:{run}", run_id=run), "variant", "base", Options())
        return record_report(store, report, "ab", f"run:{run}", run_id=run)


def _entries(db: str) -> list[dict[str, object]]:
    done = iolab(db, "regressions", "--format", "json")
    assert done.exit_code == 0, done.output
    return list(json.loads(done.stdout)["regressions"])


def test_an_imported_entry_takes_the_ab_answer_linked_to_its_run(location: str) -> None:
    imported = iolab(location, "regressions", "import", str(MAIL))
    assert imported.exit_code == 0, imported.output
    ((entry),) = _entries(location)
    rid = int(str(entry["id"]))
    # reproduced: write.iops -30 %, jbd2 commits doubled; the entry is confirmed, no
    # second "ab" entry is opened for the same regression
    run = _ab_run(location, _plan(BASE_FULL, COMMIT[:12]), 0.7, 2.0, blocks=8, seed=1)
    assert _finish_like_ab(location, run) == []
    ((entry),) = _entries(location)
    assert entry["status"] == "confirmed"
    last = entry["log"][-1]  # type: ignore[index]
    assert last["evidence_run_id"] == run and last["from"] == "open"
    assert last["note"].startswith(f"lab, run {run}: reproduced: write.iops -")
    assert "moved: jbd2.transactions +" in last["note"] and "read.iops" not in last["note"]
    (answer,) = entry["lab"]["answers"]  # type: ignore[index]
    assert answer["answer"] == "reproduced" and answer["run_id"] == run
    (kpi,) = answer["kpis"]
    assert kpi["metric"] == "write.iops" and kpi["ci_high_pct"] < 0 < 100 + kpi["ci_low_pct"]
    assert -35 < kpi["change_pct"] < -25
    assert [m["metric"] for m in answer["moved"]] == ["jbd2.transactions"]

    # not reproduced within the margin: the same kernels measure alike; the status stays
    alike = _ab_run(location, _plan(BASE_FULL, COMMIT), 1.0, 1.0, blocks=8, seed=2)
    _finish_like_ab(location, alike)
    ((entry),) = _entries(location)
    assert entry["status"] == "confirmed"
    assert entry["log"][-1]["evidence_run_id"] == alike  # type: ignore[index]
    assert [a["answer"] for a in entry["lab"]["answers"]] == [  # type: ignore[index]
        "reproduced",
        "not reproduced",
    ]
    assert "not reproduced within ±" in entry["log"][-1]["note"]  # type: ignore[index]

    # not known: two blocks cannot decide; answered by hand (`regressions answer ID RUN`)
    short = _ab_run(location, _plan("0123456789ab", "ba9876543210"), 0.97, 1.0, 2, seed=3)
    assert _finish_like_ab(location, short) == []  # names other commits: answers nothing
    by_hand = iolab(location, "regressions", "answer", str(rid), str(short))
    assert by_hand.exit_code == 0, by_hand.output
    assert by_hand.stdout.startswith(f"regression {rid}: lab, run {short}: not known")
    ((entry),) = _entries(location)
    assert entry["lab"]["answers"][-1]["answer"] == "not known"  # type: ignore[index]
    assert entry["log"][-1]["evidence_run_id"] == short  # type: ignore[index]

    # bad input: one line, exit 2
    for args in (("answer", "99", str(run)), ("answer", str(rid), "999")):
        refused = iolab(location, "regressions", *args)
        assert refused.exit_code == 2 and len(refused.output.strip().splitlines()) == 1


def test_an_ab_of_built_kernels_answers_the_entry_by_the_commits_it_built(
    location: str,
) -> None:
    """`ab --kernel-repo` stores its plan with each `kernel: {commit: SHA}` turned into the
    release built from it (`with_releases`), and the commit of each release in the run's
    `kernel_builds`: the entry is still answered by its commits."""
    assert iolab(location, "regressions", "import", str(MAIL)).exit_code == 0
    template = plan_from_text(
        "name: robot\ntarget: {size: 64M}\nfilesystem: {type: ext4}\n"
        'workload: {fio: "[w]\\nrw=write\\nsize=1m\\n"}\nkpis: [write.iops]\n'
        + _plan(BASE_FULL, COMMIT).split("\n", 1)[1],
        "robot.yaml",
    )
    releases = {BASE_FULL: "6.1.192-iolab-343081873950", COMMIT: "6.1.192-iolab-4e159150a9a5"}
    stored = with_releases(template, releases)
    assert "{commit:" not in stored.text and variant_commits(stored.text) == {}
    run = _ab_run(location, stored.text, 0.7, 2.0, blocks=8, seed=4)
    with open_store(location) as store:
        builds = {sha: {"ok": True, "release": rel} for sha, rel in releases.items()}
        store.update_run_meta(run, {"kernel_builds": builds})
        assert run_commits(store.run(run)) == {"base": BASE_FULL, "commit": COMMIT}
    assert _finish_like_ab(location, run) == []
    ((entry),) = _entries(location)
    (answer,) = entry["lab"]["answers"]  # type: ignore[index]
    assert answer["answer"] == "reproduced" and answer["run_id"] == run
    assert entry["status"] == "confirmed"


def test_a_bisect_over_the_range_records_its_culprit_then_regzbot_names_it(
    location: str,
) -> None:
    assert iolab(location, "regressions", "import", str(MAIL)).exit_code == 0
    robot = iolab(location, "regressions", "--format", "regzbot").stdout
    assert f"#regzbot introduced: {COMMIT}\n" in robot  # the robot's claim, until the lab's
    found = "4e159150a9a56d66d247f4b5510bed46fe58aa1d"[:40]
    with open_store(location) as store:
        # no entry has these ends: nothing recorded
        assert record_bisect(store, "aaaaaaa", "bbbbbbb", "found", culprit=found) == []
        # a range first (an unbuildable commit next to the culprit), then the culprit
        (rid,) = record_bisect(
            store, BASE_FULL, COMMIT, "range", run_id=None, commit_range=f"{BASE}..{COMMIT}"
        )
        ranged = iolab(location, "regressions", "--format", "regzbot").stdout
        assert f"#regzbot introduced: {BASE}..{COMMIT}\n" in ranged
        assert record_bisect(store, BASE, COMMIT[:12], "found", culprit=found) == [rid]
        assert record_bisect(store, BASE, COMMIT, "no regression", regression_id=rid) == [rid]
        entry = table.get(store, rid)
        with pytest.raises(ValueError):
            record_bisect(store, BASE, COMMIT, "found")  # a culprit must be named
        with pytest.raises(ValueError):
            record_bisect(store, BASE, COMMIT, "maybe")
    assert entry.culprit == found and entry.details["commit"] == COMMIT  # the claim is kept
    assert [b["outcome"] for b in entry.details["lab"]["bisects"]] == [
        "range",
        "found",
        "no regression",
    ]
    notes = [e.note or "" for e in entry.events]
    assert notes[-2].endswith(f": found {found}") and notes[-1].endswith(": no regression")
    regz = iolab(location, "regressions", "--format", "regzbot").stdout
    assert f"#regzbot introduced: {found}\n" in regz and COMMIT not in regz


def test_commits_match_by_prefix_and_plans_name_them() -> None:
    assert same_commit("3430818739", BASE_FULL) and same_commit(COMMIT, COMMIT[:7])
    assert not same_commit(COMMIT[:6], COMMIT) and not same_commit("v6.1", "v6.1")
    assert not same_commit(COMMIT, BASE_FULL)
    assert variant_commits(_plan(BASE, COMMIT)) == {"base": BASE, "commit": COMMIT}
    assert variant_commits("variants: {a: {kernel: 6.1.0-50-cloud-amd64}}") == {}
    assert variant_commits(f"variants: {{{COMMIT}: {{}}}}") == {COMMIT: COMMIT}
    assert variant_commits("variants: [") == {} and variant_commits(None) == {}
