"""A run's life, once for every driver: preflight → claim → interrupts → finish, and resume.

The order is the point: nothing is written to the store — nor is the store opened — before
the plan has passed the lab's preflight (safety rules of designated devices, tools present,
monitors known): `check` preflights and returns the `Checked` plan that `start` alone
accepts, so a refused `iolab run` or `iolab ab` leaves no run and no new store file
behind; a resumed run is marked "running" again only when its blocks start (`running`),
after its plan has been re-read, checked unchanged and preflighted.  `running` turns
SIGTERM/SIGHUP into KeyboardInterrupt and records how the run ended, whatever happens.
"""

from __future__ import annotations

import contextlib
import secrets
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

from iolab.errors import IolabError, PlanError, RefusedError
from iolab.lab import claim as lab_claim
from iolab.lab import provenance
from iolab.lab.runner import interrupts_raise, preflight
from iolab.plan import load_plan
from iolab.plan.model import Plan, WorkloadSpec
from iolab.plan.placeholders import uses_commit
from iolab.runs.meta import LabMeta, RecordedKpi, resume_point
from iolab.store.store import Store

# which command continues a run of each kind
CONTINUED_BY = {
    "lab": "iolab run --resume",
    "ab": "iolab ab --resume",
    "bisect": "iolab bisect --resume",
}


class HandedOver(Exception):
    """The run goes on in another process: a one-box kernel run's box boots the next
    sample's kernel, and its resume unit continues the run after the boot.  The run stays
    `running`, owned by nobody until then."""


@dataclass(frozen=True)
class OpenRun:
    """A run that passed preflight and is claimed in the store: ready for its blocks."""

    store: Store
    plan: Plan
    run_id: int
    seed: int
    resumed: bool = False


def planned_samples(plan: Plan) -> int:
    return plan.repeat * len(plan.cases)


def lab_meta(plan: Plan, seed: int) -> LabMeta:
    return LabMeta(
        seed=seed,
        profile=plan.profile,
        repeat=plan.repeat,
        cases=tuple(c.key for c in plan.cases),
        planned_samples=planned_samples(plan),
        kpis=tuple(RecordedKpi(k.metric, k.direction) for k in plan.kpis),
        variants=tuple(plan.variants),
        baseline=plan.baseline,
        plan_name=plan.name,
    )


def claim(
    store: Store,
    plan: Plan,
    seed: int,
    *,
    kind: str,
    label: str | None,
    tags: Mapping[str, str] | None,
) -> int:
    """Create the run row (status "running"), claimed by this process from the start (the
    store's atomic claim, see iolab.lab.claim): the one place a run comes into being."""
    return store.create_run(
        kind,
        label=label,
        tags=tags,
        plan_path=plan.path,
        plan_text=plan.text,
        plan_hash=plan.sha256,
        host=provenance.host()["host"],
        meta=lab_meta(plan, seed).to_json(),
        claimed_by=lab_claim.this_process(),
    )


@dataclass(frozen=True)
class Checked:
    """A plan that passed the preflight for a new run of `kind`; made by `check` only."""

    plan: Plan
    kind: str
    destroy_data: bool


def check(
    plan: Plan,
    *,
    kind: str = "lab",
    destroy_data: bool = False,
    here: bool = True,
    boots_here: bool = False,
) -> Checked:
    """Everything that can refuse a new run, before any store is opened: `{src}`/`{rev}`
    outside a bisect, then the lab's preflight — unless the blocks run elsewhere
    (`here=False`: a fleet, whose hosts each preflight the plan under their own rules).
    `boots_here`: this box boots the plan's kernels itself (`--here`)."""
    if kind != "bisect" and _names_a_commit(plan):
        raise PlanError(
            f"{plan.path or plan.name}: {{src}} and {{rev}} name a commit's work tree and sha; "
            "they have values only under `iolab bisect`"
        )
    if boots_here and not plan.switches_kernels:
        raise PlanError(
            f"{plan.path or plan.name}: --here boots the plan's kernels on this box; "
            "the plan names none (without --here its blocks run here anyway)"
        )
    _runs_here(plan, here=here, boots_here=boots_here)
    if here:
        preflight(plan, destroy_data=destroy_data)
    return Checked(plan, kind, destroy_data)


def _runs_here(plan: Plan, *, here: bool, boots_here: bool = False) -> None:
    """Refuse, before anything is touched: a plan naming a target no lab here can make
    (`requires:`, exit 3), one naming kernels when its blocks would run in this process
    (exit 2: it needs a fleet whose workers boot them, or `--here`, docs/kernels.md)."""
    # on a fleet, the hosts' `provides` may meet what no lab here can (iolab.fleet.eligible)
    why = plan.unmeetable() if here else None
    if why is not None:
        raise RefusedError(f"{plan.path or plan.name}: refusing: {why}")
    # kernels named by commit: `ab --kernel-repo` reads them as the releases it built first
    why = plan.needs_kernel_repo()
    if why is not None:
        raise PlanError(f"{plan.path or plan.name}: {why}")
    why = plan.needs_worker() if here and not boots_here else None
    if why is not None:
        raise PlanError(f"{plan.path or plan.name}: {why}")


