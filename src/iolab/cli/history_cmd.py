"""`iolab history SELECTOR`: series over time with change points (docs/history.md)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

from iolab.cli.options import output_option, store_location, text_format_option, to_output
from iolab.errors import StoreError
from iolab.report.history import render_history
from iolab.store import open_store

if TYPE_CHECKING:
    from iolab.store import Store


@click.command("history")
@click.argument("selector")
@click.option(
    "--metric",
    "metrics",
    multiple=True,
    metavar="GLOB",
    help="Only metrics matching GLOB (repeatable); default: the KPIs.",
)
@click.option(
    "--by",
    "by",
    multiple=True,
    metavar="TAG",
    help="Split series further by the value of run tag TAG (repeatable).",
)
@click.option(
    "--order",
    default="time",
    show_default=True,
    metavar="time|tag:KEY",
    help="Order points by the result's own time, or by a tag, version-sorted.",
)
@text_format_option
@output_option
@click.pass_context
def command(
    ctx: click.Context,
    selector: str,
    metrics: tuple[str, ...],
    by: tuple[str, ...],
    order: str,
    format_name: str,
    output: str | None,
) -> None:
    """One series per metric and case, change points, and registry entries for KPI
    regressions.

    \b
    Examples:
      iolab history label:nightly
      iolab history tag:suite=fs --order tag:kernel --format markdown -o history.md
    """
    from iolab.history.service import history  # numpy and SQLAlchemy: not for --help

    store, record = _opened(ctx)
    with store:
        result = history(store, selector, metrics, by, order, record=record)
    with to_output(output):
        click.echo(render_history(result, format_name), nl=False)


def _opened(ctx: click.Context) -> tuple[Store, bool]:
    """The store, and whether regressions can be recorded in it: a store that can only be
    read (a read-only mount) still gets its history, with one line saying nothing was
    recorded."""
    location = store_location(ctx)
    try:
        return open_store(location, must_exist=True), True
    except StoreError as exc:
        try:
            store = open_store(location, read_only=True)
        except StoreError:
            raise exc from None
        click.echo(f"iolab: not recorded in the regression registry: {exc}", err=True)
        return store, False
