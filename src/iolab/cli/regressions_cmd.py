"""`iolab regressions [mark ID STATUS]`: the regression registry (docs/history.md)."""

from __future__ import annotations

import click

from iolab.cli.options import store_location, text_format_option
from iolab.history.service import mark, regressions
from iolab.model.regression import STATUSES
from iolab.report.history import render_regressions
from iolab.store import open_store


@click.group("regressions", invoke_without_command=True)
@click.option(
    "--status",
    "status",
    multiple=True,
    type=click.Choice(list(STATUSES)),
    help="Only entries with this status (repeatable).",
)
@text_format_option
@click.pass_context
def command(ctx: click.Context, status: tuple[str, ...], format_name: str) -> None:
    """The regression registry: every entry with its status, size and log."""
    if ctx.invoked_subcommand is not None:
        return
    with open_store(store_location(ctx), must_exist=True) as store:
        found = regressions(store, status)
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
    """Set an entry's status; the change is appended to its log."""
    with open_store(store_location(ctx), must_exist=True) as store:
        entry = mark(store, regression_id, status, note, evidence)
    click.echo(f"regression {entry.id}: {entry.status}")
