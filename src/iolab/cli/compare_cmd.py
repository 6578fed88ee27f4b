"""`iolab compare` — placeholder until its module lands (owner: see docs/architecture.md)."""

from __future__ import annotations

import click

from iolab.errors import IolabError


@click.command("compare")
def command() -> None:
    """Not available yet."""
    raise IolabError("'compare' is not implemented yet")
