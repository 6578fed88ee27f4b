"""`iolab run PLAN` / `iolab run --resume RUN`: execute a plan in the lab, storing every sample."""

from __future__ import annotations

import click
from rich.console import Console

from iolab.cli.options import (
    check_fleet_store,
    check_plan_or_resume,
    exit_stopped,
    fleet_options,
    fleet_source,
    parse_tags,
    profile_of,
    store_location,
)
from iolab.cli.progress import ProgressReporter
from iolab.errors import IolabError
from iolab.plan import load_plan
from iolab.store import open_store


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
@fleet_options
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
    fleet: str | None,
    hosts: int,
    broker: str | None,
    quiet: bool,
) -> None:
    """Run PLAN in the lab: its cases in randomized complete blocks, every sample stored
    with its metrics, evidence and provenance; the machine restored afterwards.

    \b
    Examples:
      iolab run examples/ext4-iversion.yaml --quick
      iolab run --resume 12
    """
    from iolab.runs import lifecycle, plan_run  # SQLAlchemy and the lab: not for --help

    profile = profile_of(quick, profile)
    # Everything the command line and the plan can get wrong fails before the store is opened.
    check_plan_or_resume(plan_path, resume)
    if resume is not None and (label is not None or tags):
        raise IolabError(f"--label and --tag name a new run; run {resume} keeps its own")
    tag_map = parse_tags(tags)
    checked = None
    if plan_path is not None:
        checked = lifecycle.check(
            load_plan(plan_path, profile), destroy_data=destroy_data, here=fleet is None
        )
    check_fleet_store(ctx, fleet)
    with open_store(store_location(ctx), must_exist=resume is not None) as store:
        if checked is None:
            assert resume is not None
            run = lifecycle.reopen(
                store, resume, kind="lab", destroy_data=destroy_data, here=fleet is None
            )
            source = fleet_source(store, fleet, hosts, broker, run.plan)
        else:  # which hosts can run it, before the run exists
            source = fleet_source(store, fleet, hosts, broker, checked.plan)
            run = lifecycle.start(store, checked, label=label, tags=tag_map)
        plan = run.plan
        if not quiet:
            Console(stderr=True, soft_wrap=True).print(
                f"run {run.run_id}: {plan.name}"
                f"{f' ({plan.profile})' if plan.profile else ''}, {len(plan.cases)} cases × "
                f"{plan.repeat} blocks, seed {run.seed}",
                highlight=False,
            )
        try:
            with ProgressReporter(plan, quiet) as reporter:
                outcome = plan_run.execute(
                    run, destroy_data=destroy_data, reporter=reporter, source=source
                )
        except KeyboardInterrupt:
            exit_stopped("run", run.run_id, store.run(run.run_id).status, "iolab run")
    click.echo(
        f"run {run.run_id} {outcome.status}: {outcome.held}/{outcome.planned} samples stored"
        f" ({outcome.failed} failed in this session)"
    )
