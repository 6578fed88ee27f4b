"""`iolab publish DIR`: a static site of the store (docs/report.md)."""

from __future__ import annotations

import click

from iolab.cli.options import store_location


@click.command("publish")
@click.argument("directory", metavar="DIR")
@click.option(
    "--jobs",
    type=click.IntRange(min=1),
    default=None,
    metavar="N",
    help="Worker processes rendering run pages (default: one per CPU).",
)
@click.pass_context
def command(ctx: click.Context, directory: str, jobs: int | None) -> None:
    """Write a static site of every run in the store to DIR (index, one report per run);
    again later, only new or changed runs are rendered.

    \b
    Examples:
      iolab publish site/
      iolab --db postgresql+psycopg://lab@db/iolab publish /srv/www/iolab --jobs 4
    """
    from iolab.publish.site import publish  # numpy and SQLAlchemy: not for --help

    done = publish(store_location(ctx), directory, jobs)
    click.echo(
        f"{directory}: {done.runs} runs, {done.pages} page(s) written, "
        f"{done.skipped} unchanged kept, in {done.seconds:.1f} s"
    )
