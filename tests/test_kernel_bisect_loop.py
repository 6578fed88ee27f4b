"""The block loop both kernel bisects share (`bisect.kernels.measure_blocks`), on the host:
the real engine and a real store, with the fleet's block source replaced by one that hands
back each arm's KPI at once (the guest scenarios in test_guest_kernels.py and
test_guest_kernel_git.py run the same loop on real boots, behind IOLAB_GUEST_LONG)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from iolab.bisect.driver import _engine
from iolab.bisect.engine import Bisection
from iolab.bisect.kernels import KernelSetup, conclude, kernel_plan, measure_blocks
from iolab.errors import LabError
from iolab.model.bisect import Measure
from iolab.model.metrics import Direction
from iolab.model.sample import Sample
from iolab.plan.expand import plan_from_text
from iolab.plan.model import Case
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

    def start(self, block: int, cases: list[Case]) -> None:
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


def _setup(tmp_path: Path, culprit: int | None) -> tuple[lifecycle.OpenRun, Blocks, Bisection]:
    plan = kernel_plan(plan_from_text(PLAN, str(tmp_path / "p.yaml"), None), RELEASES)
    store = open_store(str(tmp_path / "s.db"))
    run_id = store.create_run("bisect")
    run = lifecycle.OpenRun(store, plan, run_id, seed=1)
    engine = _engine(len(RELEASES) - 1, Direction.HIGHER, 0.05, 1.0, 200, "binary", "write.iops")
    return run, Blocks(culprit, store, run_id), engine


def test_the_loop_feeds_each_block_to_the_engine_until_it_names_the_culprit(
    tmp_path: Path,
) -> None:
    run, blocks, engine = _setup(tmp_path, culprit=6)
    by_variant = {c.variant: c for c in run.plan.cases}
    seen: list[int] = []

    def arms(m: Measure) -> list[Case]:
        return [by_variant[RELEASES[i + 1]] for i in m.arms]

    outcome, status = measure_blocks(
        run,
        blocks,
        engine,
        "write.iops",
        1,
        engine.action,
        arms,
        lambda block, _m: seen.append(block),
    )
    assert status == "finished" and not blocks.abandoned
    assert outcome.kind == "found" and outcome.culprit == 5, outcome  # index 5 is RELEASES[6]
    assert seen == list(range(1, len(blocks.started) + 1))
    assert run.store.run(run.run_id).status == "finished"

    # the report both kernel bisects make (bisect.kernels.kernel_report), from what was stored
    setup = KernelSetup(run, run.plan, RELEASES, "write.iops", Direction.HIGHER, engine)
    report = conclude(run.store, setup, outcome, status)
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
    run, blocks, engine = _setup(tmp_path, culprit=None)
    by_variant = {c.variant: c for c in run.plan.cases}

    def arms(m: Measure) -> list[Case]:
        return [by_variant[RELEASES[i + 1]] for i in m.arms]

    with pytest.raises(LabError, match="3 blocks in a row without a KPI value"):
        measure_blocks(run, blocks, engine, "write.iops", 1, engine.action, arms, None)
    assert blocks.abandoned and len(blocks.started) == 3
    assert run.store.run(run.run_id).status == "failed"
