"""Options shared by several commands: one definition, one help text, one validation.

The command line's conventions (docs/cli.md) are built here, so that a command follows them
by using these builders: `format_option`, `output_option` with `to_output`, `DURATION`,
`COMMA_LIST` and the global `--db` after a subcommand (`add_db_option`).  A command line
that cannot mean anything raises IolabError: one line, exit 2, like any bad input.
"""

from __future__ import annotations

import contextlib
import io
import re
import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, NoReturn

import click
from click.core import ParameterSource

from iolab.errors import EXIT_INTERRUPTED, IolabError
from iolab.store.location import StoreLocation


@dataclass(frozen=True)
class CliContext:
    """What the `iolab` group hands its commands (click's `ctx.obj`)."""

    store: StoreLocation = field(default_factory=StoreLocation.given)


DB_HELP = (
    "Results store: a SQLite file path or a SQLAlchemy URL "
    "(default: $IOLAB_DB, else ~/.local/share/iolab/iolab.db)."
)


def _set_db(ctx: click.Context, _param: click.Parameter, value: str | None) -> None:
    if value is not None:
        ctx.obj = CliContext(store=StoreLocation.given(value))


def add_db_option(command: click.Command) -> click.Command:
    """Let `iolab CMD --db X` mean `iolab --db X CMD`: every command (and subcommand) that has
    no `--db` of its own gets the global one, which wins over one given before the command."""
    if not any("--db" in getattr(p, "opts", ()) for p in command.params):
        command.params.append(
            click.Option(
                ["--db"],
                default=None,
                metavar="PATH|URL",
                expose_value=False,
                is_eager=True,  # set before the others are read, like the group's --db
                callback=_set_db,
                help=DB_HELP,
            )
        )
    if isinstance(command, click.Group):
        for sub in command.commands.values():
            add_db_option(sub)
    return command


def store_location(ctx: click.Context) -> StoreLocation:
    """The store `--db` / $IOLAB_DB names (a command invoked on its own: $IOLAB_DB or the
    default)."""
    obj = ctx.find_object(CliContext)
    return obj.store if obj is not None else StoreLocation.given()


_TAG_KEY = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.:-]*\Z")

margin_option = click.option(
    "--margin",
    type=float,
    default=1.0,
    show_default=True,
    metavar="PCT",
    help="'No change' means within ± this many percent.",
)

table_alpha_option = click.option(
    "--alpha",
    type=float,
    default=0.05,
    show_default=True,
    help="The table's false-alarm rate: with holm, KPIs share 0.8*alpha and the other "
    "metrics 0.2*alpha (proportional KPIs such as iops and bw_bytes count once); with bh, "
    "each KPI at alpha.",
)

metric_option = click.option(
    "--metric",
    "metrics",
    multiple=True,
    metavar="GLOB",
    help="Only metrics matching GLOB (repeatable), e.g. 'write.*'.",
)

text_format_option = click.option(
    "--format",
    "format_name",
    type=click.Choice(["table", "json", "markdown"]),
    default="table",
    show_default=True,
    help="table for the terminal, markdown for a mail or an issue, json for scripts.",
)

ci_option = click.option(
    "--ci",
    is_flag=True,
    help="Exit 10 when a KPI regressed, 11 when none did but one is inconclusive.",
)


def parse_tags(specs: tuple[str, ...]) -> dict[str, str]:
    """`--tag key=value` options as a dict, checked alike by import, run and ab (a tag that
    import refuses must not reach the store another way); malformed or repeated keys fail."""
    tags: dict[str, str] = {}
    for spec in specs:
        key, sep, value = spec.partition("=")
        key = key.strip()
        if not sep or not _TAG_KEY.match(key) or not value:
            raise IolabError(
                f"bad --tag {spec!r}: expected KEY=VALUE (key of letters, digits, _ . : -)"
            )
        if key in tags:
            raise IolabError(f"--tag {key} given twice")
        tags[key] = value
    return tags


def check_levels(alpha: float, margin: float) -> None:
    """--alpha and --margin as `compare` and `ab` accept them."""
    if not 0 < alpha < 0.5:
        raise IolabError(f"--alpha {alpha:g}: must lie between 0 and 0.5")
    if not 0 < margin < 100:
        raise IolabError(f"--margin {margin:g}: must lie between 0 and 100 (percent)")


