"""`iolab ab PLAN` / `iolab ab --resume RUN`: the adaptive A/B of `iolab.ab.run`, with its
progress on stderr and its final report (`iolab compare`'s, with the sequential verdicts) on
stdout."""

from __future__ import annotations

import shlex
import sys
from typing import Any

import click
from rich.console import Console

from iolab.cli.options import (
    DURATION,
    check_fleet_store,
    check_levels,
    check_plan_or_resume,
    ci_option,
    exit_stopped,
    fleet_options,
    fleet_source,
    here_source,
    margin_option,
    output_option_saying,
    parse_tags,
    profile_of,
    refuse_with_resume,
    say_handed_over,
    store_location,
    to_output,
)
from iolab.cli.progress import AbReporter
from iolab.cli.render import FORMAT_NAMES, emit
from iolab.errors import EXIT_INTERRUPTED, IolabError
from iolab.plan import load_plan
from iolab.report import ci_exit_code
from iolab.runs.meta import DEFAULT_MAX_BLOCKS
from iolab.store import open_store

# options that define a run's test: a resumed run keeps its own
_RUN_OPTIONS = {
    "quick": "--quick",
    "profile": "--profile",
    "margin": "--margin",
    "alpha": "--alpha",
    "label": "--label",
    "tags": "--tag",
    "kernel_repo": "--kernel-repo",
    "kernel_build": "--kernel-build",
    "one_sided": "--one-sided",
}


