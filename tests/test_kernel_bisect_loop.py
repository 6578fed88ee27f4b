"""The one block loop of every bisect (`bisect.session.run`), over kernel releases on the
host: the real engine and a real store, with the fleet's block source replaced by one that
hands back each arm's KPI at once (the guest scenarios in test_guest_kernels.py and
test_guest_kernel_git.py run the same loop on real boots, behind IOLAB_GUEST_LONG)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest

from iolab.bisect import session as bisect
from iolab.bisect.summary import conclude
from iolab.errors import LabError
from iolab.model.bisect import Measure
from iolab.model.sample import Sample
from iolab.plan.expand import plan_from_text
from iolab.plan.model import Case, Plan
from iolab.runs import lifecycle
from iolab.store import Store, open_store

RELEASES = [f"6.1.0-{n}-cloud-amd64" for n in range(47, 57)]
PLAN = """\
name: loop
filesystem: {type: ext4}
workload:
  fio: |
    [w]
    rw=write
    size=1M
    directory={mnt}
kpis: [write.iops]
"""


class Blocks:
    """Each block's arms measured at once: KPI 1000 before the culprit, 700 from it on,
    stored as a host's worker stores them."""

    def __init__(self, culprit: int | None, store: Store, run_id: int, seed: int = 3) -> None:
        self.culprit, self.store, self.run_id = culprit, store, run_id
        self.rng = np.random.default_rng(seed)
        self.started: list[tuple[int, list[str]]] = []
        self.abandoned = False

    @property
    def width(self) -> int:
        return 1

    @property
    def ahead(self) -> int:
        return 0

    def in_flight(self) -> list[int]:
        return []

    def stop(self, unused: Sequence[int] = ()) -> list[int]:
        return []

    def use_plan(self, plan: Plan) -> None:
        raise AssertionError("a bisect over releases has one plan")

    def start(self, block: int, cases: Sequence[Case] = ()) -> None:
        self.started.append((block, [c.variant or "" for c in cases]))

    def next_finished(self) -> tuple[int, list[Sample]]:
        block, variants = self.started[-1]
        samples = []
        for v in variants:
            if self.culprit is None:
                samples.append(Sample(run_id=self.run_id, variant=v, block=block, status="failed"))
                continue
            level = 0.7 if RELEASES.index(v) >= self.culprit else 1.0
            value = 1000.0 * level * float(np.exp(self.rng.normal(0, 0.01)))
            samples.append(
                Sample(run_id=self.run_id, variant=v, block=block, metrics={"write.iops": value})
            )
            self.store.add_sample(samples[-1])  # as the host's worker does
        return block, samples

    def abandon(self) -> None:
        self.abandoned = True


def _setup(tmp_path: Path, culprit: int | None) -> tuple[bisect.Session, Blocks, lifecycle.OpenRun]:
    path = tmp_path / "p.yaml"
    path.write_text(PLAN)
    store = open_store(str(tmp_path / "s.db"))
    request = bisect.Request(
        plan_from_text(PLAN, str(path), None),
        mode="releases",
        releases=tuple(RELEASES),
        search="binary",
        max_blocks=200,
        fleet="lab",
    )
    session = bisect.start(store, bisect.check(request))
    return session, Blocks(culprit, store, session.run_id), session.run


def test_the_loop_feeds_each_block_to_the_engine_until_it_names_the_culprit(
    tmp_path: Path,
) -> None:
    session, blocks, run = _setup(tmp_path, culprit=6)
    seen: list[int] = []

    class Seen(bisect.Progress):
        def block(self, session: bisect.Session, block: int, measure: Measure) -> None:
            seen.append(block)

    outcome, status = bisect.run(session, fleet=lambda _run: blocks, progress=Seen())
    assert status == "finished" and not blocks.abandoned
    assert outcome.kind == "found" and outcome.culprit == 5, outcome  # index 5 is RELEASES[6]
    assert seen == list(range(1, len(blocks.started) + 1))
    assert run.store.run(run.run_id).status == "finished"

    # the report every bisect makes (bisect.summary), from what was stored
    report = conclude(session, outcome, status)
    assert (report.good.sha, report.bad.sha) == (RELEASES[0], RELEASES[-1])
    assert report.candidates == len(RELEASES) - 1 and report.commits[5].sha == RELEASES[6]
    assert report.commits[5].subject == f"kernel {RELEASES[6]}"
    assert report.outcome.culprit == 5 and report.builds == {} and report.cache == ""
    assert outcome.verify is not None  # the culprit's pair, compared from the stored samples
    assert report.evidence is not None
    ((_, kpi),) = report.evidence.kpis()
    assert kpi.verdict == "regression" and kpi.change_pct == pytest.approx(-30.0, abs=2.0)
    stored = run.store.run(run.run_id).meta["bisect_result"]
    assert stored["result"] == "found" and stored["culprit"]["sha"] == RELEASES[6]
    assert stored["evidence"] is not None


def test_three_blocks_without_a_value_end_the_run_failed(tmp_path: Path) -> None:
    session, blocks, run = _setup(tmp_path, culprit=None)
    with pytest.raises(LabError, match="3 blocks in a row without a KPI value"):
        bisect.run(session, fleet=lambda _run: blocks)
    assert blocks.abandoned and len(blocks.started) == 3
    assert run.store.run(run.run_id).status == "failed"


def test_regression_is_refused_for_releases_before_any_store(tmp_path: Path) -> None:
    """`--regression ID` records a culprit commit; a bisect over releases names none."""
    from iolab.errors import IolabError

    path = tmp_path / "p.yaml"
    path.write_text(PLAN)
    request = bisect.Request(
        plan_from_text(PLAN, str(path), None),
        mode="releases",
        releases=tuple(RELEASES[:3]),
        fleet="lab",
        regression=1,
    )
    with pytest.raises(IolabError, match="--regression records a culprit commit"):
        bisect.check(request)
    assert not list(tmp_path.glob("*.db"))