def check_plan_or_resume(plan_path: str | None, resume: int | None) -> None:
    """A run command takes a PLAN to start a run or --resume RUN to continue one: exactly one."""
    if resume is not None and plan_path is not None:
        raise IolabError("give either PLAN or --resume RUN, not both")
    if resume is None and plan_path is None:
        raise IolabError("missing PLAN (or --resume RUN)")


def refuse_with_resume(
    ctx: click.Context, resume: int | None, defining: Mapping[str, str], what: str
) -> None:
    """With --resume RUN, options that define a run (`defining`: parameter → flag) are the
    run's own: naming one on the command line is an error, not silently ignored."""
    if resume is None:
        return
    given = [
        flag
        for name, flag in defining.items()
        if ctx.get_parameter_source(name) is ParameterSource.COMMANDLINE
    ]
    if given:
        raise IolabError(f"{', '.join(given)}: {what} {resume} keeps its own")


def profile_of(quick: bool, profile: str | None) -> str | None:
    """`--quick` is `--profile quick`; naming two different profiles is an error."""
    if quick and profile and profile != "quick":
        raise IolabError("--quick and --profile name different profiles")
    return "quick" if quick else profile


# --------------------------------------------------------------------------- conventions


def duration_seconds(value: object, name: str = "--max-time", positive: bool = True) -> float:
    """`90`, `90s`, `10m`, `1.5h`, `250ms` → seconds, read as the plan reads a duration (a bare
    number is seconds); one line naming option `name` when it is not one."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        seconds: float | None = float(value)
    else:
        from iolab.plan.values import duration_value

        seconds = duration_value(str(value))
    if seconds is None or seconds < 0:
        raise IolabError(f"{name} {value!r}: expected a duration such as 90s, 10m or 1h")
    if positive and seconds <= 0:
        raise IolabError(f"{name} {value!r}: must be longer than 0s")
    return seconds


class Duration(click.ParamType[float, Any]):
    """A duration with its unit (`duration_seconds`).  `0s` is a duration; `positive` refuses
    it where nothing could take no time (a timeout, a time limit)."""

    name = "duration"

    def __init__(self, positive: bool = True) -> None:
        self.positive = positive

    def convert(
        self, value: Any, param: click.Parameter | None, ctx: click.Context | None
    ) -> float:
        name = param.opts[0] if param is not None and param.opts else "duration"
        return duration_seconds(value, name, self.positive)


DURATION = Duration()


class CommaList(click.ParamType[tuple[str, ...], Any]):
    """`R1,R2,R3` → ("R1", "R2", "R3"): one argument, so a list never swallows what follows."""

    name = "list"

    def convert(
        self, value: Any, param: click.Parameter | None, ctx: click.Context | None
    ) -> tuple[str, ...]:
        if isinstance(value, tuple):
            return value
        items = tuple(item.strip() for item in str(value).split(",") if item.strip())
        if not items:
            name = param.opts[0] if param is not None and param.opts else "list"
            raise IolabError(f"{name}: name at least one item (a comma-separated list)")
        return items


COMMA_LIST = CommaList()


def format_option(
    choices: Sequence[str], default: str, help: str
) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """`--format A|B|…` (parameter `format_name`): one option wherever output has forms."""
    return click.option(
        "--format",
        "format_name",
        type=click.Choice(list(choices)),
        default=default,
        show_default=True,
        help=help,
    )


def json_alias_option(f: Callable[..., Any]) -> Callable[..., Any]:
    """The old `--json` (parameter `as_json`), kept hidden: it is `--format json`."""
    return click.option("--json", "as_json", is_flag=True, hidden=True)(f)


def output_option_saying(help: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """`-o/--output FILE` (parameter `output`) with the command's own help text."""
    return click.option("-o", "--output", "output", default=None, metavar="FILE", help=help)


output_option = output_option_saying(
    "Write the output to FILE instead of standard output ('-': standard output)."
)


@contextlib.contextmanager
def to_output(path: str | None) -> Iterator[None]:
    """Standard output inside the block goes to `path` (None or '-': stays on standard
    output).  The file is written whole when the block ends — also when it ends with a
    `--ci` exit status, which is an answer — and not at all after an error."""
    if path is None or path == "-":
        yield
        return
    # tempfile and pathlib (urllib, ipaddress, shutil): only a command writing a file needs them
    from iolab.publish.files import write_atomically

    buffer = io.StringIO()
    try:
        with contextlib.redirect_stdout(buffer):
            yield
    except SystemExit:
        write_atomically(path, buffer.getvalue())
        raise
    write_atomically(path, buffer.getvalue())


