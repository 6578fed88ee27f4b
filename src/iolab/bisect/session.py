"""`iolab bisect` as a service: one session for every mode, the engine's requests turned into
blocks and back.

One run of kind "bisect" holds every sample; a sample's variant is its arm (a commit's full
sha, or a kernel release), so `iolab compare RUN` and selectors such as `variant=<sha>` work,
and a resumed bisect finds its samples.  The run's meta holds the `BisectSettings` (with the
mode) and each arm's build, recorded before the arm is measured, so that replaying the
stored blocks through a fresh engine retraces the same course: `--resume` replays, then goes
on from the last (possibly half-done) block without repeating a stored sample.

Blocks are numbered through the whole bisection; each measures the engine's arms once,
through a `runs.blocks` source: here (`LocalBlocks`, the same `LabSession.run_block` as
`iolab run` and `iolab ab`) or on a fleet (a kernel must be booted).
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Protocol

import numpy as np

from iolab.bisect.arms import ArmSource
from iolab.bisect.engine import Bisection
from iolab.bisect.settings import (
    KIND,
    BisectSettings,
    Mode,
    choose_kpi,
    single_case,
    stored_builds,
)
from iolab.builds import git
from iolab.builds.builder import BuildRecord, default_cache
from iolab.errors import IolabError, LabError
from iolab.lab import runner
from iolab.model.bisect import GradeKind, Measure, Outcome, SearchKind
from iolab.model.metrics import Direction
from iolab.model.sample import Sample
from iolab.plan.model import Plan
from iolab.runs import lifecycle
from iolab.runs.blocks import BlockSource, LocalBlocks
from iolab.stats.sequential import sign_bets_for
from iolab.store.store import Store


class Blocks(BlockSource, Protocol):
    """A block source as the bisect uses it: the plan may grow (a kernel commit built), and
    an error ends the run."""

    def use_plan(self, plan: Plan) -> None: ...

    def abandon(self) -> None: ...


@dataclass(frozen=True)
class Request:
    """What `iolab bisect PLAN ...` asks for: `repo`, `good`, `bad` and `build` for the
    commit modes, `releases` for releases."""

    plan: Plan
    mode: Mode = "commits"
    repo: Path | None = None
    good: str | None = None
    bad: str | None = None
    build: tuple[str, ...] = ()
    releases: tuple[str, ...] = ()
    kpi: str | None = None
    alpha: float = 0.05
    margin_pct: float = 1.0
    max_blocks: int = 300
    search: SearchKind = "probabilistic"
    grade: GradeKind = "classify"
    cache: Path | None = None
    fleet: str | None = None
    regression: int | None = None  # `--regression ID`: the entry its result is recorded on
    here: bool = False  # this box boots the releases itself (`--here`, docs/kernels.md)


@dataclass(frozen=True)
class Checked:
    """A request that passed every check (`check`), before any store is opened."""

    req: Request
    arms: tuple[str, ...]
    kpi: str
    direction: Direction
    plan: lifecycle.Checked  # the plan the run stores (a kernel mode's: one variant per arm)


@dataclass
class Session:
    """A bisect ready to run: its run, settings, arm source, builds, and the engine replayed
    so far."""

    run: lifecycle.OpenRun
    settings: BisectSettings
    source: ArmSource
    engine: Bisection
    builds: dict[str, BuildRecord] = field(default_factory=dict)
    next_block: int = 1
    partial: dict[str, Sample] = field(default_factory=dict)  # stored part of next_block
    replayed: int = 0

    def name(self, index: int) -> str:
        return self.settings.arms[index + 1]

    def label(self, name: str) -> str:
        return name if self.settings.mode == "releases" else name[:12]

    @property
    def run_id(self) -> int:
        return self.run.run_id

    @property
    def seed(self) -> int:
        return self.run.seed

    @property
    def store(self) -> Store:
        return self.run.store

    def plan(self) -> Plan:
        return self.source.plan(self.builds)

    def record(self, name: str, build: BuildRecord) -> None:
        self.builds[name] = self.source.publish(self.store, build)
        recorded = {k: b.to_json() for k, b in self.builds.items()}
        self.store.update_run_meta(self.run_id, {self.settings.builds_key: recorded})


class Progress:
    """What the session tells whoever shows progress (the CLI prints; tests stay silent)."""

    def building(self, session: Session, name: str) -> None: ...

    def built(self, session: Session, name: str, build: BuildRecord) -> None: ...

    def block(self, session: Session, block: int, measure: Measure) -> None: ...

    def step(self, session: Session) -> None: ...


def source_for(settings: BisectSettings, template: Plan) -> ArmSource:
    """The arm source of a mode: the one place the mode is turned into code."""
    if settings.mode == "releases":
        from iolab.bisect.release_arms import ReleaseArms

        return ReleaseArms(template, settings.arms)
    assert settings.repo is not None and settings.cache is not None
    repo, cache = Path(settings.repo), Path(settings.cache)
    if settings.mode == "commits":
        from iolab.bisect.commit_arms import CommitArms

        return CommitArms(template, repo, cache, settings.build)
    from iolab.bisect.kernel_commit_arms import KernelCommitArms
    from iolab.builds.kernel import KernelBuilder

    return KernelCommitArms(template, KernelBuilder(repo, cache, settings.build))


def check(req: Request, *, destroy_data: bool = False) -> Checked:
    """Everything the user can get wrong, before any store is opened (so a refused bisect
    leaves neither a run nor a new store file behind)."""
    from iolab.bisect.kernel_plan import kernel_plan
    from iolab.bisect.release_arms import check_releases

    single_case(req.plan)
    if req.mode == "releases":
        arms = tuple(check_releases(req.releases))
        plan = kernel_plan(req.plan, {r: r for r in arms})
    else:
        kernel = req.mode == "kernel-commits"
        if req.repo is None or req.good is None or req.bad is None or (kernel and not req.build):
            needs = (
                "a kernel bisect needs --kernel-repo, --kernel-build"
                if kernel
                else "bisect needs --repo"
            )
            raise IolabError(f"{needs}, --good and --bad")
        plan = kernel_plan(req.plan, {}) if kernel else req.plan
        option = "--kernel-repo" if kernel else "--repo"
        arms = tuple(git.commit_range(req.repo.resolve(), req.good, req.bad, option))
    if req.mode == "releases" and req.regression is not None:
        raise IolabError(
            "--regression records a culprit commit: it goes with a bisect over a git range "
            "(--kernel-repo or --repo), not releases"
        )
    if req.mode == "commits" and req.fleet is not None:
        raise IolabError("a commit bisect runs here; --fleet is for kernels")
    if req.here and (req.fleet is not None or req.mode != "releases"):
        raise IolabError(
            "--here boots kernel releases on this box (--kernels): not with --fleet, "
            "nor for commits"
        )
    if req.mode != "commits" and req.fleet is None and not req.here:
        raise IolabError(
            "a kernel bisect boots kernels: give --fleet CLASS (hosts running `iolab worker`, "
            "docs/kernels.md), or --here to boot them on this box"
        )
    kpi, direction = choose_kpi(plan, req.kpi)
    here = req.mode == "commits" or req.here
    checked = lifecycle.check(
        plan, kind=KIND, destroy_data=destroy_data, here=here, boots_here=req.here
    )
    return Checked(req, arms, kpi, direction, checked)


def start(store: Store, checked: Checked) -> Session:
    """Create the run of a checked request, with its settings in the run's meta."""
    req = checked.req
    run = lifecycle.start(store, checked.plan)
    cache = (req.cache or default_cache()).resolve()
    settings = BisectSettings(
        mode=req.mode,
        arms=checked.arms,
        kpi=checked.kpi,
        direction=checked.direction,
        alpha=req.alpha,
        margin_pct=req.margin_pct,
        max_blocks=req.max_blocks,
        search=req.search,
        grade=req.grade,
        sign_bets=sign_bets_for(req.max_blocks),
        one_sided=True,
        template_sha256=req.plan.sha256,
        repo=None if req.repo is None else str(req.repo.resolve()),
        build=req.build,
        cache={
            "commits": str(cache / f"run-{run.run_id}"),
            "kernel-commits": str(cache / "kernels"),
        }.get(req.mode),
        fleet=req.fleet,
        regression=req.regression,
    )
    store.update_run_meta(run.run_id, {**settings.to_meta(), settings.builds_key: {}})
    return Session(run, settings, source_for(settings, req.plan), settings.engine())


