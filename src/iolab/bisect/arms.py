"""Where a bisect's arms come from, behind one small protocol the session drives.

An arm is a name (a commit's sha, or a kernel release): the variant its samples carry.  A
source makes an arm measurable (`build`: a commit built here, a kernel commit built and its
artifacts sent to the store, a release: nothing to do), says which plan the blocks measure
with the arms built so far (`plan`), binds an arm to the case that measures it (`cases`),
and names it in the report (`describe`).  The sources: `commit_arms` (commits built and
measured here), `release_arms` (kernel releases, on a fleet), `kernel_commit_arms` (kernel
commits built here, booted on a fleet).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Protocol

from iolab.builds.builder import BuildRecord
from iolab.model.bisect import Commit
from iolab.plan.model import Case, Plan
from iolab.store.store import Store


class ArmSource(Protocol):
    needs_build: bool  # False: each arm is measurable as named (nothing built, nothing recorded)

    def build(self, name: str, builds: Mapping[str, BuildRecord]) -> BuildRecord:
        """Make arm `name` measurable; a build that is not ok makes the arm unbuildable.
        Called once per arm and run, before the arm is measured."""
        ...

    def publish(self, store: Store, build: BuildRecord) -> BuildRecord:
        """What the run records of a build (a kernel's artifacts go to the store first)."""
        ...

    def plan(self, builds: Mapping[str, BuildRecord]) -> Plan:
        """The plan the blocks measure, with every arm built so far."""
        ...

    def cases(self, plan: Plan, names: Sequence[str]) -> list[Case]: ...

    def describe(self, name: str, build: BuildRecord | None) -> Commit: ...

    def close(self, store: Store, run_id: int, finished: bool) -> None:
        """The bisect stops; `finished`: it has ended (nothing left to resume)."""
        ...


def by_variant(plan: Plan, names: Sequence[str]) -> list[Case]:
    """The cases of a plan that has one variant per arm (both kernel sources)."""
    cases = {c.variant: c for c in plan.cases}
    return [cases[n] for n in names]
