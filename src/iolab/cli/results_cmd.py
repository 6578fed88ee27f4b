"""`iolab results` — placeholder until its module lands (owner: see docs/architecture.md)."""

from __future__ import annotations

import click

from iolab.errors import IolabError


@click.command("results")
def command() -> None:
    """Not available yet."""
    raise IolabError("'results' is not implemented yet")
