"""`iolab import FILE… --label L [--tag key=value…]`: parse every file, then store them all.

Parsing comes first and storing second, in one transaction: one bad file means nothing is
stored, so a re-run after fixing it does not leave half an import behind.
"""

from __future__ import annotations

import click

from iolab.cli.options import parse_tags, store_location
from iolab.errors import IolabError
from iolab.ingest.detect import parse_source
from iolab.model.result import Result
from iolab.store import open_store
from iolab.textsafe import shown


@click.command("import")
@click.argument("files", nargs=-1, required=True)
@click.option("--label", "label", metavar="NAME", help="Name the imported results (required).")
@click.option("--tag", "tags", multiple=True, metavar="KEY=VALUE", help="Tag the run (repeatable).")
@click.pass_context
def command(
    ctx: click.Context, files: tuple[str, ...], label: str | None, tags: tuple[str, ...]
) -> None:
    """Store the fio / xfs_io / dd results in FILEs under a label (`-` is standard input)."""
    if label is None or not label.strip():
        raise IolabError("import needs --label NAME")
    label = label.strip()
    if len(label) > 200:
        raise IolabError("--label is longer than 200 characters")
    tag_map = parse_tags(tags)
    results: list[Result] = []
    for path in files:
        results.extend(parse_source(path))
    with open_store(store_location(ctx)) as store:
        run_id = store.import_results(results, label, tag_map)
    click.echo(
        f"imported {len(results)} results from {len(files)} files as run {run_id} "
        f"(label {shown(label)})"
    )
