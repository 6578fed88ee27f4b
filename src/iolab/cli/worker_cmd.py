"""`iolab worker`: serve a fleet's blocks on this test host (or print its systemd unit)."""

from __future__ import annotations

import shutil
import sys

import click

from iolab.cli.options import store_location
from iolab.errors import IolabError
from iolab.store.location import StoreLocation


@click.command("worker")
@click.option("--broker", default=None, metavar="URL", help="Redis URL (default $IOLAB_BROKER).")
@click.option("--db", "db", default=None, metavar="URL", help="The fleet's PostgreSQL store.")
@click.option(
    "--name", default=None, help="This host's name (default: the host config's, else the hostname)."
)
@click.option(
    "--class",
    "host_class",
    default=None,
    help="The class (queue) it serves (default: config, else `default`).",
)
@click.option(
    "--config",
    "config_path",
    default=None,
    metavar="FILE",
    help="This host's config (TOML): devices, hooks.",
)
@click.option("--print-unit", is_flag=True, help="Print a systemd unit for the worker and exit.")
@click.pass_context
def command(
    ctx: click.Context,
    broker: str | None,
    db: str | None,
    name: str | None,
    host_class: str | None,
    config_path: str | None,
    print_unit: bool,
) -> None:
    """Serve blocks of a fleet on this test host, one at a time, under its own host config.

    \b
    Examples:
      iolab worker --config /etc/iolab/host.toml --broker redis://ctl:6379/0 \\
          --db postgresql+psycopg://iolab@ctl/iolab
      iolab worker --print-unit > /etc/systemd/system/iolab-worker.service
    """
    from iolab.fleet import config, service

    if print_unit:
        exe = shutil.which("iolab") or f"{sys.prefix}/bin/iolab"
        click.echo(service.systemd_unit(exe), nl=False)
        return
    host = config.load(config_path, name=name, host_class=host_class)
    url = service.broker_url(broker)
    from iolab.store import open_store

    location = StoreLocation.given(db) if db else store_location(ctx)
    if not (location.is_url and str(location.text).startswith("postgresql")):
        raise IolabError(
            "a worker needs the fleet's PostgreSQL store: --db postgresql+psycopg://..."
        )
    with open_store(location) as store:
        sys.exit(service.run_worker(host, store, url))