def resume(
    store: Store, run_id: int, *, destroy_data: bool = False, boots_here: bool = False
) -> Session:
    """A stored bisect of any mode: its plan (unchanged since), settings and builds, its
    finished blocks replayed into a fresh engine; `boots_here`: on this box (`--here`)."""
    info = store.run(run_id)
    settings, builds = None, {}
    if info.kind == KIND:  # another kind: `reopen` says which command continues it
        if info.status == "finished":
            raise IolabError(f"bisect run {run_id} has ended; nothing to resume")
        settings = BisectSettings.from_meta(info)
        builds = stored_builds(info, settings)
    run = lifecycle.reopen(
        store,
        run_id,
        kind=KIND,
        destroy_data=destroy_data,
        here=settings is None or settings.mode == "commits" or boots_here,
        template_sha256=None if settings is None else settings.template_sha256,
        boots_here=boots_here,
    )
    assert settings is not None
    source = source_for(settings, run.plan)
    session = Session(run, settings, source, settings.engine(), builds)
    session.run = replace(run, plan=session.plan())
    _replay(session)
    return session


def open_session(
    store: Store, what: Checked | int, *, destroy_data: bool = False, boots_here: bool = False
) -> Session:
    """A new session of a checked request, or stored run `what` resumed by its mode.  A
    registry entry the request names must exist before anything is built."""
    if isinstance(what, Checked):
        if what.req.regression is not None:
            from iolab.store import registry

            registry.get(store, what.req.regression)
        return start(store, what)
    return resume(store, what, destroy_data=destroy_data, boots_here=boots_here)


