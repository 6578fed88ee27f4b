"""`iolab ab` — placeholder until its module lands (owner: see docs/architecture.md)."""

from __future__ import annotations

import click

from iolab.errors import IolabError


@click.command("ab")
def command() -> None:
    """Not available yet."""
    raise IolabError("'ab' is not implemented yet")
