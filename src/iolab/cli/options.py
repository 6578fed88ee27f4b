"""Options shared by the commands that judge (compare, ab): one definition, one help text."""

from __future__ import annotations

import click

margin_option = click.option(
    "--margin",
    type=float,
    default=1.0,
    show_default=True,
    metavar="PCT",
    help="'No change' means within ± this many percent.",
)

ci_option = click.option(
    "--ci",
    is_flag=True,
    help="Exit 10 when a KPI regressed, 11 when none did but one is inconclusive.",
)
