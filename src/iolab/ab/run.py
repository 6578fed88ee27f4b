"""An adaptive A/B as a service: randomized blocks of a plan's variants with the lab session
(the same `LabSession` as `iolab run`), a sequential decision per KPI after every block, and
a stop as soon as every KPI has a verdict or the budget is spent.

`start` / `resume` open the run through `iolab.runs.lifecycle` (preflight before anything is
stored); `run` drives the blocks and returns an `AbResult`: the stop reason, every KPI's
final state and the comparison report with the sequential verdicts and intervals
(iolab.stats.sequential explains why they stay valid although we looked after every block).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from iolab.ab.contrasts import Contrast, all_decided, contrasts, replay
from iolab.ab.loop import BlockReporter, evidence_floor, run_blocks
from iolab.analysis.build import Options, by_report, sequential_key, with_sequential
from iolab.analysis.select import Selector
from iolab.builds import kernel_commits
from iolab.builds.kernel_commits import KernelCommits, with_releases
from iolab.errors import IolabError, LabError, PlanError, SelectorError
from iolab.history.registry import record_report
from iolab.lab.runner import LabSession
from iolab.plan.model import Plan
from iolab.report.model import Report
from iolab.runs import lifecycle
from iolab.runs.blocks import BlockSource, LocalBlocks
from iolab.runs.meta import DEFAULT_MAX_BLOCKS, AbOutcome, AbSettings, KpiOutcome, ab_settings
from iolab.stats.sequential import sign_bets_for
from iolab.stats.types import SequentialState
from iolab.store.store import Store


@dataclass(frozen=True)
class AbSetup:
    """An open ab run and what its blocks run under: a new run, or a resumed one."""

    run: lifecycle.OpenRun
    settings: AbSettings
    items: list[Contrast]
    first_block: int  # 1 for a new run; after the last stored block for a resumed one


@dataclass(frozen=True)
class AbResult:
    run_id: int
    status: str  # finished | interrupted | running (handed over: this box boots a kernel)
    stopped: str  # why the blocks stopped
    interrupted: bool
    states: Mapping[tuple[tuple[tuple[str, str], ...], str, str], list[SequentialState]]
    report: Report | None  # None when interrupted before a block ended, or handed over


def check_plan(plan: Plan) -> None:
    """An A/B needs two variants, KPIs and a matrix cell holding the baseline and another."""
    where = plan.path or plan.name
    if len(plan.variants) < 2:
        raise PlanError(f"{where}: `iolab ab` needs a plan with at least two variants")
    if not plan.kpis:
        raise PlanError(f"{where}: `iolab ab` needs kpis: the metrics to decide on")
    if not contrasts(plan, AbSettings(0.05, 1.0, 1, 1, None)):
        raise PlanError(f"{where}: no matrix cell holds the baseline and another variant")


def check(
    plan: Plan, *, destroy_data: bool = False, here: bool = True, boots_here: bool = False
) -> lifecycle.Checked:
    """Everything that can refuse an A/B of `plan`, before any store is opened (`here`:
    the lab's preflight too; a fleet's hosts preflight it themselves; `boots_here`: this box
    boots the plan's kernels, `iolab ab --here`)."""
    check_plan(plan)
    return lifecycle.check(
        plan, kind="ab", destroy_data=destroy_data, here=here, boots_here=boots_here
    )


@dataclass(frozen=True)
class NewAb:
    """A new A/B of a checked plan (`check`) and its settings; `kernels`: the plan's kernel
    commits, built (`builds.kernel_commits.build_plan`), shipped to the store for the hosts
    before any block is sent."""

    checked: lifecycle.Checked
    alpha: float = 0.05
    margin_pct: float = 1.0
    max_blocks: int | None = None
    max_time_s: float | None = None
    label: str | None = None
    tags: Mapping[str, str] | None = None
    kernels: KernelCommits | None = None
    # each KPI decided by two one-sided tests, each at alpha (`ab --one-sided`): a reported
    # regression's question
    one_sided: bool = False


@dataclass(frozen=True)
class ResumedAb:
    """ab run `run_id` again; `max_blocks` (if given) replaces its budget, counting all its
    blocks."""

    run_id: int
    max_blocks: int | None = None
    max_time_s: float | None = None
    destroy_data: bool = False
    here: bool = True
    boots_here: bool = False


def open_run(store: Store, request: NewAb | ResumedAb) -> AbSetup:
    """The A/B `request` asks for, opened in `store`: a new run, or one resumed."""
    if isinstance(request, ResumedAb):
        return resume(store, request)
    return start(store, request)


def start(store: Store, request: NewAb) -> AbSetup:
    """Create the ab run of a checked plan with its settings."""
    checked = request.checked
    if checked.kind != "ab":
        raise ValueError(f"a plan checked for a {checked.kind} run, not for an A/B")
    plan = checked.plan
    budget = request.max_blocks if request.max_blocks is not None else DEFAULT_MAX_BLOCKS
    settings = AbSettings(
        request.alpha,
        request.margin_pct,
        budget,
        budget,
        request.max_time_s,
        sign_bets=sign_bets_for(budget),
        one_sided=request.one_sided,
    )
    items = contrasts(plan, settings)
    run = lifecycle.start(store, checked, label=request.label, tags=request.tags)
    store.update_run_meta(run.run_id, settings.to_meta())
    kernels = request.kernels
    if kernels is not None:
        store.update_run_meta(run.run_id, kernels.to_meta())
        shipped = {sha: kernel_commits.publish(store, b) for sha, b in kernels.builds.items()}
        kernel_commits.record(store, run.run_id, shipped)
    return AbSetup(run, settings, items, 1)


def resume(store: Store, request: ResumedAb) -> AbSetup:
    """Reopen an ab run: its decisions rebuilt from its stored blocks, going on where it
    stopped.  A run over kernel commits keeps its builds: the plan file is read with their
    releases again."""
    run_id = request.run_id
    kernels = KernelCommits.from_meta(store.run(run_id))
    run = lifecycle.reopen(
        store,
        run_id,
        kind="ab",
        destroy_data=request.destroy_data,
        here=request.here,
        template_sha256=None if kernels is None else kernels.template_sha256,
        derive=None if kernels is None else (lambda t: with_releases(t, kernels.releases())),
        boots_here=request.boots_here,
    )
    recorded = ab_settings(store.run(run_id))
    budget = request.max_blocks if request.max_blocks is not None else recorded.max_blocks
    settings = AbSettings(
        recorded.alpha,
        recorded.margin_pct,
        budget,
        recorded.stake_blocks,
        request.max_time_s,
        sign_bets=recorded.sign_bets,
        one_sided=recorded.one_sided,
    )
    items = contrasts(run.plan, settings)
    last = replay(store, run_id, items, whole_blocks=run.plan.switches_kernels)
    if last >= budget and not all_decided(items):
        raise IolabError(
            f"run {run_id} has spent its budget of {budget} blocks; "
            f"give --max-blocks above {last} to continue it"
        )
    store.update_run_meta(run_id, settings.to_meta())
    return AbSetup(run, settings, items, last + 1)


def execute(
    store: Store,
    request: NewAb | ResumedAb,
    reporter: BlockReporter,
    *,
    destroy_data: bool = False,
    source: Callable[[lifecycle.OpenRun], BlockSource] | None = None,
    opened: Callable[[AbSetup], None] | None = None,
) -> tuple[AbSetup, AbResult]:
    """An A/B from its request to its result, the one sequence `iolab ab` and `api.run_ab`
    share: the run opened (new or resumed; `opened` is told), then its blocks."""
    setup = open_run(store, request)
    if opened is not None:
        opened(setup)
    return setup, run(setup, reporter, destroy_data=destroy_data, source=source)


def run(
    setup: AbSetup,
    reporter: BlockReporter,
    *,
    destroy_data: bool = False,
    source: Callable[[lifecycle.OpenRun], BlockSource] | None = None,
) -> AbResult:
    """The blocks of an open ab run, then its outcome recorded and its report built.

    Ctrl-C (or SIGTERM/SIGHUP) ends the blocks with the machine restored; the result then says
    `interrupted` and carries the report of the blocks measured so far, if any.  A source
    that is a context manager (`fleet.onebox`) is entered for the blocks; one that hands the
    run over (this box boots a kernel) ends it here as `running`, with no report."""
    run_, store = setup.run, setup.run.store
    interrupted = False
    why = "every KPI has a verdict"
    try:
        with lifecycle.running(run_) as ending:
            floor = evidence_floor(setup.settings.alpha, setup.settings.max_blocks)
            # a resumed run may have its verdicts, and its floor's blocks, already
            if not all_decided(setup.items) or setup.first_block <= floor:
                session = LabSession(
                    run_.plan, store, run_.run_id, run_.seed, destroy_data, reporter
                )
                with contextlib.ExitStack() as stack:
                    if source is None:
                        blocks: BlockSource = LocalBlocks(stack.enter_context(session), store)
                    else:
                        blocks = source(run_)
                        if isinstance(blocks, contextlib.AbstractContextManager):
                            stack.enter_context(blocks)
                    why = run_blocks(
                        blocks,
                        setup.items,
                        reporter,
                        first_block=setup.first_block,
                        max_blocks=setup.settings.max_blocks,
                        max_time_s=setup.settings.max_time_s,
                        min_blocks=floor,
                    )
            ending.status = "finished"
    except lifecycle.HandedOver as exc:
        return AbResult(run_.run_id, "running", str(exc), False, {}, None)
    except KeyboardInterrupt:
        interrupted, why = True, "interrupted"
    states = final_states(setup.items, why)
    store.update_run_meta(run_.run_id, outcome(setup.items, states, why).to_meta())
    baseline = run_.plan.baseline or run_.plan.variants[0]
    options = Options(alpha=setup.settings.alpha, margin_pct=setup.settings.margin_pct)
    report: Report | None = None
    try:
        report = by_report(
            store, Selector(f"run:{run_.run_id}", run_id=run_.run_id), "variant", baseline, options
        )
    except SelectorError:
        if not interrupted:
            raise LabError(f"ab run {run_.run_id}: no block measured both variants") from None
    if report is not None:
        report = with_sequential(report, states)
        if not interrupted:  # a finished run's KPI regressions → the registry (docs/history.md)
            record_report(store, report, "ab", f"run:{run_.run_id}", run_id=run_.run_id)
    status = "interrupted" if interrupted else "finished"
    if not interrupted and run_.store.run(run_.run_id).meta.get(kernel_commits.META):
        kernel_commits.drop(store, run_.run_id)  # the builds stay in the cache
    return AbResult(run_.run_id, status, why, interrupted, states, report)


def final_states(
    items: list[Contrast], why: str
) -> dict[tuple[tuple[tuple[str, str], ...], str, str], list[SequentialState]]:
    """Every decision's state at the stop, keyed as `with_sequential` finds its group."""
    return {
        sequential_key(c.cell, str(c.baseline.variant), str(c.other.variant)): [
            d.finish(why) if d.state is None or not d.state.done else d.state
            for d in c.decisions.values()
        ]
        for c in items
    }


def outcome(
    items: list[Contrast],
    states: Mapping[tuple[tuple[tuple[str, str], ...], str, str], list[SequentialState]],
    why: str,
) -> AbOutcome:
    return AbOutcome(
        stopped=why,
        states=tuple(
            KpiOutcome(
                comparison=c.title,
                kpi=s.name,
                verdict=s.verdict,
                blocks=s.n_blocks,
                estimate_pct=s.estimate_pct,
                ci_low_pct=s.ci_low_pct,
                ci_high_pct=s.ci_high_pct,
            )
            for c in items
            for s in states[sequential_key(c.cell, str(c.baseline.variant), str(c.other.variant))]
        ),
    )
