"""`iolab import` once, for the command and the Python API: every file parsed, all results
stored as one "import" run, or nothing.

Many files (`ingest.background.worth_it`) going into a store that exists are parsed by a
second process while this one stores them (docs/store.md, "Import speed"); otherwise every
file is parsed before the store is opened, so that a failed import never leaves a new,
empty store file behind.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from itertools import chain

from iolab.ingest import background
from iolab.ingest.detect import parse_source
from iolab.store import open_store
from iolab.store.convert import ImportBatch
from iolab.store.location import StoreLocation


@dataclass(frozen=True)
class Imported:
    run_id: int
    results: int  # results stored (a file may hold several)
    files: int


def import_files(
    paths: Sequence[str],
    label: str,
    tags: Mapping[str, str] | None = None,
    location: str | StoreLocation | None = None,
) -> Imported:
    """Store the results of `paths` (`-` is standard input) as one import run."""
    where = StoreLocation.given(location)
    new_file = where.file is not None and not where.file.exists()
    tags = dict(tags or {})
    if background.worth_it(paths) and not new_file:
        with background.parsed_in_background(paths) as parsing:
            # the first chunk is parsed before the store is opened: a bad file there (a
            # wrong directory, say) does not even take the store's write lock
            first = next(parsing, None)
            counted = _Counted(chain([] if first is None else [first], parsing))
            with open_store(where) as store:
                run_id = store.import_batches(counted, label, tags)
        return Imported(run_id, counted.count, len(paths))
    results = [result for path in paths for result in parse_source(path)]
    with open_store(where) as store:
        run_id = store.import_results(results, label, tags)
    return Imported(run_id, len(results), len(paths))


class _Counted:
    """Batches passed through, their samples counted (for the closing message)."""

    def __init__(self, batches: Iterator[ImportBatch]) -> None:
        self.batches = batches
        self.count = 0

    def __iter__(self) -> Iterator[ImportBatch]:
        for batch in self.batches:
            self.count += len(batch.samples)
            yield batch
