"""Kernel releases: the arm source of `iolab bisect PLAN --kernels R1,…,Rn --fleet CLASS`.

The same engine as a commit bisect over an ordered list of kernel releases instead of
commits: R1 is the good end, Rn the bad one.  There is nothing to build; each arm is the
plan's one case on that kernel (`kernel_plan`), measured on a fleet (a kernel must be
booted, docs/kernels.md), one boot per sample.  The run stores the plan with one variant per
release, so its samples are `variant=R`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from iolab.bisect.arms import by_variant
from iolab.bisect.kernel_plan import kernel_plan
from iolab.builds.builder import BuildRecord
from iolab.errors import IolabError
from iolab.model.bisect import Commit
from iolab.plan.model import Case, Plan
from iolab.plan.sections import _RELEASE
from iolab.store.store import Store

MAX_RELEASES = 200


def read_list(path: Path) -> list[str]:
    """`--kernels-from FILE`: one release a line, oldest first; `#` comments, blank lines."""
    try:
        text = path.read_text()
    except OSError as exc:
        raise IolabError(f"--kernels-from {path}: {exc.strerror}") from None
    return [ln.split("#", 1)[0].strip() for ln in text.splitlines() if ln.split("#", 1)[0].strip()]


def plan_and_releases(
    args: tuple[str, ...], kernels: tuple[str, ...] | None, listed: str | None
) -> tuple[str | None, list[str]]:
    """`iolab bisect`'s words: PLAN, and the releases: `--kernels R1,R2`, the older
    `--kernels R1 R2` (the words after it that are not the plan file), or `--kernels-from
    FILE`."""
    plans = [a for a in args if Path(a).is_file() or a.endswith((".yaml", ".yml"))] or [*args[:1]]
    if len(plans) > 1 or (len(args) > 1 and kernels is None):
        raise IolabError(f"unexpected argument {args[-1]!r} (one PLAN)")
    words = [*(kernels or ()), *(a for a in args if a not in plans)]
    if listed is not None:
        if words:
            raise IolabError("give --kernels or --kernels-from, not both")
        words = read_list(Path(listed))
    return plans[0] if plans else None, words


def check_releases(releases: Sequence[str]) -> list[str]:
    out = list(releases)
    if len(out) < 2:
        raise IolabError("--kernels needs at least two releases: the good one first, the bad last")
    if len(out) > MAX_RELEASES:
        raise IolabError(f"--kernels: at most {MAX_RELEASES} releases")
    for r in out:
        if not _RELEASE.fullmatch(r):
            raise IolabError(f"--kernels: {r!r} is not a kernel release like 6.1.0-47-cloud-amd64")
    if len(set(out)) != len(out):
        raise IolabError("--kernels: a release is listed twice")
    return out


class ReleaseArms:
    needs_build = False

    def __init__(self, template: Plan, releases: Sequence[str]) -> None:
        self.derived = kernel_plan(template, {r: r for r in check_releases(releases)})

    def build(self, name: str, builds: Mapping[str, BuildRecord]) -> BuildRecord:
        return BuildRecord(True)

    def publish(self, store: Store, build: BuildRecord) -> BuildRecord:
        return build

    def plan(self, builds: Mapping[str, BuildRecord]) -> Plan:
        return self.derived

    def cases(self, plan: Plan, names: Sequence[str]) -> list[Case]:
        return by_variant(plan, names)

    def describe(self, name: str, build: BuildRecord | None) -> Commit:
        return Commit(name, f"kernel {name}", "", "")

    def close(self, store: Store, run_id: int, finished: bool) -> None:
        pass
