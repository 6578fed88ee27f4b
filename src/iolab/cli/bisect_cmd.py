"""`iolab bisect PLAN --repo PATH --good REV --bad REV`: which commit changed the KPI, with
statistics that end in a range or "not known" rather than a guess (docs/bisect.md)."""

from __future__ import annotations

import shlex
import sys
from pathlib import Path

import click
from rich.console import Console

from iolab.cli.options import (
    check_fleet_store,
    check_levels,
    check_plan_or_resume,
    fleet_options,
    fleet_source,
    margin_option,
    parse_duration,
    refuse_with_resume,
    store_location,
    text_format_option,
)
from iolab.errors import (
    EXIT_BISECT_NO_REGRESSION,
    EXIT_BISECT_NOT_KNOWN,
    EXIT_BISECT_RANGE,
    EXIT_INTERRUPTED,
    IolabError,
)
from iolab.model.bisect import Measure
from iolab.plan import load_plan
from iolab.report import bisect_json, bisect_text
from iolab.report.bisect_model import BisectReport
from iolab.store import open_store

EXIT_BY_RESULT = {
    "found": 0,
    "range": EXIT_BISECT_RANGE,
    "no regression": EXIT_BISECT_NO_REGRESSION,
    "not known": EXIT_BISECT_NOT_KNOWN,
}


# options that define a bisect: a resumed one keeps its own
_RUN_OPTIONS = {
    "repo": "--repo",
    "good": "--good",
    "bad": "--bad",
    "build": "--build",
    "kpi": "--kpi",
    "alpha": "--alpha",
    "margin": "--margin",
    "max_blocks": "--max-blocks",
    "search": "--search",
    "cache": "--cache",
}


_KERNELS_OPTIONS = {
    "kpi": "--kpi",
    "alpha": "--alpha",
    "margin": "--margin",
    "max_blocks": "--max-blocks",
    "search": "--search",
}
_KERNEL_GIT_OPTIONS = {
    "kernel_repo": "--kernel-repo",
    "kernel_build": "--kernel-build",
    "good": "--good",
    "bad": "--bad",
    "kpi": "--kpi",
    "alpha": "--alpha",
    "margin": "--margin",
    "max_blocks": "--max-blocks",
    "search": "--search",
    "cache": "--cache",
}


def _stored_kind(ctx: click.Context, run_id: int) -> str:
    """Which bisect run `run_id` is: "commits", "kernels" (releases) or "kernel-git"."""
    from click.core import ParameterSource

    from iolab.bisect import driver

    if any(ctx.get_parameter_source(n) is ParameterSource.COMMANDLINE for n in _RUN_OPTIONS):
        return "commits"  # a commit bisect's options: its own path refuses them with --resume
    try:
        with open_store(store_location(ctx), must_exist=True) as store:
            settings = store.run(run_id).meta.get(driver.META)
    except IolabError:
        return "commits"  # no such store or run: said by the commit path, as before
    if isinstance(settings, dict) and "kernel_build" in settings:
        return "kernel-git"
    if isinstance(settings, dict) and "kernels" in settings:
        return "kernels"
    return "commits"


