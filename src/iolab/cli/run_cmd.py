"""`iolab run PLAN` / `iolab run --resume RUN`: execute a plan in the lab, storing every sample."""

from __future__ import annotations

import sys

import click
from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

from iolab.cli.options import parse_tags
from iolab.cli.resume import check_plan_or_resume, resumed_plan
from iolab.errors import EXIT_INTERRUPTED, IolabError
from iolab.lab import runner
from iolab.model.metrics import metric_info
from iolab.model.sample import Sample
from iolab.plan import load_plan
from iolab.plan.model import Case, Plan
from iolab.store import open_store


class ProgressReporter:
    """A progress bar with ETA on stderr, and one line per finished sample above it."""

    def __init__(self, plan: Plan, quiet: bool) -> None:
        self.console = Console(stderr=True, soft_wrap=True)  # warnings stay whole in logs
        self.kpis = [k.metric for k in plan.kpis]
        self.quiet = quiet
        self.progress = Progress(
            TextColumn("[progress.description]{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            TextColumn("ETA"),
            TimeRemainingColumn(),
            console=self.console,
            transient=True,
            disable=quiet or not self.console.is_terminal,
        )
        self.task = self.progress.add_task("starting", total=None)

    def __enter__(self) -> ProgressReporter:
        self.progress.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.progress.stop()

    def started(self, total: int, done: int) -> None:
        self.progress.update(self.task, total=total, completed=done)

    def sample_started(self, case: Case, block: int, position: int) -> None:
        self.progress.update(self.task, description=f"block {block} · {case.key}")

    def sample_done(self, sample: Sample, case: Case) -> None:
        self.progress.advance(self.task)
        if self.quiet:
            return
        where = f"block {sample.block} {case.key}"
        if sample.status != "ok":
            self.console.print(f"[red]✗[/] {where}: failed: {sample.reason}", highlight=False)
            return
        shown = []
        for name in self.kpis:
            value = sample.metrics.get(name)
            if value is not None:
                shown.append(
                    f"{name}={_fmt(value)}{metric_info(name).unit and ' ' + metric_info(name).unit}"
                )
        self.console.print(f"[green]✓[/] {where}: {', '.join(shown) or 'ok'}", highlight=False)

    def warning(self, message: str) -> None:
        self.console.print(f"[yellow]warning:[/] {message}", highlight=False)


def _fmt(value: float) -> str:
    for limit, suffix in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(value) >= limit:
            return f"{value / limit:.3g}{suffix}"
    return f"{value:.4g}"


@click.command("run")
@click.argument("plan_path", metavar="[PLAN]", required=False)
@click.option("--quick", is_flag=True, help="Use the plan's `quick` profile (short, for tests).")
@click.option("--profile", default=None, metavar="NAME", help="Use one of the plan's profiles.")
@click.option(
    "--resume",
    "resume",
    type=int,
    default=None,
    metavar="RUN",
    help="Continue an interrupted run without redoing its finished samples.",
)
@click.option("--label", default=None, help="A label for the run.")
@click.option("--tag", "tags", multiple=True, metavar="KEY=VALUE", help="Tag the run (repeatable).")
@click.option(
    "--destroy-data",
    is_flag=True,
    help="Allow formatting a designated device that carries a filesystem or partition table.",
)
@click.option("-q", "--quiet", is_flag=True, help="No progress display.")
@click.pass_context
def command(
    ctx: click.Context,
    plan_path: str | None,
    quick: bool,
    profile: str | None,
    resume: int | None,
    label: str | None,
    tags: tuple[str, ...],
    destroy_data: bool,
    quiet: bool,
) -> None:
    """Run PLAN in the lab: its cases in randomized complete blocks, every sample stored
    with its metrics, evidence and provenance; the machine restored afterwards."""
    if quick and profile and profile != "quick":
        raise IolabError("--quick and --profile name different profiles")
    profile = "quick" if quick else profile
    # Everything the command line alone can get wrong fails before the store is opened.
    check_plan_or_resume(plan_path, resume)
    if resume is not None and (label is not None or tags):
        raise IolabError(f"--label and --tag name a new run; run {resume} keeps its own")
    tag_map = parse_tags(tags)
    new_plan = load_plan(plan_path, profile) if plan_path is not None else None
    store = open_store(ctx.obj.get("db") if ctx.obj else None)
    try:
        if new_plan is None:
            assert resume is not None
            plan, seed = resumed_plan(store, resume, "lab")
            run_id = resume
            runner.preflight(plan, destroy_data=destroy_data)
        else:
            plan = new_plan
            runner.preflight(plan, destroy_data=destroy_data)
            run_id, seed = runner.start_run(store, plan, label=label, tags=tag_map)
        err = Console(stderr=True, soft_wrap=True)
        if not quiet:
            err.print(
                f"run {run_id}: {plan.name}"
                f"{f' ({plan.profile})' if plan.profile else ''}, {len(plan.cases)} cases × "
                f"{plan.repeat} blocks, seed {seed}",
                highlight=False,
            )
        try:
            with ProgressReporter(plan, quiet) as reporter:
                outcome = runner.execute_run(
                    store, plan, run_id, seed, destroy_data=destroy_data, reporter=reporter
                )
        except KeyboardInterrupt:
            click.echo(
                f"iolab: run {run_id} interrupted, machine restored; "
                f"`iolab run --resume {run_id}` continues it",
                err=True,
            )
            sys.exit(EXIT_INTERRUPTED)
        total = len(store.done_keys(run_id))
        click.echo(
            f"run {run_id} {outcome.status}: {total}/{outcome.planned} samples stored"
            f" ({outcome.failed} failed in this session)"
        )
    finally:
        store.close()
