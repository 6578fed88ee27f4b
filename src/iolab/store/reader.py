"""What a command that only reads a store needs of it: listing runs and samples (`results`)
and resolving selectors (`compare`, `report`, `export`).

`Store` (SQLAlchemy, every backend) and `SQLiteReader` (the standard library's sqlite3, a
current SQLite file only) both provide it; `iolab.store.open_reader` picks one.  A reader
never writes, so a store on a read-only mount can be queried.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from types import TracebackType
from typing import Any, Protocol, Self

from iolab.model.sample import RunInfo, Sample


class StoreReader(Protocol):
    location: str

    def runs(self, label: str | None = None) -> list[RunInfo]: ...

    def run(self, run_id: int) -> RunInfo: ...

    def labels(self) -> list[str]: ...

    def variants(self, run_id: int) -> list[str]: ...

    def cells(self, run_id: int) -> list[dict[str, Any]]: ...

    def samples(
        self,
        run_id: int | None = None,
        label: str | None = None,
        variant: str | None = None,
        cell: Mapping[str, Any] | None = None,
        tags: Mapping[str, str] | None = None,
        status: str | None = "ok",
        *,
        host: str | None = None,
        metrics: Sequence[str] | None = None,
        with_jobs: bool = True,
        with_histograms: bool = True,
    ) -> list[Sample]: ...

    def close(self) -> None: ...

    def __enter__(self) -> Self: ...

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None: ...
