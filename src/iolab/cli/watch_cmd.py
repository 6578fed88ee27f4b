"""`iolab watch RUN`: a run's live progress, read from the store (iolab.runs.watch)."""

from __future__ import annotations

import json

import click

from iolab.cli.options import Duration, format_option, output_option, store_location, to_output
from iolab.textsafe import shown


@click.command("watch")
@click.argument("run_id", metavar="RUN", type=int)
@format_option(["text", "json"], "text", "A line per change, or a JSON object per line.")
@output_option
@click.option(
    "--interval",
    type=Duration(),
    default="1s",
    show_default=True,
    metavar="DURATION",
    help="How often the store is read (250ms, 1s, 5s).",
)
@click.pass_context
def command(
    ctx: click.Context, run_id: int, format_name: str, output: str | None, interval: float
) -> None:
    """Follow run RUN (local, fleet, A/B or bisect) until it ends: samples stored, blocks
    queued, running (and where) and done, one line each time it changes.

    \b
    Examples:
      iolab watch 42
      iolab watch 42 --format json --interval 5s -o run42.jsonl
    """
    from iolab.runs.watch import follow
    from iolab.store import open_store

    with open_store(store_location(ctx), must_exist=True) as store, to_output(output):
        for progress in follow(store, run_id, poll_s=max(interval, 0.1)):
            if format_name == "json":
                click.echo(json.dumps(progress.to_json(), sort_keys=True))
            else:
                click.echo(shown(progress.line()))
