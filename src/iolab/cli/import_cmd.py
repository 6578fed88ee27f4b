"""`iolab import FILE… --label L [--tag key=value…]`: parse every file, store them all.

Everything is stored in one transaction: one bad file means nothing is stored, so a re-run
after fixing it does not leave half an import behind (`runs.imports`).
"""

from __future__ import annotations

import click

from iolab.cli.options import parse_tags, store_location
from iolab.errors import IolabError
from iolab.runs.imports import import_files
from iolab.textsafe import shown


@click.command("import")
@click.argument("files", nargs=-1, required=True)
@click.option("--label", "label", metavar="NAME", help="Name the imported results (required).")
@click.option("--tag", "tags", multiple=True, metavar="KEY=VALUE", help="Tag the run (repeatable).")
@click.pass_context
def command(
    ctx: click.Context, files: tuple[str, ...], label: str | None, tags: tuple[str, ...]
) -> None:
    """Store the fio / xfs_io / dd results in FILEs under a label (`-` is standard input).

    \b
    Examples:
      iolab import --label v6.1 results/*.json
      iolab import --label v6.2 --tag kernel=6.2 --tag host=box1 out.txt
    """
    if label is None or not label.strip():
        raise IolabError("import needs --label NAME")
    label = label.strip()
    if len(label) > 200:
        raise IolabError("--label is longer than 200 characters")
    done = import_files(files, label, parse_tags(tags), store_location(ctx))
    click.echo(
        f"imported {done.results} results from {done.files} files as run {done.run_id} "
        f"(label {shown(label)})"
    )