@click.command("ab")
@click.argument("plan_path", metavar="[PLAN]", required=False)
@click.option(
    "--resume",
    "resume",
    type=click.IntRange(min=1),
    default=None,
    metavar="RUN",
    help="Continue ab run RUN (after Ctrl-C, a time limit or a spent budget) with its own "
    "plan, seed, alpha, margin and stakes; --max-blocks then counts all its blocks.",
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
    "--one-sided",
    is_flag=True,
    help="Decide each KPI by two one-sided tests at --alpha, one per direction, instead of "
    "one two-sided test: the question of a reported regression (is it worse?).  A large "
    "change decides about a block sooner; the interval is a bound on the verdict's side.",
)
@click.option(
    "--max-blocks",
    "--max-runs",
    "max_blocks",
    type=click.IntRange(min=1),
    default=None,
    metavar="N",
    help=f"At most N blocks (each runs every variant once in every cell; default "
    f"{DEFAULT_MAX_BLOCKS}, or a resumed run's own); the test's stakes are sized so that "
    "effects resolvable within N blocks can be decided.  --max-runs is an older name.",
)
@click.option(
    "--max-time",
    "max_time_s",
    type=DURATION,
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
    type=click.Choice([*FORMAT_NAMES, "html"]),
    default="table",
    show_default=True,
    help="Format of the final report; html: every sample plotted, the confidence sequence.",
)
@output_option_saying("Write the final report to FILE instead of standard output.")
@click.option("--all", "show_all", is_flag=True, help="Every secondary metric in the report.")
@click.option("--html", "html_path", default=None, metavar="FILE", hidden=True)
@ci_option
@fleet_options
@click.option(
    "--kernel-repo",
    type=click.Path(file_okay=False),
    default=None,
    help="Build the plan's `kernel: {commit: SHA}` variants from this git repository, ship "
    "them through the store and boot them on the --fleet (with --kernel-build; docs/kernels.md).",
)
@click.option(
    "--kernel-build",
    default=None,
    metavar="CMD",
    help="The kernel build hook, as for `iolab bisect --kernel-repo` (the same build cache).",
)
@click.option(
    "--here",
    is_flag=True,
    help="Boot the plan's kernels on this box itself (kexec), one boot per sample; a systemd "
    "unit continues the run after each boot (docs/kernels.md).",
)
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
    one_sided: bool,
    max_blocks: int | None,
    max_time_s: float | None,
    label: str | None,
    tags: tuple[str, ...],
    destroy_data: bool,
    format_name: str,
    output: str | None,
    show_all: bool,
    html_path: str | None,
    ci: bool,
    fleet: str | None,
    hosts: int,
    broker: str | None,
    kernel_repo: str | None,
    kernel_build: str | None,
    here: bool,
    quiet: bool,
) -> None:
    """Adaptive A/B of PLAN's variants: blocks until every KPI has a verdict (regression,
    improvement, or no change within ±margin) or the budget is spent; then the report.
    (--html FILE, an older spelling, writes the HTML report to FILE besides.)

    \b
    Examples:
      iolab ab examples/ext4-iversion.yaml --quick --max-time 10m
      iolab ab --resume 12 --max-blocks 400 --format html -o ab12.html
      iolab ab kernels.yaml --here --max-blocks 6
    """
    from iolab import ab  # numpy and SQLAlchemy: not for --help

    # Everything the command line alone can get wrong fails before the store is opened.
    check_plan_or_resume(plan_path, resume)
    refuse_with_resume(ctx, resume, _RUN_OPTIONS, "run")
    check_levels(alpha, margin)
    profile = profile_of(quick, profile)
    tag_map = parse_tags(tags)
    console = Console(stderr=True, soft_wrap=True)  # progress lines stay whole in logs
    here_source(ctx, "ab", None, here, fleet, format_name, output, destroy_data, check_only=True)
    checked = kernels = None
    if plan_path is not None:
        plan = load_plan(plan_path, profile)
        if kernel_repo is not None or kernel_build is not None:
            check_fleet_store(ctx, fleet)  # before any build
            plan, kernels = _built_kernels(plan, kernel_repo, kernel_build, fleet, console, quiet)
        checked = ab.run.check(plan, destroy_data=destroy_data, here=fleet is None, boots_here=here)
    check_fleet_store(ctx, fleet)
    request: ab.run.NewAb | ab.run.ResumedAb
    if checked is not None:
        request = ab.run.NewAb(
            checked, alpha, margin, max_blocks, max_time_s, label, tag_map, kernels, one_sided
        )
    else:
        assert resume is not None
        request = ab.run.ResumedAb(
            resume, max_blocks, max_time_s, destroy_data, fleet is None, boots_here=here
        )
    boxed = here_source(ctx, "ab", plan_path, here, fleet, format_name, output, destroy_data)

    def opened(setup: ab.run.AbSetup) -> None:
        if checked is None and fleet is not None:  # a resumed run: its stored plan's hosts
            fleet_source(store, fleet, hosts, broker, setup.run.plan)
        if quiet:
            return
        plan = setup.run.plan
        first = setup.first_block
        replayed = f"blocks 1-{first - 1} replayed" if first > 1 else "no block had ended"
        opening = (
            f"ab run {setup.run.run_id}"
            if resume is None
            else f"ab run {resume} resumed at block {first} ({replayed})"
        )
        console.print(
            f"{opening}: {plan.name}{f' ({plan.profile})' if plan.profile else ''}, "
            f"{len(setup.items)} comparison(s) × {len(plan.kpis)} KPI(s), at most "
            f"{setup.settings.max_blocks} blocks"
            f"{f' or {max_time_s:g}s' if max_time_s else ''}, "
            f"seed {setup.run.seed}",
            highlight=False,
        )

    with open_store(store_location(ctx), must_exist=resume is not None) as store:
        plan_now = None if checked is None else checked.plan  # hosts said before the run exists
        source = boxed or fleet_source(store, fleet, hosts, broker, plan_now)
        with AbReporter(console, quiet) as reporter:
            setup, result = ab.run.execute(
                store, request, reporter, destroy_data=destroy_data, source=source, opened=opened
            )
        status = store.run(result.run_id).status  # "cancelled" when `iolab cancel` stopped it
    plan = setup.run.plan
    run_id = result.run_id
    if result.status == "running":  # this box boots the next sample's kernel
        say_handed_over("ab run", run_id, result.stopped)
        return
    if not quiet:
        console.print(f"ab run {run_id} {status}: {result.stopped}", highlight=False)
    if result.report is None:
        click.echo(f"iolab: ab run {run_id} {status} before a block ended", err=True)
        sys.exit(EXIT_INTERRUPTED)
    settings = setup.settings
    if result.interrupted:
        with to_output(output):
            _final(ctx, result, format_name, show_all, settings.alpha, settings.margin_pct)
        exit_stopped("ab run", run_id, status, "iolab ab")
    if html_path is not None:
        from iolab.publish.files import write_atomically

        write_atomically(html_path, _html(ctx, run_id, settings.alpha, settings.margin_pct))
    with to_output(output):
        _final(ctx, result, format_name, show_all, settings.alpha, settings.margin_pct)
    if format_name == "html" and output not in (None, "-"):
        html_path = output
    if format_name == "brief":
        states = [s for group in result.states.values() for s in group]
        blocks = max((s.n_blocks for s in states), default=0)
        needed = max((s.runs_needed or 0 for s in states if s.verdict == "inconclusive"), default=0)
        wanted = blocks + needed if needed else max(2 * blocks, blocks + 10)
        _next_steps(ctx, run_id, plan_path if plan.profile else None, html_path, wanted)
    elif html_path is not None:
        click.echo(f"HTML report: {html_path}", err=True)
    if ci and (code := ci_exit_code(result.report)):
        sys.exit(code)


