"""Kernel commits built here, booted on a fleet: the arm source of
`iolab bisect PLAN --kernel-repo DIR --good REV --bad REV --kernel-build CMD --fleet C`.

A kernel bisect over a git range, as ktest.pl and LKP users run one.  Each commit the engine
asks for is built on this machine by the build hook (`iolab.bisect.kernel_build`: one reused
work tree, artifacts and a manifest, cached per sha), its artifacts go to the store
(`iolab.kernels.artifacts`), and the fleet host that must boot it fetches them, installs
them with its `install` hook, boots, and checks that it runs the release the commit built —
otherwise the attempt is `wrong_kernel` and nothing is stored.  The plan sent to the hosts
names, per built commit, `"<sha>": {kernel: <release>}`, and grows as commits are built.
When the bisect ends, its artifacts leave the store (the builds stay in the cache).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path

from iolab.bisect import git
from iolab.bisect.arms import by_variant
from iolab.bisect.kernel_build import KernelBuilder, short
from iolab.bisect.kernel_plan import kernel_plan
from iolab.bisect.settings import ArmBuild
from iolab.errors import RefusedError
from iolab.kernels import artifacts
from iolab.model.bisect import Commit
from iolab.plan.model import Case, Plan
from iolab.store.store import Store


def check_unique(builds: Mapping[str, ArmBuild], sha: str, release: str) -> None:
    """Two commits that build one release could not be told apart after boot: refused."""
    for other, rec in builds.items():
        if other != sha and rec.ok and rec.release == release:
            raise RefusedError(
                f"commits {short(other)} and {short(sha)} both build release {release}: "
                "the boot check could not tell them apart (build with "
                "LOCALVERSION=$IOLAB_KERNEL_LOCALVERSION)"
            )


class KernelCommitArms:
    needs_build = True

    def __init__(self, template: Plan, builder: KernelBuilder) -> None:
        self.template, self.builder = template, builder
        self._plan: tuple[dict[str, str], Plan] | None = None

    def build(self, name: str, builds: Mapping[str, ArmBuild]) -> ArmBuild:
        built = self.builder.build(name)
        if not built.ok or built.manifest is None:
            return ArmBuild(False, built.reason or "failed")
        m = built.manifest
        check_unique(builds, name, m.release)
        return ArmBuild(
            True,
            release=m.release,
            release_without_sha=m.release_without_sha,
            files=tuple(str(p) for p in m.artifacts),
            sha256=built.sha256,
            cached=built.cached,
        )

    def publish(self, store: Store, build: ArmBuild) -> ArmBuild:
        if not build.ok or build.artifacts:
            return build
        uploaded = tuple(
            artifacts.upload(store, Path(p), digest).as_dict()
            for p, digest in zip(build.files, build.sha256, strict=True)
        )
        return replace(build, artifacts=uploaded)

    def plan(self, builds: Mapping[str, ArmBuild]) -> Plan:
        releases = {s: b.release for s, b in builds.items() if b.ok and b.release}
        if self._plan is None or self._plan[0] != releases:
            self._plan = (releases, kernel_plan(self.template, releases))
        return self._plan[1]

    def cases(self, plan: Plan, names: Sequence[str]) -> list[Case]:
        return by_variant(plan, names)

    def describe(self, name: str, build: ArmBuild | None) -> Commit:
        described = git.describe(self.builder.repo, name)
        if build is None:
            return described
        note = f" [kernel {build.release}]" if build.ok else " [unbuildable]"
        return replace(described, subject=described.subject + note)

    def close(self, store: Store, run_id: int, finished: bool) -> None:
        if finished:
            removed = artifacts.remove(store, store.run(run_id).meta)
            store.update_run_meta(run_id, {"kernel_artifacts_removed": removed})
