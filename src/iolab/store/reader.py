"""What a command that only reads a store needs of it: listing runs and samples (`results`)
and resolving selectors (`compare`, `report`, `export`).

`Store` (SQLAlchemy, every backend) and `SQLiteReader` (the standard library's sqlite3, a
current SQLite file only) both derive from `StoreReader`; `iolab.store.open_reader` picks
one.  A reader never writes, so a store on a read-only mount can be queried.

The parts that do not depend on how the rows are fetched live here once, so that the two
read paths cannot drift apart: the `samples` signature and its filters (`SampleQuery`),
and the `with` protocol.  This module imports no SQLAlchemy (`SQLiteReader` must not).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from types import TracebackType
from typing import Any, Literal, Self

from iolab.model.sample import RunInfo, Sample
from iolab.store.location import same_text

ID_MIN, ID_MAX = -(2**31), 2**31 - 1  # runs.id is INTEGER: 32 bits on PostgreSQL


def no_run_id(run_id: int) -> bool:
    """True for an id no run can have (a typo'd one the database driver cannot bind)."""
    return not ID_MIN <= run_id <= ID_MAX


@dataclass(frozen=True)
class SampleQuery:
    """Which samples `StoreReader.samples` returns and what it loads with them.

    Filters combine with AND; `cell` matches samples whose cell contains every given key
    with that value (compared as text); `label` and `tags` select via the run;
    `status=None` means ok and failed alike.  `metrics` restricts which metric names are
    loaded; `with_jobs=False` skips per-job metrics and bins.
    """

    run_id: int | None = None
    label: str | None = None
    variant: str | None = None
    cell: Mapping[str, Any] | None = None
    tags: Mapping[str, str] | None = None
    status: str | None = "ok"
    block: int | None = None
    host: str | None = None
    metrics: Sequence[str] | None = None
    with_jobs: bool = True
    with_histograms: bool = True

    def equalities(self) -> list[tuple[Literal["samples", "runs"], str, Any]]:
        """(table, column, value) of every column filter that is set: both readers turn
        these into `table.column = value` conditions."""
        wanted: list[tuple[Literal["samples", "runs"], str, Any]] = [
            ("samples", "run_id", self.run_id),
            ("runs", "label", self.label),
            ("samples", "variant", self.variant),
            ("samples", "status", self.status),
            ("samples", "block", self.block),
            ("samples", "host", self.host),
        ]
        return [(table, column, value) for table, column, value in wanted if value is not None]

    def keeps_cell(self, cell: Mapping[str, Any]) -> bool:
        """Whether a stored cell matches the `cell` filter (values compare as text)."""
        return not self.cell or all(
            key in cell and same_text(cell[key], value) for key, value in self.cell.items()
        )


class StoreReader(ABC):
    location: str

    @abstractmethod
    def runs(self, label: str | None = None) -> list[RunInfo]:
        """Runs, oldest first, with their tags and sample counts."""

    @abstractmethod
    def run(self, run_id: int) -> RunInfo: ...

    @abstractmethod
    def labels(self) -> list[str]:
        """Every label in use, sorted."""

    @abstractmethod
    def variants(self, run_id: int) -> list[str]:
        """Variant names of a run, in the order first stored."""

    @abstractmethod
    def cells(self, run_id: int) -> list[dict[str, Any]]:
        """The distinct matrix cells of a run, in the order first stored."""

    def samples(
        self,
        run_id: int | None = None,
        label: str | None = None,
        variant: str | None = None,
        cell: Mapping[str, Any] | None = None,
        tags: Mapping[str, str] | None = None,
        status: str | None = "ok",
        *,
        block: int | None = None,
        host: str | None = None,
        metrics: Sequence[str] | None = None,
        with_jobs: bool = True,
        with_histograms: bool = True,
    ) -> list[Sample]:
        """Samples in the order they were stored, with their run's label and tags, metrics
        and bins; the filters are `SampleQuery`'s."""
        return self.select_samples(
            SampleQuery(
                run_id=run_id,
                label=label,
                variant=variant,
                cell=cell,
                tags=tags,
                status=status,
                block=block,
                host=host,
                metrics=metrics,
                with_jobs=with_jobs,
                with_histograms=with_histograms,
            )
        )

    @abstractmethod
    def select_samples(self, query: SampleQuery) -> list[Sample]:
        """`samples` with its arguments gathered in one value."""

    @abstractmethod
    def close(self) -> None: ...

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()
