"""`iolab ab PLAN`: adaptive A/B — randomized blocks of the plan's variants with the lab
runner (the same `LabSession` as `iolab run`), a sequential decision per KPI after every
block, and a stop as soon as every KPI has a verdict or the budget is spent.

Every sample is stored in a run of kind "ab"; the final report is `iolab compare`'s with the
KPI verdicts and intervals of the sequential test (iolab.stats.sequential explains why
they stay valid although we looked after every block).
"""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass

import click
from click.core import ParameterSource
from rich.console import Console

from iolab.cli.ab_contrasts import Contrast, all_decided, contrasts, replay
from iolab.cli.ab_loop import run_blocks
from iolab.cli.options import ci_option, margin_option, parse_tags
from iolab.cli.resume import check_plan_or_resume, resumed_plan
from iolab.errors import EXIT_INTERRUPTED, IolabError, LabError, PlanError, SelectorError
from iolab.lab import runner
from iolab.plan import load_plan
from iolab.plan.model import Plan
from iolab.report import FORMATS
from iolab.report.build import Options, by_report, sequential_key, with_sequential
from iolab.select import Selector
from iolab.store import open_store
from iolab.store.store import Store

from .compare_cmd import check_levels, emit

# blocks when --max-runs is not given: what a 3% effect at ~10% CV needs here (docs/compare.md)
DEFAULT_MAX_BLOCKS = 200

_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(s|sec|m|min|h)?\s*$")


def parse_duration(text: str) -> float:
    """`90`, `90s`, `10m`, `1.5h` → seconds."""
    m = _DURATION.match(text)
    if not m:
        raise IolabError(f"--max-time {text!r}: expected a duration such as 90s, 10m or 1h")
    scale = {"m": 60.0, "min": 60.0, "h": 3600.0}.get(m.group(2) or "s", 1.0)
    seconds = float(m.group(1)) * scale
    if seconds <= 0:
        raise IolabError(f"--max-time {text!r}: must be positive")
    return seconds


# options that define a run's test: a resumed run keeps its own
_RUN_OPTIONS = {
    "quick": "--quick",
    "profile": "--profile",
    "margin": "--margin",
    "alpha": "--alpha",
    "label": "--label",
    "tags": "--tag",
}


@dataclass
class AbSetup:
    """What the blocks to come run under: a new run, or a resumed one."""

    plan: Plan
    run_id: int
    seed: int
    items: list[Contrast]
    alpha: float
    margin: float
    budget: int
    first_block: int


def new_run(
    store: Store,
    plan: Plan,
    alpha: float,
    margin: float,
    budget: int,
    max_time_s: float | None,
    label: str | None,
    tags: dict[str, str],
) -> AbSetup:
    items = contrasts(plan, alpha, margin, budget, budget)
    run_id, seed = runner.start_run(store, plan, label=label, tags=tags, kind="ab")
    store.update_run_meta(
        run_id,
        {
            "ab": {
                "alpha": alpha,
                "margin_pct": margin,
                "max_blocks": budget,
                "stake_blocks": budget,
                "max_time_s": max_time_s,
            }
        },
    )
    return AbSetup(plan, run_id, seed, items, alpha, margin, budget, 1)


def resumed_run(
    store: Store, run_id: int, max_runs: int | None, max_time_s: float | None
) -> AbSetup:
    """Rebuild the run's decisions from its stored blocks; go on where it stopped."""
    plan, seed = resumed_plan(store, run_id, "ab")
    recorded = store.run(run_id).meta.get("ab") or {}
    try:
        alpha = float(recorded["alpha"])
        margin = float(recorded["margin_pct"])
        stake_blocks = int(recorded.get("stake_blocks", recorded["max_blocks"]))
        budget = max_runs if max_runs is not None else int(recorded["max_blocks"])
    except (KeyError, TypeError, ValueError):
        raise IolabError(f"run {run_id} has no recorded ab settings; cannot resume it") from None
    items = contrasts(plan, alpha, margin, budget, stake_blocks)
    last = replay(store, run_id, items)
    if last >= budget and not all_decided(items):
        raise IolabError(
            f"run {run_id} has spent its budget of {budget} blocks; "
            f"give --max-runs above {last} to continue it"
        )
    store.finish_run(run_id, "running")
    store.update_run_meta(
        run_id, {"ab": {**recorded, "max_blocks": budget, "max_time_s": max_time_s}}
    )
    return AbSetup(plan, run_id, seed, items, alpha, margin, budget, last + 1)


