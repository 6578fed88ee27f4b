"""`iolab regressions [mark ID STATUS]`: the regression registry (docs/history.md)."""

from __future__ import annotations

import click

from iolab.cli.options import output_option, store_location, to_output
from iolab.model.regression import STATUSES
from iolab.report.history import regzbot_lines, render_regressions
from iolab.store import open_store
from iolab.textsafe import shown


@click.group("regressions", invoke_without_command=True)
@click.option(
    "--status",
    "status",
    multiple=True,
    type=click.Choice(list(STATUSES)),
    help="Only entries with this status (repeatable).",
)
@click.option(
    "--format",
    "format_name",
    type=click.Choice(["table", "json", "markdown", "regzbot"]),
    default="table",
    show_default=True,
    help="table for the terminal, markdown for a mail or an issue, regzbot for regzbot's "
    "lines (#regzbot introduced/title/link), json for scripts.",
)
@output_option
@click.pass_context
def command(
    ctx: click.Context, status: tuple[str, ...], format_name: str, output: str | None
) -> None:
    """The regression registry: every entry with its status, size and log.

    \b
    Examples:
      iolab regressions --status open
      iolab regressions --format regzbot -o regzbot.txt
    """
    if ctx.invoked_subcommand is not None:
        return
    from iolab.history.service import regressions  # numpy and SQLAlchemy: not for --help

    with open_store(store_location(ctx), must_exist=True) as store:
        found = regressions(store, status)
    with to_output(output):
        click.echo(render_regressions(found, format_name), nl=False)


@command.command("mark")
@click.argument("regression_id", metavar="ID", type=int)
@click.argument("status", type=click.Choice(list(STATUSES)))
@click.option("--note", default=None, metavar="TEXT", help="Why (kept in the log).")
@click.option(
    "--evidence",
    default=None,
    metavar="RUN",
    help="A run or selector showing the metric back at its old level (required for 'fixed').",
)
@click.pass_context
def mark_command(
    ctx: click.Context, regression_id: int, status: str, note: str | None, evidence: str | None
) -> None:
    """Set an entry's status; the change is appended to its log.

    \b
    Examples:
      iolab regressions mark 3 confirmed --note "reproduced on two hosts"
      iolab regressions mark 3 fixed --evidence run:41
    """
    from iolab.history.service import mark

    with open_store(store_location(ctx), must_exist=True) as store:
        entry = mark(store, regression_id, status, note, evidence)
    click.echo(f"regression {entry.id}: {entry.status}")


@command.command("import")
@click.argument("mail", metavar="MAIL")
@click.pass_context
def import_command(ctx: click.Context, mail: str) -> None:
    """Open an entry per headline of a 0-day/LKP robot mail (`-` is standard input).

    Entries are keyed by (commit, metric, parameters): importing the same mail again, or a
    reply quoting it, opens none; a new link to the same report is added to the entry.

    \b
    Examples:
      iolab regressions import lkp-report.mbox
      iolab regressions import - < pasted-mail.txt
    """
    from iolab.history.report_import import import_report
    from iolab.history.service import regressions

    with open_store(store_location(ctx)) as store:
        outcome = import_report(store, mail)
        found = regressions(store)
    by_id = {r.id: r for r in found}
    for item in outcome.entries:
        h = item.headline
        what = "opened" if item.created else ("updated" if item.updated else "already known")
        click.echo(
            f"regression {item.regression_id} {what}: {shown(h.metric)} {h.change_pct:+.1f}% "
            f"({shown(h.testcase or '-')})"
        )
        click.echo(regzbot_lines(by_id[item.regression_id]), nl=False)
    for h in outcome.skipped:
        click.echo(
            f"skipped: {shown(h.metric)} {h.change_pct:+.1f}% is an {h.direction}"
            if h.direction == "improvement"
            else f"skipped: {shown(h.metric)} {h.change_pct:+.1f}% (no direction stated)"
        )


@command.command("answer")
@click.argument("regression_id", metavar="ID", type=int)
@click.argument("run_id", metavar="RUN", type=int)
@click.pass_context
def answer_command(ctx: click.Context, regression_id: int, run_id: int) -> None:
    """Record what an A/B run found for an entry: reproduced, not reproduced, or not known.

    The run's variants that name the entry's base and commit (`kernel: {commit: SHA}`) are
    compared; a run of two other variants is taken as baseline → commit.  An `iolab ab` of
    the entry's two commits answers it by itself when it ends.

    \b
    Example:
      iolab regressions answer 3 41
    """
    from iolab.history.answers import answer_from_run, answer_note, answers

    with open_store(store_location(ctx), must_exist=True) as store:
        entry = answer_from_run(store, regression_id, run_id)
    click.echo(f"regression {entry.id}: {shown(answer_note(answers(entry)[-1], run_id))}")