@click.command("bisect")
@click.argument("plan_path", metavar="[PLAN]", required=False)
@click.argument("more_kernels", nargs=-1, metavar="")
@click.option(
    "--kernels",
    "first_kernel",
    default=None,
    metavar="R1 R2 … Rn",
    help="Bisect over these kernel releases, good first, bad last (on a --fleet: docs/kernels.md).",
)
@click.option(
    "--kernels-from",
    type=click.Path(dir_okay=False),
    default=None,
    metavar="FILE",
    help="The releases, one a line, good first.",
)
@fleet_options
@click.option("--repo", type=click.Path(file_okay=False), help="The git repository.")
@click.option(
    "--kernel-repo",
    type=click.Path(file_okay=False),
    default=None,
    help="Bisect kernel commits of this git repository on a --fleet (with --kernel-build; "
    "docs/kernels.md).",
)
@click.option(
    "--kernel-build",
    default=None,
    metavar="CMD",
    help="The kernel build hook, run per commit on this machine in a work tree of "
    "--kernel-repo (split like a shell, not run by one); it writes artifacts and a manifest "
    "to $IOLAB_KERNEL_OUT.",
)
@click.option("--good", default=None, metavar="REV", help="A commit without the regression.")
@click.option("--bad", default=None, metavar="REV", help="A later commit with it.")
@click.option(
    "--build",
    default=None,
    metavar="CMD",
    help="Build command run in each commit's work tree (split like a shell, not run by one; "
    "a failure makes the commit unbuildable).",
)
@click.option("--kpi", default=None, metavar="METRIC", help="The metric (default: the plan's).")
@click.option("--alpha", type=float, default=0.05, show_default=True, help="Error rate.")
@margin_option
@click.option(
    "--max-blocks",
    "--max-runs",
    "max_blocks",
    type=click.IntRange(min=6),
    default=300,
    show_default=True,
    metavar="N",
    help="At most N blocks per test (the ends, each step, the verification).  "
    "--max-runs is an older name.",
)
@click.option("--max-time", default=None, metavar="DURATION", help="Stop after this long.")
@click.option(
    "--search",
    type=click.Choice(["binary", "probabilistic"]),
    default="probabilistic",
    show_default=True,
    help="probabilistic bisection (tolerates a wrongly graded step) or plain binary search "
    "(docs/bisect.md compares them).",
)
@click.option(
    "--cache",
    type=click.Path(file_okay=False),
    default=None,
    help="Where work trees, builds and logs go (default ~/.cache/iolab/bisect).",
)
@text_format_option
@click.option(
    "--resume",
    type=click.IntRange(min=1),
    default=None,
    metavar="ID",
    help="Continue bisect run ID (after Ctrl-C, kill -9 + iolab cleanup, a time limit).",
)
@click.option(
    "--destroy-data", is_flag=True, help="Allow formatting a designated device that carries data."
)
@click.option("-q", "--quiet", is_flag=True, help="No progress lines.")
@click.pass_context
def command(
    ctx: click.Context,
    plan_path: str | None,
    more_kernels: tuple[str, ...],
    first_kernel: str | None,
    kernels_from: str | None,
    fleet: str | None,
    hosts: int,
    broker: str | None,
    repo: str | None,
    kernel_repo: str | None,
    kernel_build: str | None,
    good: str | None,
    bad: str | None,
    build: str | None,
    kpi: str | None,
    alpha: float,
    margin: float,
    max_blocks: int,
    max_time: str | None,
    search: str,
    cache: str | None,
    format_name: str,
    resume: int | None,
    destroy_data: bool,
    quiet: bool,
) -> None:
    """Find the commit between --good and --bad that changed PLAN's KPI: the ends first,
    then each candidate against both ends in randomized blocks, then the culprit against its
    parent.  Exit 0 found, 20 range, 21 no regression between the ends, 22 not known."""
    # the bisect service loads numpy and SQLAlchemy: imported here, not for --help
    from iolab.bisect import driver
    from iolab.bisect import kernels as kernel_bisect
    from iolab.bisect.summary import conclude
    from iolab.cli.bisect_progress import ConsoleProgress

    if first_kernel is not None or kernels_from is not None:
        kernels = [*([first_kernel] if first_kernel else []), *more_kernels]
        if kernels_from is not None:
            if kernels:
                raise IolabError("give --kernels or --kernels-from, not both")
            kernels = kernel_bisect.read_list(Path(kernels_from))
        _kernels(ctx, plan_path, kernels, fleet, hosts, broker, kpi, alpha, margin, max_blocks,
                 search, format_name, resume, quiet)  # fmt: skip
        return
    if more_kernels:
        raise IolabError(f"unexpected argument {more_kernels[0]!r} (one PLAN)")
    if resume is not None and plan_path is None and kernel_repo is None and kernel_build is None:
        kind = _stored_kind(ctx, resume)
        if kind == "kernels":
            _kernels(ctx, None, [], fleet, hosts, broker, kpi, alpha, margin, max_blocks,
                     search, format_name, resume, quiet)  # fmt: skip
            return
        if kind == "kernel-git":
            kernel_repo = kernel_build = ""  # the run's own
    if kernel_repo is not None or kernel_build is not None:
        if repo is not None or build is not None:
            raise IolabError("--kernel-repo/--kernel-build bisect kernels; --repo/--build commits")
        _kernel_git(ctx, plan_path, kernel_repo, kernel_build, good, bad, fleet, hosts,
                    broker, kpi, alpha, margin, max_blocks, search, cache, format_name, resume,
                    quiet)  # fmt: skip
        return
    if fleet is not None:
        raise IolabError("a commit bisect runs here; --fleet is for --kernels")
    check_plan_or_resume(plan_path, resume)
    refuse_with_resume(ctx, resume, _RUN_OPTIONS, "bisect run")
    if resume is None and (repo is None or good is None or bad is None):
        raise IolabError("bisect needs --repo, --good and --bad")
    check_levels(alpha, margin)
    max_time_s = parse_duration(max_time) if max_time is not None else None
    try:
        build_argv = tuple(shlex.split(build)) if build else ()
    except ValueError as e:
        raise IolabError(f"--build: {e}") from None
    checked = None
    if plan_path is not None:
        assert repo is not None and good is not None and bad is not None
        request = driver.Request(
            plan=load_plan(plan_path),
            repo=Path(repo),
            good=good,
            bad=bad,
            build=build_argv,
            kpi=kpi,
            alpha=alpha,
            margin_pct=margin,
            max_blocks=max_blocks,
            cache=Path(cache) if cache else None,
            search=search,
        )
        checked = driver.check(request, destroy_data=destroy_data)
    console = Console(stderr=True, soft_wrap=True)
    store = open_store(store_location(ctx), must_exist=resume is not None)
    try:
        if checked is not None:
            setup = driver.start(store, checked)
        else:
            assert resume is not None
            setup = driver.resume(store, resume, destroy_data=destroy_data)
        if not quiet:
            console.print(
                f"bisect run {setup.run_id}: {len(setup.shas) - 1} candidate commits, "
                f"KPI {setup.kpi}, seed {setup.seed}"
                + (f" (blocks 1-{setup.replayed} replayed)" if setup.replayed else ""),
                highlight=False,
                markup=False,
            )
        progress = ConsoleProgress(console, quiet)
        try:
            outcome, status = driver.run(
                setup, max_time_s=max_time_s, destroy_data=destroy_data, progress=progress
            )
        except KeyboardInterrupt:
            click.echo(
                f"iolab: bisect run {setup.run_id} interrupted, machine restored; "
                f"`iolab bisect --resume {setup.run_id}` continues it",
                err=True,
            )
            sys.exit(EXIT_INTERRUPTED)
        report = conclude(setup, outcome, status)
    finally:
        store.close()
    _render_and_exit(report, format_name, outcome.kind)


