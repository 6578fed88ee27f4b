"""`iolab watch RUN`: a run's live progress, read from the store (iolab.runs.watch)."""

from __future__ import annotations

import json

import click

from iolab.cli.options import store_location
from iolab.textsafe import shown


@click.command("watch")
@click.argument("run_id", metavar="RUN", type=int)
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["text", "json"]),
    default="text",
    show_default=True,
    help="A line per change, or a JSON object per line.",
)
@click.option(
    "--interval",
    type=click.FloatRange(0.1, 3600),
    default=1.0,
    show_default=True,
    metavar="SECONDS",
    help="How often the store is read.",
)
@click.pass_context
def command(ctx: click.Context, run_id: int, fmt: str, interval: float) -> None:
    """Follow run RUN (local, fleet, A/B or bisect) until it ends: samples stored, blocks
    queued, running (and where) and done, one line each time it changes.

    \b
    Example:
      iolab watch 42
    """
    from iolab.runs.watch import follow
    from iolab.store import open_store

    with open_store(store_location(ctx), must_exist=True) as store:
        for progress in follow(store, run_id, poll_s=interval):
            if fmt == "json":
                click.echo(json.dumps(progress.to_json(), sort_keys=True))
            else:
                click.echo(shown(progress.line()))
