"""Commits built and measured here: the arm source of `iolab bisect PLAN --repo R`.

Each commit is checked out into a work tree of its own and built there by `--build`
(`iolab.builds.builder`); the plan's one case is then bound to that tree (`bind`: `{src}`,
`{rev}`, a job file read from the tree) and measured in this process.  When the bisect ends,
the work trees and the clone are removed (logs stay).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path

from iolab.bisect.settings import single_case
from iolab.builds import git
from iolab.builds.builder import Builder, BuildRecord
from iolab.errors import LabError, RefusedError
from iolab.model.bisect import Commit
from iolab.plan import confine
from iolab.plan.fiojob import apply_overrides
from iolab.plan.model import Case, Plan, WorkloadSpec
from iolab.plan.placeholders import fill_commit, substitute
from iolab.store.store import Store


class CommitArms:
    needs_build = True

    def __init__(
        self, template: Plan, repo: Path, cache: Path, build: tuple[str, ...],
        timeout_s: float = 3600.0,
    ) -> None:  # fmt: skip
        self.template, self.repo = template, repo
        self.builder = Builder(
            repo, cache, build, option="--build", tree_per_commit=True, timeout_s=timeout_s
        )

    def build(self, name: str, builds: Mapping[str, BuildRecord]) -> BuildRecord:
        if self.builder.recall(name) is not None:
            return BuildRecord(True, cached=True)
        ran = self.builder.run(name, {"IOLAB_SRC": str(self.builder.tree(name)), "IOLAB_REV": name})
        if ran.reason is None:
            self.builder.remember(name, {"seconds": ran.seconds})
        return BuildRecord(ran.reason is None, ran.reason)

    def publish(self, store: Store, build: BuildRecord) -> BuildRecord:
        return build

    def plan(self, builds: Mapping[str, BuildRecord]) -> Plan:
        return self.template

    def cases(self, plan: Plan, names: Sequence[str]) -> list[Case]:
        return [bind(single_case(plan), self._tree(sha), sha) for sha in names]

    def _tree(self, sha: str) -> Path:
        if self.builder.recall(sha) is None:  # a resumed run's build: its tree is gone
            done = self.build(sha, {})
            if not done.ok:
                raise LabError(f"commit {sha[:12]} built before but not now: {done.reason}")
        return self.builder.tree(sha)

    def describe(self, name: str, build: BuildRecord | None) -> Commit:
        return git.describe(self.repo, name)

    def close(self, store: Store, run_id: int, finished: bool) -> None:
        if finished:
            self.builder.close()


def bind(case: Case, src: Path, sha: str) -> Case:
    """The case with {src} and {rev} filled, and a job file from the tree read in; its
    variant is the sha (the key every stored sample carries)."""

    def fill(spec: WorkloadSpec | None) -> WorkloadSpec | None:
        if spec is None:
            return None
        text = spec.fio_text
        if spec.fio_file is not None:
            path = Path(fill_commit(spec.fio_file, str(src), sha))
            try:
                text = substitute(path.read_text(), case.vars)
            except OSError as e:
                raise LabError(f"cannot read the job file {path}: {e.strerror}") from None
            # the plan's `fio:` overrides, as plan loading applies them to a job file it reads
            text = apply_overrides(text, dict(spec.fio_overrides))
            problem = confine.fio_problem(text, ())  # read only now: confined only now
            if problem:
                raise RefusedError(f"{path}: refusing: the fio job leaves the sample: {problem}")
        return replace(
            spec,
            fio_file=None,
            fio_overrides=(),
            fio_text=None if text is None else fill_commit(text, str(src), sha),
            argv=tuple(fill_commit(a, str(src), sha) for a in spec.argv),
        )

    workload = fill(case.workload)
    assert workload is not None
    prepare = replace(case.prepare, fill=fill(case.prepare.fill), warmup=fill(case.prepare.warmup))
    return replace(case, variant=sha, key=sha, workload=workload, prepare=prepare)