def stopped_line(what: str, run_id: int, status: str, command: str) -> str:
    """The one line a run stopped by an interrupt ends with: how to go on, or that it was
    cancelled (a cancelled run is not resumed)."""
    if status == "cancelled":
        return f"iolab: {what} {run_id} cancelled (iolab cancel), machine restored"
    return (
        f"iolab: {what} {run_id} interrupted, machine restored; "
        f"`{command} --resume {run_id}` continues it"
    )


def exit_stopped(what: str, run_id: int, status: str, command: str) -> NoReturn:
    """Say how a run stopped by an interrupt or `iolab cancel` goes on, and exit 5."""
    click.echo(stopped_line(what, run_id, status, command), err=True)
    sys.exit(EXIT_INTERRUPTED)


def fleet_options(f: Callable[..., Any]) -> Callable[..., Any]:
    """`--fleet CLASS [--hosts N] [--broker URL]`: the blocks run on a fleet's hosts."""
    f = click.option(
        "--broker",
        default=None,
        metavar="URL",
        help="The fleet's Redis (default $IOLAB_BROKER).",
    )(f)
    f = click.option(
        "--hosts",
        type=click.IntRange(1, 1000),
        default=1,
        show_default=True,
        metavar="N",
        help="With --fleet: blocks running at once (on N hosts).",
    )(f)
    return click.option(
        "--fleet",
        "fleet",
        default=None,
        metavar="CLASS",
        help="Run the blocks on the fleet's hosts of CLASS (needs a PostgreSQL store).",
    )(f)


def check_fleet_store(ctx: click.Context, fleet: str | None) -> None:
    """A fleet keeps its state in PostgreSQL: refuse any other store before it is opened
    (nor created)."""
    if fleet is None:
        return
    location = store_location(ctx)
    if not (location.is_url and location.text and location.text.startswith("postgresql")):
        raise IolabError(
            "a fleet keeps its state in PostgreSQL; give --db postgresql+psycopg://... "
            "(or set IOLAB_DB)"
        )


def here_source(
    ctx: click.Context,
    command: str,
    plan_path: str | None,
    here: bool,
    fleet: str | None,
    format_name: str,
    output: str | None,
    destroy_data: bool,
    *,
    check_only: bool = False,
) -> Any:
    """The block source of `iolab ab|bisect --here` (fleet.onebox; None without `--here`):
    its resume unit runs `iolab --db STORE COMMAND --resume RUN --here` with the same report
    format and output file, so the run goes on after each boot as if it had never stopped.
    `check_only`: the command line's own refusal, before anything else is checked."""
    import os

    if not here:
        return None
    if fleet is not None:
        raise IolabError("--here boots kernels on this box, --fleet on a fleet's hosts: not both")
    if check_only:
        return None
    from iolab.fleet import onebox

    where = store_location(ctx)
    db = str(where.file.resolve()) if where.file is not None else str(where.text)

    def resume_args(run_id: int) -> list[str]:
        args = [command, "--resume", str(run_id), "--here", "--format", format_name]
        if destroy_data:
            args.append("--destroy-data")
        if output not in (None, "-"):
            args += ["-o", os.path.abspath(str(output))]
        return args

    return onebox.blocks_for(db, plan_path, resume_args, destroy_data=destroy_data)


def say_handed_over(what: str, run_id: int, why: str) -> None:
    """The line a `--here` run ends this process with: the box boots the next kernel, and
    the resume unit goes on with run `run_id` after the boot."""
    from iolab.runs import resume_unit

    click.echo(resume_unit.continues(run_id, f"{what} {run_id}: {why}"), err=True)


def fleet_source(
    store: Any, fleet: str | None, hosts: int, broker: str | None, plan: Any
) -> Callable[[Any], Any] | None:
    """The block source a `--fleet` run uses (None: here), after checking the store and
    saying which hosts of the class can run `plan` — before the run is created or resumed,
    so a plan no host can run leaves no run behind (RefusedError, exit 3).  `plan` None: a
    resumed run, whose stored plan the caller checks once it is reopened."""
    if fleet is None:
        return None
    from iolab.fleet import dispatch, service

    service.require_server_store(store)
    settings = dispatch.settings(fleet, hosts, service.broker_url(broker))
    if plan is not None:
        dispatch.able_hosts(store, plan, fleet)

    def make(run: Any) -> Any:
        return dispatch.FleetBlocks(run, settings)

    return make
