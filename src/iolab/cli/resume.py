"""Reopening a stored lab or ab run: its plan (unchanged since), profile and seed."""

from __future__ import annotations

from pathlib import Path

from iolab.errors import IolabError, PlanError
from iolab.lab import runner
from iolab.plan import load_plan
from iolab.plan.model import Plan
from iolab.store.store import Store

# which command continues a run of each kind
_CONTINUED_BY = {"lab": "iolab run --resume", "ab": "iolab ab --resume"}


def check_plan_or_resume(plan_path: str | None, resume: int | None) -> None:
    """A run command takes a PLAN to start a run or --resume RUN to continue one: exactly one."""
    if resume is not None and plan_path is not None:
        raise IolabError("give either PLAN or --resume RUN, not both")
    if resume is None and plan_path is None:
        raise IolabError("missing PLAN (or --resume RUN)")


def resumed_plan(store: Store, run_id: int, kind: str) -> tuple[Plan, int]:
    """The plan and seed of run `run_id`, which must be of `kind` and not running elsewhere.

    The plan file must be where it was and unchanged (its SHA-256), so that the block orders
    and cases that follow are the ones the run started with.
    """
    info = store.run(run_id)
    if info.kind != kind:
        other = _CONTINUED_BY.get(info.kind)
        hint = f"; `{other} {run_id}` continues it" if other else ""
        raise IolabError(f"run {run_id} is {_a(info.kind)} run, not {_a(kind)} run{hint}")
    seed = info.meta.get("seed")
    if not info.plan_path or not isinstance(seed, int):
        raise IolabError(f"run {run_id} has no recorded plan and seed; cannot repeat its blocks")
    if not Path(info.plan_path).is_file():
        raise PlanError(f"{info.plan_path}: the plan of run {run_id} is gone; cannot resume")
    plan = load_plan(info.plan_path, info.meta.get("profile"))
    if info.plan_hash and plan.sha256 != info.plan_hash:
        raise PlanError(f"{info.plan_path} changed since run {run_id} started; cannot resume it")
    runner.check_resumable(run_id)
    return plan, seed


def _a(kind: str) -> str:
    return f"an {kind}" if kind[:1] in "aeiou" else f"a {kind}"
