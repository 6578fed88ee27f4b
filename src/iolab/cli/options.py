"""Options shared by several commands: one definition, one help text, one validation."""

from __future__ import annotations

import re

import click

from iolab.errors import IolabError

_TAG_KEY = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.:-]*\Z")

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


def parse_tags(specs: tuple[str, ...]) -> dict[str, str]:
    """`--tag key=value` options as a dict, checked alike by import, run and ab (a tag that
    import refuses must not reach the store another way); malformed or repeated keys fail."""
    tags: dict[str, str] = {}
    for spec in specs:
        key, sep, value = spec.partition("=")
        key = key.strip()
        if not sep or not _TAG_KEY.match(key) or not value:
            raise IolabError(
                f"bad --tag {spec!r}: expected KEY=VALUE (key of letters, digits, _ . : -)"
            )
        if key in tags:
            raise IolabError(f"--tag {key} given twice")
        tags[key] = value
    return tags
