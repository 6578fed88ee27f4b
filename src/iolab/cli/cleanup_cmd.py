"""`iolab cleanup` — placeholder until its module lands (owner: see docs/architecture.md)."""

from __future__ import annotations

import click

from iolab.errors import IolabError


@click.command("cleanup")
def command() -> None:
    """Not available yet."""
    raise IolabError("'cleanup' is not implemented yet")
