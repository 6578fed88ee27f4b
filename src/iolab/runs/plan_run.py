"""`iolab run`'s work: every block of a plan into an open run, skipping the samples it
already holds (so a resumed run picks up exactly where it stopped)."""

from __future__ import annotations

from dataclasses import dataclass

from iolab.lab.runner import LabSession, Reporter, SilentReporter, case_key
from iolab.runs.lifecycle import OpenRun, planned_samples, running


@dataclass(frozen=True)
class RunOutcome:
    run_id: int
    status: str  # finished | interrupted | failed
    planned: int
    stored: int  # samples stored by this process
    failed: int  # samples that failed in this process
    held: int  # samples the run holds now, this process's and earlier ones


def execute(
    run: OpenRun, *, destroy_data: bool = False, reporter: Reporter | None = None
) -> RunOutcome:
    """Run every block of the plan into `run`; KeyboardInterrupt after recording the run as
    interrupted and restoring the machine."""
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
        with session:
            for block in range(1, plan.repeat + 1):
                stored += len(session.run_block(block, done))
        ending.status = "finished"
    held = len(store.done_keys(run.run_id))
    return RunOutcome(run.run_id, ending.status, planned, stored, session.failures, held)
