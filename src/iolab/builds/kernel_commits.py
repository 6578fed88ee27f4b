"""Kernel commits built here and shipped through the store: the one implementation that
`iolab bisect --kernel-repo` (commit by commit, as its engine asks) and `iolab ab
--kernel-repo` (the plan's `kernel: {commit: SHA}` variants, before the run) both use.

A commit is built by the build hook (`iolab.builds.kernel`: manifest checked, cached per
command and sha); two commits that build one release are refused (the boot check could not
tell them apart); a good build's artifacts go to the store as large objects
(`iolab.kernels.artifacts`), and the run's meta records each build under `kernel_builds`,
where a fleet host that must boot the release finds them.  When the run has ended its
artifacts leave the store (the builds stay in the cache).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from iolab.builds import git
from iolab.builds.builder import BuildRecord
from iolab.builds.kernel import KernelBuilder, short
from iolab.errors import IolabError, LabError, PlanError, RefusedError
from iolab.kernels import artifacts
from iolab.model.sample import RunInfo
from iolab.plan.expand import plan_from_text
from iolab.plan.model import Plan
from iolab.store.store import Store

META = "kernel_repo"  # an ab run's kernel commits: repository, hook, cache, template


def check_unique(builds: Mapping[str, BuildRecord], sha: str, release: str) -> None:
    """Two commits that build one release could not be told apart after boot: refused."""
    for other, rec in builds.items():
        if other != sha and rec.ok and rec.release == release:
            raise RefusedError(
                f"commits {short(other)} and {short(sha)} both build release {release}: "
                "the boot check could not tell them apart (build with "
                "LOCALVERSION=$IOLAB_KERNEL_LOCALVERSION)"
            )


def build(builder: KernelBuilder, sha: str, builds: Mapping[str, BuildRecord]) -> BuildRecord:
    """Commit `sha` built (or taken from the cache), its release unique among `builds`."""
    built = builder.build(sha)
    if not built.ok or built.manifest is None:
        return BuildRecord(False, built.reason or "failed")
    m = built.manifest
    check_unique(builds, sha, m.release)
    return BuildRecord(
        True,
        release=m.release,
        release_without_sha=m.release_without_sha,
        files=tuple(str(p) for p in m.artifacts),
        sha256=built.sha256,
        cached=built.cached,
    )


def publish(store: Store, record: BuildRecord) -> BuildRecord:
    """A good build with its artifacts uploaded to the store (once)."""
    if not record.ok or record.artifacts:
        return record
    uploaded = tuple(
        artifacts.upload(store, Path(p), digest).as_dict()
        for p, digest in zip(record.files, record.sha256, strict=True)
    )
    return replace(record, artifacts=uploaded)


def record(store: Store, run_id: int, builds: Mapping[str, BuildRecord]) -> None:
    store.update_run_meta(run_id, {artifacts.META: {k: b.to_json() for k, b in builds.items()}})


def drop(store: Store, run_id: int) -> None:
    """The run has ended: its artifacts leave the store (the run's meta says how many)."""
    removed = artifacts.remove(store, store.run(run_id).meta)
    store.update_run_meta(run_id, {"kernel_artifacts_removed": removed})


# -- a plan whose variants name kernels by commit (`iolab ab --kernel-repo`) --------------


@dataclass(frozen=True)
class KernelCommits:
    """A plan's kernel commits, built: what an ab run over them records and resumes from."""

    repo: str
    build: tuple[str, ...]
    cache: str
    template_sha256: str  # the plan file as given; the run stores the plan with releases
    commits: dict[str, str]  # as the plan writes it -> full sha
    builds: dict[str, BuildRecord]  # full sha -> build

    def releases(self) -> dict[str, str]:
        return {w: str(self.builds[sha].release) for w, sha in self.commits.items()}

    def to_meta(self) -> dict[str, Any]:
        return {
            META: {
                "repo": self.repo,
                "build": list(self.build),
                "cache": self.cache,
                "template_sha256": self.template_sha256,
                "commits": dict(self.commits),
            }
        }

    @classmethod
    def from_meta(cls, run: RunInfo) -> KernelCommits | None:
        s = run.meta.get(META)
        if s is None:
            return None
        try:
            return cls(
                repo=str(s["repo"]),
                build=tuple(str(a) for a in s["build"]),
                cache=str(s["cache"]),
                template_sha256=str(s["template_sha256"]),
                commits={str(k): str(v) for k, v in dict(s["commits"]).items()},
                builds={
                    str(k): BuildRecord.from_json(v)
                    for k, v in dict(run.meta.get(artifacts.META) or {}).items()
                },
            )
        except (KeyError, TypeError, ValueError):
            raise IolabError(
                f"run {run.id} has incomplete kernel builds; cannot resume it"
            ) from None


def build_plan(
    template: Plan,
    repo: Path,
    argv: tuple[str, ...],
    cache: Path,
    on_build: Callable[[str, BuildRecord], None] = lambda sha, b: None,
) -> tuple[Plan, KernelCommits]:
    """Build every kernel commit `template` names; the plan with each `kernel: {commit: SHA}`
    turned into the release that commit built.  A commit that does not build ends it."""
    written = template.kernel_commits()
    if not written:
        raise PlanError(
            f"{template.path}: --kernel-repo, but no case names kernel: {{commit: SHA}}"
        )
    if not argv:
        raise IolabError("--kernel-repo needs --kernel-build CMD")
    root = repo.resolve()
    commits = {w: git.resolve(root, w, "kernel commit", "--kernel-repo") for w in written}
    builder = KernelBuilder(root, cache, argv)
    builds: dict[str, BuildRecord] = {}
    for sha in dict.fromkeys(commits.values()):
        done = build(builder, sha, builds)
        on_build(sha, done)
        if not done.ok:
            raise LabError(f"kernel commit {short(sha)} does not build: {done.reason}")
        builds[sha] = done
    built = KernelCommits(str(root), argv, str(cache), template.sha256, commits, builds)
    return with_releases(template, built.releases()), built


def with_releases(template: Plan, releases: Mapping[str, str]) -> Plan:
    """`template` with `kernel: {commit: C}` read as `kernel: {release: R}` (C -> R): the plan
    the run stores and the hosts load.  Checked case by case after the rewrite."""
    text = template.text
    for commit, release in releases.items():
        pattern = rf"\bcommit(\s*):(\s*)([\"']?){re.escape(commit)}\3(?![0-9a-f])"
        text = re.sub(pattern, rf"release\1:\2\g<3>{release}\3", text)
    plan = plan_from_text(text, template.path, template.profile)
    wanted = [(c.key, releases.get(c.kernel_commit or "", c.kernel), None) for c in template.cases]
    if [(c.key, c.kernel, c.kernel_commit) for c in plan.cases] != wanted:
        raise PlanError(
            f"{template.path}: could not name the built releases in place of the kernel "
            "commits; write each as `kernel: {commit: SHA}`"
        )
    return plan
