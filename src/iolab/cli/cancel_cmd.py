"""`iolab cancel RUN`: stop a run from any terminal (iolab.runs.cancel)."""

from __future__ import annotations

import click

from iolab.cli.options import Duration, store_location
from iolab.textsafe import shown


@click.command("cancel")
@click.argument("run_id", metavar="RUN", type=int)
@click.option(
    "--wait",
    "wait_s",
    type=Duration(positive=False),
    default="10m",
    show_default=True,
    metavar="DURATION",
    help="How long to wait for the blocks in flight to end and the hosts to be restored.",
)
@click.pass_context
def command(ctx: click.Context, run_id: int, wait_s: float) -> None:
    """Cancel run RUN: no new block starts, blocks in flight end cleanly and their hosts
    are restored, and the run ends as cancelled (it cannot be resumed).

    \b
    Examples:
      iolab cancel 42
      iolab cancel 42 --wait 0s    # ask, and do not wait for the blocks to end
    """
    from iolab.runs.cancel import cancel
    from iolab.store import open_store

    with open_store(store_location(ctx), must_exist=True) as store:
        done = cancel(store, run_id, wait_s=wait_s)
    click.echo(
        f"run {run_id} {done.status}: {done.revoked} queued block(s) revoked, "
        f"{done.stopped} in flight stopped; {shown(done.how)}"
    )