def start(
    store: Store,
    checked: Checked,
    *,
    label: str | None = None,
    tags: Mapping[str, str] | None = None,
) -> OpenRun:
    """Create the run of a checked plan (seed drawn when the plan has none)."""
    plan = checked.plan
    seed = plan.seed if plan.seed is not None else secrets.randbelow(2**31)
    run_id = claim(store, plan, seed, kind=checked.kind, label=label, tags=tags)
    return OpenRun(store, plan, run_id, seed)


def reopen(
    store: Store,
    run_id: int,
    *,
    kind: str,
    destroy_data: bool = False,
    here: bool = True,
    template_sha256: str | None = None,
    derive: Callable[[Plan], Plan] | None = None,
    boots_here: bool = False,
) -> OpenRun:
    """Run `run_id` again with its own plan and seed, after the same preflight as a new run.

    The run must be of `kind` and not running elsewhere; its plan file must be where it was
    and unchanged (SHA-256), so that the block orders and cases that follow are the ones
    the run started with.  A run that stored a plan derived from the file (a kernel bisect's,
    one variant per kernel; an ab run's with its kernel commits' releases) gives the file's
    own SHA-256 as `template_sha256`; the plan returned is then the file's, or what `derive`
    makes of it before it is checked.
    """
    info = store.run(run_id)
    if info.status == "cancelled":
        raise IolabError(f"run {run_id} was cancelled (iolab cancel); start a new run instead")
    if info.kind != kind:
        other = CONTINUED_BY.get(info.kind)
        hint = f"; `{other} {run_id}` continues it" if other else ""
        raise IolabError(f"run {run_id} is {_a(info.kind)} run, not {_a(kind)} run{hint}")
    seed, profile = resume_point(info)
    assert info.plan_path is not None  # resume_point checked it
    if not Path(info.plan_path).is_file():
        raise PlanError(f"{info.plan_path}: the plan of run {run_id} is gone; cannot resume")
    plan = load_plan(info.plan_path, profile)
    wanted = template_sha256 or info.plan_hash
    if wanted and plan.sha256 != wanted:
        raise PlanError(f"{info.plan_path} changed since run {run_id} started; cannot resume it")
    plan = derive(plan) if derive is not None else plan
    _runs_here(plan, here=here, boots_here=boots_here)
    lab_claim.claim(store, run_id)  # atomic in the run's own store; refused while alive
    if here:
        preflight(plan, destroy_data=destroy_data)
    return OpenRun(store, plan, run_id, seed, resumed=True)


@dataclass
class Ending:
    """How the run ends; the body of `running` sets `status` when it completes."""

    status: str = "failed"  # finished | interrupted | cancelled | failed | running (handed over)


def stopped_status(store: Store, run_id: int) -> str:
    """How an interrupt ends run `run_id`: "cancelled" when `iolab cancel` asked for it (the
    SIGTERM it sends a local run looks like any other), else "interrupted"."""
    from iolab.store import leases

    with contextlib.suppress(IolabError):
        if leases.cancel_requested(store, run_id):
            return "cancelled"
    return "interrupted"


@contextlib.contextmanager
def running(run: OpenRun) -> Iterator[Ending]:
    """Interrupts (Ctrl-C, SIGTERM, SIGHUP) raise KeyboardInterrupt inside; the run's status
    is recorded on the way out — "interrupted" for those ("cancelled" when `iolab cancel`
    sent it), "failed" for any other error."""
    ending = Ending()
    if run.resumed:
        run.store.finish_run(run.run_id, "running")
    try:
        with interrupts_raise():
            yield ending
    except HandedOver:
        ending.status = "running"  # whoever continues it claims it again
        raise
    except KeyboardInterrupt:
        ending.status = stopped_status(run.store, run.run_id)
        with contextlib.suppress(IolabError):
            run.store.finish_run(run.run_id, ending.status)
        raise
    except BaseException:
        ending.status = "failed"
        with contextlib.suppress(IolabError):
            run.store.finish_run(run.run_id, ending.status)
        raise
    run.store.finish_run(run.run_id, ending.status)


def _a(kind: str) -> str:
    return f"an {kind}" if kind[:1] in "aeiou" else f"a {kind}"


def _names_a_commit(plan: Plan) -> bool:
    """Whether a workload step of the plan names {src} or {rev} (a bisect plan)."""

    def names(spec: WorkloadSpec | None) -> bool:
        if spec is None:
            return False
        overrides = [value or "" for _, value in spec.fio_overrides]
        texts = [spec.fio_text or "", spec.fio_file or "", *spec.argv, *overrides]
        return any(uses_commit(t) for t in texts)

    return any(
        names(c.workload) or names(c.prepare.fill) or names(c.prepare.warmup) for c in plan.cases
    )
