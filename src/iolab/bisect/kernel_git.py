"""`iolab bisect PLAN --kernel-repo DIR --good REV --bad REV --kernel-build CMD --fleet C`.

A kernel bisect over a git range, as ktest.pl and LKP users run one: the same engine and the
same honesty as a commit bisect (found / range / no regression / not known), and the same
fleet path as `bisect --kernels`.  Each commit the engine asks for is built on the controller
by the build hook (`iolab.bisect.kernel_build`: one reused work tree, artifacts and a manifest,
cached per sha), its artifacts go to the store (`iolab.kernels.artifacts`), and the fleet
host that must boot it fetches them and installs them with its `install` hook, boots, and
checks that it runs the release the commit built — otherwise the attempt is `wrong_kernel`
and nothing is stored.

The run's samples have the commit's full sha as their variant; the plan sent to the hosts
names, per built commit, `"<sha>": {kernel: <release>}`, and grows as commits are built (the
stored plan names the two ends).  The run's meta records each build (`kernel_builds`) and the
releases' commits; the report's commits carry their release.  A commit whose build fails is
skipped (`git bisect skip`); an end that cannot be built ends the bisect before a run exists.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from iolab.bisect import git
from iolab.bisect.driver import KIND, META, _engine, choose_kpi, single_case
from iolab.bisect.engine import Bisection
from iolab.bisect.kernel_build import Built, KernelBuilder, short
from iolab.bisect.kernels import kernel_report, measure_blocks
from iolab.errors import EXIT_BISECT_NOT_KNOWN, IolabError, PlanError, RefusedError
from iolab.kernels import artifacts
from iolab.model.bisect import Commit, Measure, Outcome
from iolab.model.metrics import Direction
from iolab.plan.expand import plan_from_text
from iolab.plan.model import Case, Plan
from iolab.report.bisect_model import BisectReport
from iolab.runs import lifecycle
from iolab.store.store import Store


class EndUnbuildable(IolabError):
    """An end of the range cannot be built: nothing to compare (exit 22, not known)."""

    exit_code = EXIT_BISECT_NOT_KNOWN


def require_fleet_store(store: Store) -> None:
    from iolab.fleet import service

    service.require_server_store(store)


def kernel_plan(plan: Plan, releases: dict[str, str]) -> Plan:
    """The plan with one variant per built commit (sha -> release)."""
    if plan.variants or plan.switches_kernels:
        raise PlanError(
            f"{plan.path}: a kernel bisect sets each case's kernel; the plan must name "
            "neither variants nor a kernel"
        )
    single_case(plan)
    lines = [plan.text.rstrip("\n"), "variants:"]
    lines += [f'  "{sha}": {{kernel: {rel}}}' for sha, rel in releases.items()]
    return plan_from_text("\n".join(lines) + "\n", plan.path, plan.profile)


@dataclass
class GitKernelSetup:
    run: lifecycle.OpenRun
    template: Plan
    plan: Plan
    repo: Path
    shas: list[str]  # good, then the candidates
    kpi: str
    direction: Direction
    engine: Bisection
    builder: KernelBuilder
    builds: dict[str, dict[str, Any]] = field(default_factory=dict)  # sha -> record
    next_block: int = 1
    replayed: int = 0
    fleet: str = ""

    def sha(self, index: int) -> str:
        return self.shas[index + 1]

    @property
    def run_id(self) -> int:
        return self.run.run_id

    @property
    def store(self) -> Store:
        return self.run.store

    def releases(self) -> dict[str, str]:
        return {s: str(b["release"]) for s, b in self.builds.items() if b.get("ok")}


def commits(repo: Path, good: str, bad: str) -> tuple[Path, list[str]]:
    root = repo.resolve()
    g = git.resolve(root, good, "--good")
    b = git.resolve(root, bad, "--bad")
    return root, [g, *git.candidates(root, g, b)]


def _record(built: Built) -> dict[str, Any]:
    if not built.ok or built.manifest is None:
        return {"ok": False, "reason": built.reason or "failed"}
    m = built.manifest
    return {
        "ok": True,
        "release": m.release,
        "release_without_sha": m.release_without_sha,
        "files": [str(p) for p in m.artifacts],
        "sha256": list(built.sha256),
    }


def check_unique(builds: dict[str, dict[str, Any]], sha: str, release: str) -> None:
    """Two commits that build one release could not be told apart after boot: refused."""
    for other, rec in builds.items():
        if other != sha and rec.get("ok") and rec.get("release") == release:
            raise RefusedError(
                f"commits {short(other)} and {short(sha)} both build release {release}: "
                "the boot check could not tell them apart (build with "
                "LOCALVERSION=$IOLAB_KERNEL_LOCALVERSION)"
            )


def start(
    store: Store,
    plan: Plan,
    repo: Path,
    shas: list[str],
    builder: KernelBuilder,
    *,
    kpi: str | None,
    alpha: float,
    margin_pct: float,
    max_blocks: int,
    search: str,
    fleet: str = "",
    on_build: Callable[[str, Built], None] | None = None,
) -> GitKernelSetup:
    """Build both ends, then create the run (a refused bisect, or one whose end does not
    build, leaves no run)."""
    kernel_plan(plan, {})  # refuses variants, kernels and several cases before any build
    builds: dict[str, dict[str, Any]] = {}
    for which, sha in (("good", shas[0]), ("bad", shas[-1])):
        built = builder.build(sha)
        if on_build is not None:
            on_build(sha, built)
        if not built.ok or built.manifest is None:
            raise EndUnbuildable(
                f"the {which} end {short(sha)} cannot be built ({built.reason}): not known"
            )
        check_unique(builds, sha, built.manifest.release)
        builds[sha] = _record(built)
    releases = {s: str(b["release"]) for s, b in builds.items()}
    derived = kernel_plan(plan, releases)
    metric, direction = choose_kpi(derived, kpi)
    checked = lifecycle.check(derived, kind=KIND, here=False)
    run = lifecycle.start(store, checked)
    settings = {
        "kernel_repo": str(repo),
        "good": shas[0],
        "bad": shas[-1],
        "commits": shas,
        "kernel_build": list(builder.argv),
        "kpi": metric,
        "direction": direction.value,
        "alpha": alpha,
        "margin_pct": margin_pct,
        "max_blocks": max_blocks,
        "search": search,
        "cache": str(builder.cache),
        "template_sha256": plan.sha256,
        "fleet": fleet,
    }
    store.update_run_meta(run.run_id, {META: settings})
    engine = _engine(len(shas) - 1, direction, alpha, margin_pct, max_blocks, search, metric)
    setup = GitKernelSetup(run, plan, derived, repo, shas, metric, direction, engine, builder)
    for sha, rec in builds.items():
        _publish(setup, sha, rec)
    return setup


def _publish(setup: GitKernelSetup, sha: str, rec: dict[str, Any]) -> None:
    """Record a build in the run's meta; a good one's artifacts go to the store."""
    if rec.get("ok") and "artifacts" not in rec:
        arts = [
            artifacts.upload(setup.store, Path(p), digest).as_dict()
            for p, digest in zip(rec["files"], rec["sha256"], strict=True)
        ]
        rec = {**rec, "artifacts": arts}
    setup.builds[sha] = rec
    setup.store.update_run_meta(setup.run_id, {artifacts.META: setup.builds})


def _settle(setup: GitKernelSetup, on_build: Callable[[str, Built], None] | None) -> Measure | None:
    """The engine's next request, every arm built (unbuildable ones told to the engine)."""
    engine = setup.engine
    while True:
        measure = engine.action()
        if measure is None:
            return None
        failed = None
        for index in measure.arms:
            sha = setup.sha(index)
            if sha not in setup.builds:
                built = setup.builder.build(sha)
                if on_build is not None:
                    on_build(sha, built)
                if built.ok and built.manifest is not None:
                    check_unique(setup.builds, sha, built.manifest.release)
                _publish(setup, sha, _record(built))
            if not setup.builds[sha].get("ok"):
                failed = index
                break
        if failed is None:
            return measure
        engine.unbuildable(failed)