def _kernels(
    ctx: click.Context,
    plan_path: str | None,
    kernels: list[str],
    fleet: str | None,
    hosts: int,
    broker: str | None,
    kpi: str | None,
    alpha: float,
    margin: float,
    max_blocks: int,
    search: str,
    format_name: str,
    resume: int | None,
    quiet: bool,
) -> None:
    """`bisect PLAN --kernels R1 … Rn --fleet CLASS`: the engine over kernel releases; or
    `bisect --resume ID` of such a run."""
    from iolab.bisect import kernels as kernel_bisect

    plan = None
    if resume is not None:
        if plan_path is not None or kernels:
            raise IolabError("--resume: bisect run keeps its own PLAN and --kernels")
        refuse_with_resume(ctx, resume, _KERNELS_OPTIONS, "bisect run")
    else:
        if plan_path is None:
            raise IolabError("bisect --kernels needs a PLAN")
        if fleet is None:
            raise IolabError(
                "a kernel bisect boots kernels: give --fleet CLASS (hosts running `iolab "
                "worker`, docs/kernels.md)"
            )
        check_levels(alpha, margin)
        kernel_bisect.check_kernels(kernels)
        plan = load_plan(plan_path)
        kernel_bisect.kernel_plan(plan, kernels)
    check_fleet_store(ctx, fleet or "stored")
    console = Console(stderr=True, soft_wrap=True)
    store = open_store(store_location(ctx), must_exist=resume is not None)
    try:
        if resume is not None:
            setup = kernel_bisect.resume(store, resume)
            fleet = fleet or setup.fleet or None
        else:
            assert plan is not None and fleet is not None
            setup = kernel_bisect.start(
                store, plan, kernels, kpi=kpi, alpha=alpha, margin_pct=margin,
                max_blocks=max_blocks, search=search, fleet=fleet,
            )  # fmt: skip
        if fleet is None:
            raise IolabError(f"bisect run {setup.run_id}: give --fleet CLASS")
        source = fleet_source(store, fleet, hosts, broker)
        assert source is not None
        if not quiet:
            console.print(
                f"bisect run {setup.run_id}: {len(setup.releases) - 1} candidate kernels, "
                f"KPI {setup.kpi}, seed {setup.run.seed}, on fleet {fleet}"
                + (f" (blocks 1-{setup.replayed} replayed)" if setup.replayed else ""),
                highlight=False,
                markup=False,
            )

        def progress(block: int, measure: Measure, s: kernel_bisect.KernelSetup) -> None:
            if not quiet:
                names = " ".join(s.release(i) for i in measure.arms)
                console.print(f"block {block} · {measure.phase} · {names}", markup=False)

        try:
            outcome, status = kernel_bisect.run(setup, source, progress)
        except KeyboardInterrupt:
            click.echo(
                f"iolab: bisect run {setup.run_id} interrupted; `iolab bisect --resume "
                f"{setup.run_id}` continues it",
                err=True,
            )
            sys.exit(EXIT_INTERRUPTED)
        report = kernel_bisect.conclude(store, setup, outcome, status)
    finally:
        store.close()
    _render_and_exit(report, format_name, outcome.kind)