def _settle(session: Session, progress: Progress | None) -> Measure | None:
    """The engine's next request, after telling it about unbuildable arms: recorded ones,
    or — when `progress` is given (measuring, not replaying) — ones that fail to build now."""
    engine = session.engine
    while True:
        measure = engine.action()
        if measure is None:
            return None
        failed = None
        for index in measure.arms:
            name = session.name(index)
            if name not in session.builds and session.source.needs_build and progress is not None:
                progress.building(session, name)
                build = session.source.build(name, session.builds)
                progress.built(session, name, build)
                session.record(name, build)
            if name in session.builds and not session.builds[name].ok:
                failed = index
                break
        if failed is None:
            return measure
        engine.unbuildable(failed)


def _feed(session: Session, samples: Sequence[Sample | None]) -> bool:
    """Give the engine one block's KPI values; False when the block has no complete set."""
    kpi = session.settings.kpi
    values = [s.metrics.get(kpi) if s is not None and s.status == "ok" else None for s in samples]
    if any(v is None or not v > 0 for v in values):
        return False
    session.engine.feed(np.array([values], dtype=np.float64))
    return True


def _replay(session: Session) -> None:
    by_block: dict[int, dict[str, Sample]] = {}
    for sample in session.store.samples(
        run_id=session.run_id,
        metrics=[session.settings.kpi],
        with_jobs=False,
        with_histograms=False,
    ):
        if sample.block is not None and sample.variant is not None:
            by_block.setdefault(sample.block, {})[sample.variant] = sample
    last = max(by_block, default=0)
    for block in range(1, last + 1):
        measure = _settle(session, None)
        stored = by_block.get(block, {})
        if measure is None:
            if stored:
                raise IolabError(f"run {session.run_id}: block {block} is past the bisect's end")
            break
        arms = [session.name(i) for i in measure.arms]
        if set(stored) - set(arms):
            raise IolabError(
                f"run {session.run_id}: block {block} does not match the bisect's course "
                "(was the run changed?)"
            )
        if len(stored) < len(arms):
            if block != last:
                continue  # measured without a complete set: the engine was not fed either
            session.partial = stored
            session.next_block = block
            return
        _feed(session, [stored[a] for a in arms])
        session.replayed = block
    session.next_block = last + 1