def run(
    setup: GitKernelSetup,
    source: Callable[[lifecycle.OpenRun], Any],
    progress: Callable[[int, Measure, GitKernelSetup], None] | None = None,
    on_build: Callable[[str, Built], None] | None = None,
) -> tuple[Outcome, str]:
    """Build what the engine asks for, measure it on the fleet, until the engine ends."""
    blocks = source(setup.run)

    def arms(measure: Measure) -> list[Case]:
        # the plan grows a variant per built commit: the hosts get it before each block
        setup.plan = kernel_plan(setup.template, setup.releases())
        blocks.use_plan(setup.plan)
        by_variant = {c.variant: c for c in setup.plan.cases}
        return [by_variant[setup.sha(i)] for i in measure.arms]

    return measure_blocks(
        setup.run,
        blocks,
        setup.engine,
        setup.kpi,
        setup.next_block,
        lambda: _settle(setup, on_build),
        arms,
        None if progress is None else (lambda block, m: progress(block, m, setup)),
    )


def _commit(setup: GitKernelSetup, sha: str) -> Commit:
    described = git.describe(setup.repo, sha)
    rec = setup.builds.get(sha, {})
    if rec.get("ok"):
        note = f" [kernel {rec['release']}]"
    elif rec:
        note = " [unbuildable]"
    else:
        note = ""
    return replace(described, subject=described.subject + note)


