"""`iolab import` — placeholder until its module lands (owner: see docs/architecture.md)."""

from __future__ import annotations

import click

from iolab.errors import IolabError


@click.command("import")
def command() -> None:
    """Not available yet."""
    raise IolabError("'import' is not implemented yet")