def _kernel_git(
    ctx: click.Context,
    plan_path: str | None,
    kernel_repo: str | None,
    kernel_build: str | None,
    good: str | None,
    bad: str | None,
    fleet: str | None,
    hosts: int,
    broker: str | None,
    kpi: str | None,
    alpha: float,
    margin: float,
    max_blocks: int,
    search: str,
    cache: str | None,
    format_name: str,
    resume: int | None,
    quiet: bool,
) -> None:
    """`bisect PLAN --kernel-repo DIR --good REV --bad REV --kernel-build CMD --fleet CLASS`,
    or `bisect --resume ID` of such a run."""
    from iolab.bisect import driver, kernel_git
    from iolab.bisect.kernel_build import Built, KernelBuilder

    plan = root = shas = builder = None
    if resume is not None:
        if plan_path is not None:
            raise IolabError("give either PLAN or --resume RUN, not both")
        refuse_with_resume(ctx, resume, _KERNEL_GIT_OPTIONS, "bisect run")
    else:
        if plan_path is None:
            raise IolabError("a kernel bisect needs a PLAN")
        if not kernel_repo or not kernel_build or good is None or bad is None:
            raise IolabError(
                "a kernel git bisect needs --kernel-repo, --kernel-build, --good and --bad"
            )
        if fleet is None:
            raise IolabError(
                "a kernel bisect boots kernels: give --fleet CLASS (hosts running `iolab "
                "worker`, docs/kernels.md)"
            )
        check_levels(alpha, margin)
        try:
            argv = tuple(shlex.split(kernel_build))
        except ValueError as e:
            raise IolabError(f"--kernel-build: {e}") from None
        if not argv:
            raise IolabError("--kernel-build: empty command")
        plan = load_plan(plan_path)
        kernel_git.kernel_plan(plan, {})
        root, shas = kernel_git.commits(Path(kernel_repo), good, bad)
        base = Path(cache) if cache else driver.default_cache()
        builder = KernelBuilder(root, base.resolve() / "kernels", argv)
    check_fleet_store(ctx, fleet or "stored")
    console = Console(stderr=True, soft_wrap=True)

    def say(text: str) -> None:
        if not quiet:
            console.print(text, highlight=False, markup=False)

    def on_build(sha: str, built: Built) -> None:
        if built.ok and built.manifest is not None:
            how = "cached" if built.cached else "built"
            say(f"{sha[:12]} {how}: kernel {built.manifest.release}")
        else:
            say(f"{sha[:12]} is unbuildable: {built.reason}")

    store = open_store(store_location(ctx), must_exist=resume is not None)
    try:
        kernel_git.require_fleet_store(store)
        if resume is not None:
            setup = kernel_git.resume(store, resume)
            fleet = fleet or setup.fleet
        else:
            assert plan is not None and root is not None and shas is not None
            assert builder is not None and fleet is not None
            setup = kernel_git.start(
                store, plan, root, shas, builder, kpi=kpi, alpha=alpha, margin_pct=margin,
                max_blocks=max_blocks, search=search, fleet=fleet, on_build=on_build,
            )  # fmt: skip
        source = fleet_source(store, fleet, hosts, broker)
        assert source is not None
        say(
            f"bisect run {setup.run_id}: {len(setup.shas) - 1} candidate kernel commits, "
            f"KPI {setup.kpi}, seed {setup.run.seed}, on fleet {fleet}"
            + (f" (blocks 1-{setup.replayed} replayed)" if setup.replayed else "")
        )

        def progress(block: int, measure: Measure, s: kernel_git.GitKernelSetup) -> None:
            say(
                f"block {block} · {measure.phase} · "
                + " ".join(s.sha(i)[:12] for i in measure.arms)
            )

        try:
            outcome, status = kernel_git.run(setup, source, progress, on_build)
        except KeyboardInterrupt:
            click.echo(
                f"iolab: bisect run {setup.run_id} interrupted; `iolab bisect --resume "
                f"{setup.run_id}` continues it",
                err=True,
            )
            sys.exit(EXIT_INTERRUPTED)
        report = kernel_git.conclude(store, setup, outcome, status)
        kernel_git.drop_artifacts(setup)
    finally:
        store.close()
    _render_and_exit(report, format_name, outcome.kind)


def _render_and_exit(report: BisectReport, format_name: str, kind: str) -> None:
    """Print the report in its format; exit with the code of the result (0: found)."""
    renderers = {
        "table": bisect_text.render_table,
        "markdown": bisect_text.render_markdown,
        "json": bisect_json.render,
    }
    click.echo(renderers[format_name](report), nl=False)
    code = EXIT_BY_RESULT[kind]
    if code:
        sys.exit(code)