@click.command("ab")
@click.argument("plan_path", metavar="[PLAN]", required=False)
@click.option(
    "--resume",
    "resume",
    type=click.IntRange(min=1),
    default=None,
    metavar="RUN",
    help="Continue ab run RUN (after Ctrl-C, a time limit or a spent budget) with its own "
    "plan, seed, alpha, margin and stakes; --max-runs then counts all its blocks.",
)
@click.option("--quick", is_flag=True, help="Use the plan's `quick` profile.")
@click.option("--profile", default=None, metavar="NAME", help="Use one of the plan's profiles.")
@margin_option
@click.option(
    "--alpha",
    type=float,
    default=0.05,
    show_default=True,
    help="False-alarm rate per KPI, kept despite looking after every block.",
)
@click.option(
    "--max-runs",
    "max_runs",
    type=click.IntRange(min=1),
    default=None,
    metavar="N",
    help=f"At most N blocks (each runs every variant once in every cell; default "
    f"{DEFAULT_MAX_BLOCKS}, or a resumed run's own); the test's stakes are sized so that "
    "effects resolvable within N blocks can be decided.",
)
@click.option(
    "--max-time",
    "max_time",
    default=None,
    metavar="DURATION",
    help="Stop starting blocks after this long, e.g. 10m (default: no limit).",
)
@click.option("--label", default=None, help="A label for the run.")
@click.option("--tag", "tags", multiple=True, metavar="KEY=VALUE", help="Tag the run.")
@click.option(
    "--destroy-data", is_flag=True, help="Allow formatting a designated device that carries data."
)
@click.option(
    "--format",
    "format_name",
    type=click.Choice(list(FORMATS)),
    default="table",
    show_default=True,
    help="Format of the final report.",
)
@click.option("--all", "show_all", is_flag=True, help="Every secondary metric in the report.")
@ci_option
@click.option("-q", "--quiet", is_flag=True, help="No progress display.")
@click.pass_context
def command(
    ctx: click.Context,
    plan_path: str | None,
    resume: int | None,
    quick: bool,
    profile: str | None,
    margin: float,
    alpha: float,
    max_runs: int | None,
    max_time: str | None,
    label: str | None,
    tags: tuple[str, ...],
    destroy_data: bool,
    format_name: str,
    show_all: bool,
    ci: bool,
    quiet: bool,
) -> None:
    """Adaptive A/B of PLAN's variants: blocks until every KPI has a verdict (regression,
    improvement, or no change within ±margin) or the budget is spent; then the report."""
    # Everything the command line alone can get wrong fails before the store is opened.
    check_plan_or_resume(plan_path, resume)
    if resume is not None:
        given = [
            flag
            for name, flag in _RUN_OPTIONS.items()
            if ctx.get_parameter_source(name) is ParameterSource.COMMANDLINE
        ]
        if given:
            raise IolabError(f"{', '.join(given)}: run {resume} keeps its own")
    check_levels(alpha, margin)
    if quick and profile and profile != "quick":
        raise IolabError("--quick and --profile name different profiles")
    max_time_s = parse_duration(max_time) if max_time is not None else None
    tag_map = parse_tags(tags)
    plan: Plan | None = None
    if plan_path is not None:
        plan = load_plan(plan_path, "quick" if quick else profile)
        if len(plan.variants) < 2:
            raise PlanError(f"{plan_path}: `iolab ab` needs a plan with at least two variants")
        if not plan.kpis:
            raise PlanError(f"{plan_path}: `iolab ab` needs kpis: the metrics to decide on")
        if not contrasts(plan, alpha, margin, 1, 1):
            raise PlanError(f"{plan_path}: no matrix cell holds the baseline and another variant")
    console = Console(stderr=True, soft_wrap=True)  # progress lines stay whole in logs
    db = ctx.obj.get("db") if ctx.obj else None
    store = open_store(db, must_exist=resume is not None)
    try:
        if plan is not None:
            budget = max_runs if max_runs is not None else DEFAULT_MAX_BLOCKS
            setup = new_run(store, plan, alpha, margin, budget, max_time_s, label, tag_map)
            opening = f"ab run {setup.run_id}"
        else:
            assert resume is not None
            setup = resumed_run(store, resume, max_runs, max_time_s)
            opening = (
                f"ab run {setup.run_id} resumed at block {setup.first_block} "
                f"(blocks 1-{setup.first_block - 1} replayed)"
            )
        plan, run_id, items = setup.plan, setup.run_id, setup.items
        if not quiet:
            console.print(
                f"{opening}: {plan.name}{f' ({plan.profile})' if plan.profile else ''}, "
                f"{len(items)} comparison(s) × {len(plan.kpis)} KPI(s), at most "
                f"{setup.budget} blocks{f' or {max_time}' if max_time else ''}, "
                f"seed {setup.seed}",
                highlight=False,
            )
        status, why, interrupted = "failed", "", False
        try:
            status, why = run_blocks(
                store,
                plan,
                run_id,
                setup.seed,
                items,
                first_block=setup.first_block,
                max_blocks=setup.budget,
                max_time_s=max_time_s,
                destroy_data=destroy_data,
                console=console,
                quiet=quiet,
            )
        except KeyboardInterrupt:
            status, why, interrupted = "interrupted", "interrupted", True
        finally:
            store.finish_run(run_id, status)
        states = {
            sequential_key(c.cell, str(c.baseline.variant), str(c.other.variant)): [
                d.finish(why) if d.state is None or not d.state.done else d.state
                for d in c.decisions.values()
            ]
            for c in items
        }
        store.update_run_meta(
            run_id,
            {
                "ab_result": {
                    "stopped": why,
                    "states": [
                        {
                            "comparison": c.title,
                            "kpi": s.name,
                            "verdict": s.verdict,
                            "blocks": s.n_blocks,
                            "estimate_pct": s.estimate_pct,
                            "ci_low_pct": s.ci_low_pct,
                            "ci_high_pct": s.ci_high_pct,
                        }
                        for c in items
                        for s in states[
                            sequential_key(c.cell, str(c.baseline.variant), str(c.other.variant))
                        ]
                    ],
                }
            },
        )
        if not quiet:
            console.print(f"ab run {run_id} {status}: {why}", highlight=False)
        baseline = plan.baseline or plan.variants[0]
        try:
            report = by_report(
                store,
                Selector(f"run:{run_id}", run_id=run_id),
                "variant",
                baseline,
                Options(alpha=setup.alpha, margin_pct=setup.margin),
            )
        except SelectorError:
            if interrupted:
                click.echo(f"iolab: ab run {run_id} interrupted before a block ended", err=True)
                sys.exit(EXIT_INTERRUPTED)
            raise LabError(f"ab run {run_id}: no block measured both variants") from None
        report = with_sequential(report, states)
    finally:
        store.close()
    if interrupted:
        emit(report, format_name, show_all, False)
        click.echo(
            f"iolab: ab run {run_id} interrupted, machine restored; "
            f"`iolab ab --resume {run_id}` continues it",
            err=True,
        )
        sys.exit(EXIT_INTERRUPTED)
    emit(report, format_name, show_all, ci)
