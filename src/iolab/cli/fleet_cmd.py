"""`iolab fleet status|drain|undrain|forget`: the fleet's hosts as the store has them."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

import click
from rich.console import Console
from rich.table import Table

from iolab.cli.options import format_option, output_option, store_location, to_output
from iolab.errors import IolabError
from iolab.textsafe import shown

if TYPE_CHECKING:
    from iolab.fleet.status import FleetStatus


@click.group("fleet")
def command() -> None:
    """The fleet's test hosts: status, drain, undrain and forget.

    \b
    Examples:
      iolab --db postgresql+psycopg://iolab@ctl/iolab fleet status
      iolab fleet drain ssd-01
    """


@command.command("status")
@format_option(["table", "json"], "table", "A table, or one JSON object.")
@output_option
@click.option(
    "--broker", default=None, metavar="URL", help="Also show queue lengths (default $IOLAB_BROKER)."
)
@click.pass_context
def status(ctx: click.Context, format_name: str, output: str | None, broker: str | None) -> None:
    """Each host's class, heartbeat age, iolab version, kernel, boot id, current job and
    state; queues; blocks in flight.

    \b
    Examples:
      iolab fleet status
      iolab fleet status --format json -o fleet.json
    """
    import os

    from iolab.fleet import service
    from iolab.fleet import status as fleet_status
    from iolab.store import open_store

    broker = broker or os.environ.get("IOLAB_BROKER")
    with open_store(store_location(ctx), must_exist=True) as store:
        service.require_server_store(store)
        found = fleet_status.gather(store, broker)
    with to_output(output):
        _show(found, format_name)


def _show(found: FleetStatus, format_name: str) -> None:
    if format_name == "json":
        click.echo(json.dumps(found.to_json(), indent=2, sort_keys=True))
        return
    table = Table(box=None)
    for title in ("host", "class", "state", "heartbeat", "iolab", "kernel", "boot id", "job"):
        table.add_column(title)
    for h in found.hosts:
        state = h.state + (" (drained)" if h.drained else "")
        age = "never" if h.heartbeat_age_s is None else f"{h.heartbeat_age_s:.0f} s ago"
        table.add_row(
            shown(h.name),
            shown(h.host_class),
            state,
            age,
            shown(h.version or "?"),
            shown(h.kernel or "?"),
            (h.boot_id or "?")[:8],
            shown(h.current_job or "-"),
        )
    console = Console(soft_wrap=True)  # sys.stdout when it prints: `-o` redirects it
    console.print(table)
    if found.queues is not None:
        for name, length in found.queues.items():
            console.print(f"queue {shown(name)}: {length} waiting", highlight=False)
    console.print(f"{len(found.in_flight)} blocks in flight", highlight=False)


def _drain(ctx: click.Context, host: str, drained: bool) -> None:
    from iolab.fleet import service
    from iolab.store import leases, open_store

    with open_store(store_location(ctx), must_exist=True) as store:
        service.require_server_store(store)
        if not leases.set_drained(store, host, drained):
            raise IolabError(f"no host {host} in the fleet")
    click.echo(f"host {shown(host)} {'drained' if drained else 'undrained'}")


@command.command("drain")
@click.argument("host")
@click.pass_context
def drain(ctx: click.Context, host: str) -> None:
    """HOST takes no new block (the one it runs ends normally).

    \b
    Example:
      iolab fleet drain ssd-01
    """
    _drain(ctx, host, True)


@command.command("undrain")
@click.argument("host")
@click.pass_context
def undrain(ctx: click.Context, host: str) -> None:
    """HOST takes blocks again (also lifts a quarantine).

    \b
    Example:
      iolab fleet undrain ssd-01
    """
    _drain(ctx, host, False)


@command.command("forget")
@click.argument("host")
@click.pass_context
def forget(ctx: click.Context, host: str) -> None:
    """Remove HOST from the fleet (a host taken out of the lab); refused while its worker
    still heartbeats or a block of it is live.

    \b
    Example:
      iolab fleet forget ssd-01
    """
    from iolab.fleet import service
    from iolab.fleet.config import heartbeat_s
    from iolab.store import leases, open_store

    with open_store(store_location(ctx), must_exist=True) as store:
        service.require_server_store(store)
        why = leases.forget_host(store, host, fresh_s=3 * heartbeat_s())
    if why is not None:
        raise IolabError(why)
    click.echo(f"host {shown(host)} forgotten")