@contextlib.contextmanager
def _blocks(
    session: Session,
    measure: Measure,
    fleet: Callable[[lifecycle.OpenRun], Blocks] | None,
    destroy_data: bool,
    reporter: runner.Reporter | None,
) -> Iterator[Blocks]:
    """Where the blocks run: the fleet's hosts (or this box booting kernels, `--here`: a
    source held for the blocks' life), or here in one `LabSession` whose plan is bound to
    the first arm (so the lab's preflight checks the real program, `{src}/...`)."""
    plan = session.plan()
    if fleet is not None:
        blocks = fleet(replace(session.run, plan=plan))
        with contextlib.ExitStack() as stack:
            if isinstance(blocks, contextlib.AbstractContextManager):
                stack.enter_context(blocks)
            yield blocks
        return
    first = session.source.cases(plan, [session.name(i) for i in measure.arms])
    done = {(runner.case_key(c), session.next_block) for c in first if c.variant in session.partial}
    lab = runner.LabSession(
        replace(plan, cases=tuple(first[:1])),
        session.store,
        session.run_id,
        session.seed,
        destroy_data,
        reporter or runner.SilentReporter(),
    )
    with lab:
        yield LocalBlocks(lab, session.store, done)


def run(
    session: Session,
    *,
    fleet: Callable[[lifecycle.OpenRun], Blocks] | None = None,
    max_time_s: float | None = None,
    destroy_data: bool = False,
    reporter: runner.Reporter | None = None,
    progress: Progress | None = None,
) -> tuple[Outcome, str]:
    """Measure until the engine ends (or time runs out); (outcome, run status)."""
    progress = progress or Progress()
    if (fleet is None) != (session.settings.mode == "commits"):
        raise IolabError(
            f"bisect run {session.run_id} boots kernels: give --fleet CLASS"
            if fleet is None
            else "a commit bisect runs here; --fleet is for kernels"
        )
    status = "failed"
    try:
        with lifecycle.running(session.run) as ending:
            measure, timed_out = _settle(session, progress), False
            if measure is not None:
                with _blocks(session, measure, fleet, destroy_data, reporter) as blocks:
                    timed_out = _loop(session, blocks, measure, max_time_s, progress)
            # a bisect stopped by --max-time has not ended: `--resume` goes on with it
            ending.status = status = "interrupted" if timed_out else "finished"
    finally:
        session.source.close(session.store, session.run_id, status == "finished")
    return session.engine.outcome, status


def _loop(
    session: Session,
    blocks: Blocks,
    measure: Measure | None,
    max_time_s: float | None,
    progress: Progress,
) -> bool:
    """The one block loop: each block measures the engine's arms once and feeds their KPI;
    three blocks in a row without a value end the run.  True when the time budget ended it."""
    engine = session.engine
    began, failed_blocks = time.monotonic(), 0
    durations: list[float] = []
    steps_seen = len(engine.records)
    plan, block = session.plan(), session.next_block
    try:
        while measure is not None:
            if max_time_s is not None and durations:
                mean = sum(durations) / len(durations)
                if time.monotonic() - began + mean > max_time_s:
                    engine.stop(f"time budget of {max_time_s:g} s spent")
                    return True
            if session.plan() is not plan:
                plan = session.plan()
                blocks.use_plan(plan)  # the hosts get the new arm's variant with the block
            names = [session.name(i) for i in measure.arms]
            started = time.monotonic()
            blocks.start(block, session.source.cases(plan, names))
            _, new = blocks.next_finished()
            durations.append(time.monotonic() - started)
            got: Mapping[str, Sample] = {**session.partial, **{s.variant or "": s for s in new}}
            session.partial = {}
            progress.block(session, block, measure)
            if _feed(session, [got.get(n) for n in names]):
                failed_blocks = 0
            else:
                failed_blocks += 1
                if failed_blocks >= 3:
                    why = next((s.reason for s in new if s.reason), "no KPI value")
                    raise LabError(f"3 blocks in a row without a KPI value: {why}")
            if len(engine.records) != steps_seen:
                steps_seen = len(engine.records)
                progress.step(session)
            block += 1
            measure = _settle(session, progress)
    except BaseException:
        blocks.abandon()
        raise
    return False
