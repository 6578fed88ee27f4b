"""Kernel commits built here, booted on a fleet: the arm source of
`iolab bisect PLAN --kernel-repo DIR --good REV --bad REV --kernel-build CMD --fleet C`.

A kernel bisect over a git range, as ktest.pl and LKP users run one.  Each commit the engine
asks for is built on this machine by the build hook and its artifacts go to the store
(`iolab.builds.kernel_commits`, which `iolab ab --kernel-repo` uses too); the fleet host
that must boot it fetches them, installs them with its `install` hook, boots, and checks
that it runs the release the commit built — otherwise the attempt is `wrong_kernel` and
nothing is stored.  The plan sent to the hosts names, per built commit, `"<sha>": {kernel:
<release>}`, and grows as commits are built.  When the bisect ends, its artifacts leave the
store (the builds stay in the cache).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace

from iolab.bisect.arms import by_variant
from iolab.bisect.kernel_plan import kernel_plan
from iolab.builds import git, kernel_commits
from iolab.builds.builder import BuildRecord
from iolab.builds.kernel import KernelBuilder
from iolab.model.bisect import Commit
from iolab.plan.model import Case, Plan
from iolab.store.store import Store


class KernelCommitArms:
    needs_build = True

    def __init__(self, template: Plan, builder: KernelBuilder) -> None:
        self.template, self.builder = template, builder
        self._plan: tuple[dict[str, str], Plan] | None = None

    def build(self, name: str, builds: Mapping[str, BuildRecord]) -> BuildRecord:
        return kernel_commits.build(self.builder, name, builds)

    def publish(self, store: Store, build: BuildRecord) -> BuildRecord:
        return kernel_commits.publish(store, build)

    def plan(self, builds: Mapping[str, BuildRecord]) -> Plan:
        releases = {s: b.release for s, b in builds.items() if b.ok and b.release}
        if self._plan is None or self._plan[0] != releases:
            self._plan = (releases, kernel_plan(self.template, releases))
        return self._plan[1]

    def cases(self, plan: Plan, names: Sequence[str]) -> list[Case]:
        return by_variant(plan, names)

    def describe(self, name: str, build: BuildRecord | None) -> Commit:
        described = git.describe(self.builder.repo, name)
        if build is None:
            return described
        note = f" [kernel {build.release}]" if build.ok else " [unbuildable]"
        return replace(described, subject=described.subject + note)

    def close(self, store: Store, run_id: int, finished: bool) -> None:
        if finished:
            kernel_commits.drop(store, run_id)