def _built_kernels(
    plan: Any, repo: str | None, hook: str | None, fleet: str | None, console: Console, quiet: bool
) -> tuple[Any, Any]:
    """The plan's kernel commits built here (the bisect's builder, cache and checks)."""
    from pathlib import Path

    from iolab.builds import builder, kernel_commits

    if repo is None or not hook:
        raise IolabError("give --kernel-repo DIR and --kernel-build CMD together")
    if fleet is None:
        raise IolabError("kernels built from commits boot on a fleet: give --fleet CLASS")

    def say(sha: str, built: Any) -> None:
        if not quiet:
            how = "cached" if built.cached else "built"
            text = f"{sha[:12]} {how}: kernel {built.release}" if built.ok else ""
            console.print(text or f"{sha[:12]} does not build: {built.reason}", markup=False)

    argv = builder.command(hook, "--kernel-build")
    cache = builder.default_cache() / "kernels"
    return kernel_commits.build_plan(plan, Path(repo), argv, cache, say)


def _final(
    ctx: click.Context, result: Any, format_name: str, show_all: bool, alpha: float, margin: float
) -> None:
    """The final report on standard output, in `format_name`."""
    if format_name == "html":
        click.echo(_html(ctx, result.run_id, alpha, margin, show_all), nl=False)
    else:
        emit(result.report, format_name, show_all, False)


def _html(
    ctx: click.Context, run_id: int, alpha: float, margin: float, show_all: bool = False
) -> str:
    """`iolab report RUN` of the run just finished (its sequential verdicts)."""
    from iolab.analysis.build import Options
    from iolab.analysis.select import parse_selector
    from iolab.publish import gather
    from iolab.report import html
    from iolab.store import open_reader

    with open_reader(store_location(ctx)) as store:
        page = gather.by_html(
            store,
            parse_selector(f"run:{run_id}"),
            "variant",
            None,
            Options(alpha, margin),
            sequential=True,
        )
    return html.render(page, show_all=show_all)


def _program() -> str:
    """How to call iolab again: `iolab` when that is on PATH, else the path it was started by
    (`make demo` runs .venv/bin/iolab, which a fresh shell does not find as `iolab`)."""
    import os
    import shutil
    import sys

    argv0 = sys.argv[0] if sys.argv else ""
    if os.path.basename(argv0) != "iolab" or "/" not in argv0:
        return "iolab"
    found = shutil.which("iolab")
    try:
        if found is not None and os.path.samefile(found, argv0):
            return "iolab"
    except OSError:
        pass
    return shlex.quote(argv0)


def _next_steps(
    ctx: click.Context, run_id: int, plan_path: str | None, html_path: str | None, wanted: int
) -> None:
    """After the brief answer: where the report is and three commands to go further (on
    stderr, so that stdout stays the report)."""
    where = store_location(ctx)
    db = f"--db {shlex.quote(where.text)} " if where.named and where.text else ""
    iolab = _program()
    steps = [
        (f"{iolab} {db}compare {run_id} --all", "every metric measured, fixed-n analysis"),
        (
            f"{iolab} {db}ab --resume {run_id} --max-blocks {wanted}",
            "more blocks: a verdict, or a narrower interval",
        ),
    ]
    if plan_path is not None:
        steps.append((f"{iolab} {db}ab {shlex.quote(plan_path)}", "the plan's full profile"))
    else:
        steps.append((f"{iolab} {db}results --run {run_id}", "every sample with its provenance"))
    lines = [f"HTML report: {html_path}"] if html_path is not None else []
    lines.append("next:")
    width = max(len(cmd) for cmd, _ in steps)
    lines += [f"  {cmd:<{width}}  # {why}" for cmd, why in steps]
    click.echo("\n".join(lines), err=True)
