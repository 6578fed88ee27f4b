"""`iolab import FILE… --label L [--tag key=value…]`: parse every file, store them all.

Everything is stored in one transaction: one bad file means nothing is stored, so a re-run
after fixing it does not leave half an import behind.  Many files (ingest.background.
worth_it) going into a store that exists are parsed by a second process while this one
stores them; otherwise every file is parsed before the store is opened, so that a failed
import never leaves a new, empty store file behind.
"""

from __future__ import annotations

from collections.abc import Iterator
from itertools import chain

import click

from iolab.cli.options import parse_tags, store_location
from iolab.errors import IolabError
from iolab.ingest import background
from iolab.ingest.detect import parse_source
from iolab.store import open_store
from iolab.store.convert import ImportBatch
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
    location = store_location(ctx)
    new_file = location.file is not None and not location.file.exists()
    if background.worth_it(files) and not new_file:
        with background.parsed_in_background(files) as parsing:
            # the first chunk is parsed before the store is opened: a bad file there (a
            # wrong directory, say) does not even take the store's write lock
            first = next(parsing, None)
            counted = _Counted(chain([] if first is None else [first], parsing))
            with open_store(location) as store:
                run_id = store.import_batches(counted, label, tag_map)
            found = counted.count
    else:
        results = [result for path in files for result in parse_source(path)]
        with open_store(location) as store:
            run_id = store.import_results(results, label, tag_map)
        found = len(results)
    click.echo(
        f"imported {found} results from {len(files)} files as run {run_id} (label {shown(label)})"
    )


class _Counted:
    """Batches passed through, their samples counted (for the closing message)."""

    def __init__(self, batches: Iterator[ImportBatch]) -> None:
        self.batches = batches
        self.count = 0

    def __iter__(self) -> Iterator[ImportBatch]:
        for batch in self.batches:
            self.count += len(batch.samples)
            yield batch