def conclude(store: Store, setup: GitKernelSetup, outcome: Outcome, status: str) -> BisectReport:
    """The report (the commit bisect's formats; each commit's subject names its release)."""
    commits = {i: _commit(setup, setup.sha(i)) for i in range(-1, len(setup.shas) - 1)}
    builds = {
        sha: ("ok" if rec.get("ok") else f"failed: {rec.get('reason')}")
        for sha, rec in setup.builds.items()
    }
    return kernel_report(
        store, setup, commits, outcome, status, builds=builds, cache=str(setup.builder.cache)
    )


def drop_artifacts(setup: GitKernelSetup) -> None:
    """The bisect has ended: its artifacts leave the store (the builds stay in the cache,
    and the run's meta says what each commit built)."""
    meta = setup.store.run(setup.run_id).meta
    removed = artifacts.remove(setup.store, meta)
    setup.store.update_run_meta(setup.run_id, {"kernel_artifacts_removed": removed})


def resume(store: Store, run_id: int) -> GitKernelSetup:
    """A stored git-range kernel bisect, its finished blocks replayed into a fresh engine
    (`iolab.bisect.kernel_resume`); builds are not redone (the run's meta has them)."""
    from iolab.bisect import kernel_resume

    stored = kernel_resume.reopen(store, run_id, "kernel_build", "a kernel bisect over a git range")
    s, meta = stored.settings, stored.meta
    builds = meta.get(artifacts.META)
    if not isinstance(builds, dict):
        raise IolabError(f"run {run_id} has no recorded kernel builds; cannot resume it")
    try:
        shas = [str(x) for x in s["commits"]]
        direction = Direction(s["direction"])
        builder = KernelBuilder(Path(s["kernel_repo"]), Path(s["cache"]), tuple(s["kernel_build"]))
        engine = _engine(
            len(shas) - 1, direction, float(s["alpha"]), float(s["margin_pct"]),
            int(s["max_blocks"]), str(s["search"]), str(s["kpi"]),
        )  # fmt: skip
        kpi = str(s["kpi"])
    except (KeyError, TypeError, ValueError):
        raise IolabError(f"run {run_id} has incomplete bisect settings; cannot resume it") from None
    releases = {k: str(v["release"]) for k, v in builds.items() if v.get("ok")}
    derived = kernel_plan(stored.template, releases)
    run = lifecycle.OpenRun(store, derived, run_id, stored.seed, resumed=True)
    setup = GitKernelSetup(
        run, stored.template, derived, builder.repo, shas, kpi, direction, engine, builder,
        builds={k: dict(v) for k, v in builds.items()}, fleet=str(s.get("fleet") or ""),
    )  # fmt: skip

    def unbuildable(index: int) -> bool:
        return not setup.builds.get(setup.sha(index), {}).get("ok", True)

    setup.replayed, setup.next_block = kernel_resume.replay(
        store, run_id, kpi, engine, setup.sha, unbuildable
    )
    return setup
