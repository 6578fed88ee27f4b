"""`iolab bisect`: parse, open the session (new, or `--resume` by its stored mode), run, format.
The bisect itself is `iolab.bisect.session` (docs/bisect.md, docs/kernels.md)."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

from iolab.cli import options as o
from iolab.errors import IolabError

EXIT_BY_RESULT = {"found": 0, "range": 20, "no regression": 21, "not known": 22}
_DIR, _FILE, _IN = click.Path(file_okay=False), click.Path(dir_okay=False), click.IntRange
_OPTIONS: list[tuple[tuple[str, ...], dict[str, Any]]] = [
    (("--kernels",), {"type": o.COMMA_LIST, "metavar": "R1,R2,…",
     "help": "Bisect kernel releases (good first)."}),
    (("--kernels-from",), {"type": _FILE, "metavar": "FILE", "help": "The releases, one a line."}),
    (("--repo",), {"type": _DIR, "help": "The git repository of the commits."}),
    (("--kernel-repo",), {"type": _DIR, "help": "Bisect kernel commits of this repository."}),
    (("--kernel-build",), {"metavar": "CMD", "help": "The kernel build hook (docs/kernels.md)."}),
    (("--good",), {"metavar": "REV", "help": "A commit without the regression."}),
    (("--bad",), {"metavar": "REV", "help": "A later commit with it."}),
    (("--build",), {"metavar": "CMD", "help": "Build command run in each commit's work tree."}),
    (("--kpi",), {"metavar": "METRIC", "help": "The metric (default: the plan's)."}),
    (("--alpha",), {"type": float, "default": 0.05, "show_default": True, "help": "Error rate."}),
    (("--max-blocks", "--max-runs", "max_blocks"), {"type": _IN(min=6), "default": 300,
     "show_default": True, "metavar": "N", "help": "At most N blocks per test (ends, step)."}),
    (("--search",), {"type": click.Choice(["binary", "probabilistic"]), "show_default": True,
     "default": "probabilistic", "help": "Which search (docs/bisect.md compares them)."}),
    (("--grade",), {"type": click.Choice(["classify", "randomized"]), "show_default": True,
     "default": "classify", "help": "How a step grades its commit: beside one end a block, "
     "between the ends as measured; or beside both, by a randomization test (docs/bisect.md)."}),
    (("--cache",), {"type": _DIR, "help": "Work trees, builds, logs (~/.cache/iolab/bisect)."}),
    (("--max-time", "max_time_s"), {"type": o.DURATION, "metavar": "DURATION",
     "help": "Stop after this long (90s, 10m, 1h)."}),
    (("--regression",), {"type": _IN(min=1), "metavar": "ID",
     "help": "Record the result on this registry entry (default: entries with these ends)."}),
    (("--resume",), {"type": _IN(min=1), "metavar": "ID", "help": "Continue bisect run ID."}),
    (("--destroy-data",), {"is_flag": True, "help": "Allow formatting a device with data."}),
    (("--here",), {"is_flag": True, "help": "Boot the --kernels on this box itself; a systemd "
     "unit continues the bisect after each boot (docs/kernels.md)."}),
    (("-q", "--quiet"), {"is_flag": True, "help": "No progress lines."}),
]  # fmt: skip
# options that define a bisect (the first 14, --margin, --regression): a resumed one keeps its own
_NAMES = [*(names[0] for names, _ in _OPTIONS[:14]), "--margin", "--regression"]
_DEFINING = {n[2:].replace("-", "_"): n for n in _NAMES}


def _options(f: Callable[..., Any]) -> Callable[..., Any]:
    for names, kw in reversed(_OPTIONS):
        f = click.option(*names, **kw)(f)
    f = o.format_option(["text", "table", "markdown", "json"], "text", "Report (table: text).")(f)
    return o.fleet_options(o.margin_option(o.output_option(f)))


@click.command("bisect")
@click.argument("args", nargs=-1, metavar="[PLAN]")
@_options
@click.pass_context
def command(ctx: click.Context, /, args: tuple[str, ...], **opt: Any) -> None:
    """Find the commit between --good and --bad that changed PLAN's KPI: the ends first,
    then each candidate graded between the ends in randomized blocks, then the culprit
    against its parent.  Exit 0 found, 20 range, 21 no regression between the ends, 22 not
    known.
    The result is recorded on the registry entry with these ends (or --regression ID).

    \b
    Examples:
      iolab bisect plan.yaml --repo ~/src/app --good v1.4 --bad v1.5 --build "make -j2"
      iolab bisect plan.yaml --kernels 6.1.0-47-cloud-amd64,6.1.0-50-cloud-amd64 --fleet lab
      iolab bisect plan.yaml --kernels 6.1.0-47-cloud-amd64,6.1.0-50-cloud-amd64 --here
    """
    # the bisect service loads numpy and SQLAlchemy: imported here, not for --help
    from iolab.bisect import session as bisect
    from iolab.bisect.release_arms import plan_and_releases
    from iolab.bisect.summary import conclude
    from iolab.cli.bisect_progress import ConsoleProgress
    from iolab.report import bisect_json, bisect_text
    from iolab.runs.lifecycle import HandedOver
    from iolab.store import open_store

    plan_path, releases = plan_and_releases(args, opt["kernels"], opt["kernels_from"])
    resume, destroy = opt["resume"], opt["destroy_data"]
    o.check_plan_or_resume(plan_path, resume)
    o.refuse_with_resume(ctx, resume, _DEFINING, "bisect run")
    checked = None
    if plan_path is not None:
        checked = bisect.check(_request(plan_path, releases, opt), destroy_data=destroy)
        o.check_fleet_store(ctx, opt["fleet"])
    here = o.here_source(ctx, "bisect", plan_path, opt["here"], opt["fleet"],
                         opt["format_name"], opt["output"], destroy)  # fmt: skip
    progress = ConsoleProgress(opt["quiet"])
    with open_store(o.store_location(ctx), must_exist=resume is not None) as store:
        fleet, plan = opt["fleet"], None if checked is None else checked.plan.plan
        source = here or o.fleet_source(store, fleet, opt["hosts"], opt["broker"], plan)
        session = bisect.open_session(store, checked or resume, destroy_data=destroy,
                                      boots_here=opt["here"])  # fmt: skip
        if checked is None and here is None:  # resumed: the stored plan's hosts
            fleet = fleet or session.settings.fleet
            source = o.fleet_source(store, fleet, opt["hosts"], opt["broker"], session.run.plan)
        progress.opened(session)
        try:
            outcome, status = bisect.run(
                session, fleet=source, max_time_s=opt["max_time_s"], destroy_data=destroy,
                progress=progress,
            )  # fmt: skip
        except HandedOver as exc:  # this box boots the next sample's kernel
            o.say_handed_over("bisect run", session.run_id, str(exc))
            return
        except KeyboardInterrupt:
            n = session.run_id
            o.exit_stopped("bisect run", n, store.run(n).status, "iolab bisect")
        report = conclude(session, outcome, status)
    render = {"json": bisect_json.render, "markdown": bisect_text.render_markdown}
    text = render.get(opt["format_name"], bisect_text.render_table)(report)
    with o.to_output(opt["output"]):
        click.echo(text, nl=False)
    sys.exit(EXIT_BY_RESULT[outcome.kind] or None)  # 0: found


def _request(plan_path: str, releases: list[str], opt: dict[str, Any]) -> Any:
    from iolab.bisect.session import Request
    from iolab.builds.builder import command as build_argv
    from iolab.plan import load_plan

    kernel = opt["kernel_repo"] is not None or opt["kernel_build"] is not None
    if kernel and (opt["repo"] is not None or opt["build"] is not None):
        raise IolabError("--kernel-repo/--kernel-build bisect kernels; --repo/--build commits")
    listed = opt["kernels"] is not None or opt["kernels_from"] is not None
    o.check_levels(opt["alpha"], opt["margin"])
    repo, build = (opt["kernel_repo"], "kernel_build") if kernel else (opt["repo"], "build")
    same = ("good", "bad", "kpi", "alpha", "max_blocks", "search", "grade", "fleet",
            "regression", "here")  # fmt: skip
    return Request(
        plan=load_plan(plan_path),
        mode="releases" if listed else "kernel-commits" if kernel else "commits",
        repo=None if repo is None else Path(repo),
        build=build_argv(opt[build], "--" + build.replace("_", "-")),
        releases=tuple(releases),
        margin_pct=opt["margin"],
        cache=None if opt["cache"] is None else Path(opt["cache"]),
        **{k: opt[k] for k in same},
    )
