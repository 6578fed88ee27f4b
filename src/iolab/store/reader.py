"""What a command that only lists runs and samples needs of a store.

`Store` (SQLAlchemy, every backend) and `SQLiteReader` (the standard library's sqlite3, a
current SQLite file only) both provide it; `iolab.store.open_reader` picks one.
"""

from __future__ import annotations

from collections.abc import Sequence
from types import TracebackType
from typing import Protocol, Self

from iolab.model.sample import RunInfo, Sample


class StoreReader(Protocol):
    location: str

    def runs(self, label: str | None = None) -> list[RunInfo]: ...

    def run(self, run_id: int) -> RunInfo: ...

    def samples(
        self,
        run_id: int | None = None,
        *,
        status: str | None = "ok",
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
