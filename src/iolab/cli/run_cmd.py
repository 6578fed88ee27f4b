"""`iolab run` — placeholder until its module lands (owner: see docs/architecture.md)."""

from __future__ import annotations

import click

from iolab.errors import IolabError


@click.command("run")
def command() -> None:
    """Not available yet."""
    raise IolabError("'run' is not implemented yet")
