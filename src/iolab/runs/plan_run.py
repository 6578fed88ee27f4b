"""`iolab run`'s work: every block of a plan into an open run, skipping the samples it
already holds (so a resumed run picks up exactly where it stopped).  The blocks run here
(`LocalBlocks`) or wherever the `BlockSource` given sends them (a fleet: `iolab.fleet`)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from iolab.lab.runner import LabSession, Reporter, SilentReporter, case_key
from iolab.runs.blocks import BlockSource, LocalBlocks
from iolab.runs.lifecycle import OpenRun, planned_samples, running


@dataclass(frozen=True)
class RunOutcome:
    run_id: int
    status: str  # finished | interrupted | cancelled | failed
    planned: int
    stored: int  # samples stored by this process
    failed: int  # samples that failed in this process
    held: int  # samples the run holds now, this process's and earlier ones


def execute(
    run: OpenRun,
    *,
    destroy_data: bool = False,
    reporter: Reporter | None = None,
    source: Callable[[OpenRun], BlockSource] | None = None,
) -> RunOutcome:
    """Run every block of the plan into `run`; KeyboardInterrupt after recording the run as
    interrupted and restoring the machine.  `source` makes where the blocks run (default:
    here, one at a time)."""
    reporter = reporter or SilentReporter()
    store, plan = run.store, run.plan
    done = store.done_keys(run.run_id)
    planned = planned_samples(plan)
    keys = {case_key(c) for c in plan.cases}
    already = sum(1 for key, block in done if key in keys and 1 <= block <= plan.repeat)
    reporter.started(planned, already)
    session = LabSession(plan, store, run.run_id, run.seed, destroy_data, reporter)
    stored = 0
    with running(run) as ending:
        if source is not None:
            stored += _run_all(source(run), [b for b in range(1, plan.repeat + 1)])
        else:
            with session:
                stored += _run_all(LocalBlocks(session, store, done), range(1, plan.repeat + 1))
        ending.status = "finished"
    held = len(store.done_keys(run.run_id))
    failures = session.failures
    if source is not None:
        failures = sum(1 for s in store.samples(run.run_id, status="failed", with_jobs=False))
    return RunOutcome(run.run_id, ending.status, planned, stored, failures, held)


def _run_all(source: BlockSource, blocks: range | list[int]) -> int:
    """Every block through `source`, up to its width at once and its `ahead` more waiting
    (every block is run, so none waits in vain); how many samples came back."""
    pending = list(blocks)
    stored = 0
    while pending or source.in_flight():
        while pending and len(source.in_flight()) < source.width + source.ahead:
            source.start(pending.pop(0))
        _, samples = source.next_finished()
        stored += len(samples)
    return stored
