"""`iolab bisect` as a service: the engine's requests turned into lab blocks and back.

One run of kind "bisect" holds every sample.  A sample's variant is the full sha of the
commit it measured (so `iolab compare RUN` and selectors such as `variant=<sha>` work, and
a resumed bisect finds its samples); its cell is the plan's.  Blocks are numbered through
the whole bisection; each block runs the engine's arms once, in the order
`runner.block_order(seed, block, arms)`, through the same `LabSession.run_block` as
`iolab run` and `iolab ab`.  Build outcomes are recorded in the run's meta before the
commit is measured, so replaying the stored blocks through a fresh engine retraces the
same course: `--resume` replays, then continues the last (possibly half-done) block
without repeating a stored sample.
"""

from __future__ import annotations

import socket
import time
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np

from iolab.bisect import git
from iolab.bisect.engine import Bisection, Settings
from iolab.bisect.target import CommitTarget, LocalBuild, Prepared
from iolab.errors import IolabError, LabError, PlanError, RefusedError
from iolab.lab import runner
from iolab.model.bisect import Measure, Outcome
from iolab.model.metrics import Direction, metric_info
from iolab.model.sample import Sample
from iolab.plan import confine
from iolab.plan.fiojob import apply_overrides
from iolab.plan.model import Case, Plan, WorkloadSpec
from iolab.plan.placeholders import fill_commit, substitute
from iolab.runs import lifecycle
from iolab.runs.blocks import run_leased
from iolab.store.store import Store

KIND = "bisect"
META = "bisect"


@dataclass(frozen=True)
class Request:
    """What `iolab bisect PLAN ...` asks for."""

    plan: Plan
    repo: Path
    good: str
    bad: str
    build: tuple[str, ...] = ()
    kpi: str | None = None
    alpha: float = 0.05
    margin_pct: float = 1.0
    max_blocks: int = 300
    cache: Path | None = None
    search: str = "probabilistic"


@dataclass
class Setup:
    """A bisect ready to run: its run, plan, commits and the engine replayed so far."""

    run: lifecycle.OpenRun
    plan: Plan
    case: Case
    repo: Path
    shas: list[str]  # good, then the candidates (index i -> shas[i + 1])
    kpi: str
    direction: Direction
    build: tuple[str, ...]
    cache: Path
    engine: Bisection
    builds: dict[str, str] = field(default_factory=dict)  # sha -> "ok" | "failed: why"
    next_block: int = 1
    partial: dict[str, Sample] = field(default_factory=dict)  # stored part of next_block
    replayed: int = 0

    def sha(self, index: int) -> str:
        return self.shas[index + 1]

    @property
    def run_id(self) -> int:
        return self.run.run_id

    @property
    def seed(self) -> int:
        return self.run.seed

    @property
    def store(self) -> Store:
        return self.run.store


def default_cache() -> Path:
    import os

    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "iolab" / "bisect"


def single_case(plan: Plan) -> Case:
    if len(plan.cases) != 1:
        raise PlanError(
            f"{plan.path}: `iolab bisect` measures one case per commit; this plan has "
            f"{len(plan.cases)} (remove the matrix and keep at most one variant)"
        )
    return plan.cases[0]


def choose_kpi(plan: Plan, kpi: str | None) -> tuple[str, Direction]:
    if kpi is None:
        if not plan.kpis:
            raise PlanError(f"{plan.path}: give --kpi METRIC or kpis: in the plan")
        return plan.kpis[0].metric, plan.kpis[0].direction
    for k in plan.kpis:
        if k.metric == kpi:
            return k.metric, k.direction
    direction = metric_info(kpi).direction
    if direction is Direction.NEUTRAL:
        raise IolabError(f"--kpi {kpi!r}: no known direction (list it under kpis: in the plan)")
    return kpi, direction


@dataclass(frozen=True)
class Checked:
    """A bisect request that passed every check (`check`): the one case, the KPI, the
    commits, and the plan's preflight."""

    req: Request
    case: Case
    kpi: str
    direction: Direction
    repo: Path
    good: str
    bad: str
    shas: list[str]  # good, then the candidates
    plan: lifecycle.Checked


def check(req: Request, *, destroy_data: bool = False) -> Checked:
    """Everything the user can get wrong, before any store is opened (so a refused bisect
    leaves neither a run nor a new store file behind)."""
    case = single_case(req.plan)
    kpi, direction = choose_kpi(req.plan, req.kpi)
    repo = req.repo.resolve()
    good = git.resolve(repo, req.good, "--good")
    bad = git.resolve(repo, req.bad, "--bad")
    shas = [good, *git.candidates(repo, good, bad)]
    plan = lifecycle.check(req.plan, kind=KIND, destroy_data=destroy_data)
    return Checked(req, case, kpi, direction, repo, good, bad, shas, plan)


def start(store: Store, checked: Checked) -> Setup:
    """Create the run of a checked request, with its settings in the run's meta."""
    req = checked.req
    run = lifecycle.start(store, checked.plan)
    cache = (req.cache or default_cache()).resolve() / f"run-{run.run_id}"
    settings = {
        "repo": str(checked.repo),
        "good": checked.good,
        "bad": checked.bad,
        "commits": checked.shas,
        "build": list(req.build),
        "kpi": checked.kpi,
        "direction": checked.direction.value,
        "alpha": req.alpha,
        "margin_pct": req.margin_pct,
        "max_blocks": req.max_blocks,
        "search": req.search,
        "cache": str(cache),
    }
    store.update_run_meta(run.run_id, {META: settings, "bisect_builds": {}})
    engine = _engine(
        len(checked.shas) - 1,
        checked.direction,
        req.alpha,
        req.margin_pct,
        req.max_blocks,
        req.search,
        checked.kpi,
    )
    return Setup(
        run,
        req.plan,
        checked.case,
        checked.repo,
        list(checked.shas),
        checked.kpi,
        checked.direction,
        req.build,
        cache,
        engine,
    )


def _engine(
    n: int,
    direction: Direction,
    alpha: float,
    margin: float,
    max_blocks: int,
    search: str,
    kpi: str,
) -> Bisection:
    return Bisection(
        Settings(
            n=n,
            direction=direction,
            alpha=alpha,
            margin_pct=margin,
            max_blocks=max_blocks,
            search="binary" if search == "binary" else "probabilistic",
        ),
        kpi=kpi,
    )


def resume(store: Store, run_id: int, *, destroy_data: bool = False) -> Setup:
    """Rebuild a stored bisect: its plan (unchanged since), settings, builds and blocks,
    replayed into the engine."""
    run = lifecycle.reopen(store, run_id, kind=KIND, destroy_data=destroy_data)
    plan = run.plan
    meta = store.run(run_id).meta
    s = meta.get(META)
    if not isinstance(s, dict):
        raise IolabError(f"run {run_id} has no recorded bisect settings; cannot resume it")
    try:
        direction = Direction(s["direction"])
        setup = Setup(
            run=run,
            plan=plan,
            case=single_case(plan),
            repo=Path(s["repo"]),
            shas=[str(x) for x in s["commits"]],
            kpi=str(s["kpi"]),
            direction=direction,
            build=tuple(s["build"]),
            cache=Path(s["cache"]),
            engine=_engine(
                len(s["commits"]) - 1,
                direction,
                float(s["alpha"]),
                float(s["margin_pct"]),
                int(s["max_blocks"]),
                str(s.get("search", "probabilistic")),
                str(s["kpi"]),
            ),
            builds=dict(meta.get("bisect_builds") or {}),
        )
    except (KeyError, TypeError, ValueError):
        raise IolabError(f"run {run_id} has incomplete bisect settings; cannot resume it") from None
    _replay(setup)
    return setup


def _settle_builds(setup: Setup, build: Callable[[str], bool] | None) -> Measure | None:
    """The engine's next request, after telling it about unbuildable commits (recorded ones,
    or — when `build` is given — ones that fail to build now)."""
    engine = setup.engine
    while True:
        measure = engine.action()
        if measure is None:
            return None
        failed = None
        for index in measure.arms:
            sha = setup.sha(index)
            state = setup.builds.get(sha)
            if state is None and build is not None:
                state = "ok" if build(sha) else "failed"
            if state is None:
                return measure  # replay: not built yet
            if state.startswith("failed"):
                failed = index
                break
        if failed is None:
            return measure
        engine.unbuildable(failed)


def _replay(setup: Setup) -> None:
    by_block: dict[int, dict[str, Sample]] = defaultdict(dict)
    for sample in setup.store.samples(
        run_id=setup.run_id, metrics=[setup.kpi], with_jobs=False, with_histograms=False
    ):
        if sample.block is not None and sample.variant is not None:
            by_block[sample.block][sample.variant] = sample
    last = max(by_block, default=0)
    for block in range(1, last + 1):
        measure = _settle_builds(setup, None)
        stored = by_block.get(block, {})
        if measure is None:
            if stored:
                raise IolabError(f"run {setup.run_id}: block {block} is past the bisect's end")
            break
        arms = [setup.sha(i) for i in measure.arms]
        if set(stored) - set(arms):
            raise IolabError(
                f"run {setup.run_id}: block {block} does not match the bisect's course "
                "(was the run changed?)"
            )
        if len(stored) < len(arms):
            if block != last:
                continue  # a block that never finished (cannot happen after the last one)
            setup.partial = stored
            setup.next_block = block
            return
        _feed(setup, measure, [stored[sha] for sha in arms])
        setup.replayed = block
    setup.next_block = last + 1


def _feed(setup: Setup, measure: Measure, samples: list[Sample]) -> bool:
    """Give the engine one block's KPI values; False when the block has no complete set."""
    values = [s.metrics.get(setup.kpi) if s.status == "ok" else None for s in samples]
    if any(v is None or not v > 0 for v in values):
        return False
    setup.engine.feed(np.array([values], dtype=np.float64))
    return True


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


class Progress:
    """What the driver tells whoever shows progress (the CLI prints; tests stay silent)."""

    def building(self, sha: str) -> None: ...

    def built(self, done: Prepared) -> None: ...

    def block(self, block: int, measure: Measure, setup: Setup) -> None: ...

    def step(self, setup: Setup) -> None: ...


def run(
    setup: Setup,
    *,
    max_time_s: float | None = None,
    destroy_data: bool = False,
    reporter: runner.Reporter | None = None,
    progress: Progress | None = None,
    target: CommitTarget | None = None,
) -> tuple[Outcome, str]:
    """Measure until the engine ends (or time runs out); (outcome, run status)."""
    store = setup.store
    progress = progress or Progress()
    target = target or LocalBuild(setup.repo, setup.cache, setup.build)
    engine = setup.engine
    trees: dict[str, Path] = {}

    def build(sha: str) -> bool:
        progress.building(sha)
        done = target.prepare(sha)
        progress.built(done)
        setup.builds[sha] = "ok" if done.ok else f"failed: {done.reason}"
        store.update_run_meta(setup.run_id, {"bisect_builds": setup.builds})
        if done.ok and done.src is not None:
            trees[sha] = done.src
        return done.ok

    def tree(sha: str) -> Path:
        if sha not in trees:
            done = target.prepare(sha)  # a resumed run's build: cached or redone
            if not done.ok or done.src is None:
                raise LabError(f"commit {sha[:12]} built before but not now: {done.reason}")
            trees[sha] = done.src
        return trees[sha]

    start_time = time.monotonic()
    durations: list[float] = []
    failed_blocks = 0
    steps_seen = len(engine.records)
    status = "failed"
    try:
        with lifecycle.running(setup.run) as ending:
            measure = _settle_builds(setup, build)
            if measure is not None:
                arm = setup.sha(measure.arms[0])
                # the session's plan is bound to a built commit, so that the lab's preflight
                # checks the real program ({src}/...) rather than the template
                session = runner.LabSession(
                    replace(setup.plan, cases=(bind(setup.case, tree(arm), arm),)),
                    store,
                    setup.run_id,
                    setup.seed,
                    destroy_data,
                    reporter or runner.SilentReporter(),
                )
                with session:
                    block = setup.next_block
                    while measure is not None:
                        if max_time_s is not None and durations:
                            mean = sum(durations) / len(durations)
                            if time.monotonic() - start_time + mean > max_time_s:
                                engine.stop(f"time budget of {max_time_s:g} s spent")
                                break
                        arms = [setup.sha(i) for i in measure.arms]
                        cases = [bind(setup.case, tree(sha), sha) for sha in arms]
                        done = {
                            (runner.case_key(c), block) for c in cases if c.variant in setup.partial
                        }
                        began = time.monotonic()
                        new = run_leased(session, store, block, done, cases, socket.gethostname())
                        durations.append(time.monotonic() - began)
                        by_sha = {**setup.partial, **{s.variant or "": s for s in new}}
                        setup.partial = {}
                        progress.block(block, measure, setup)
                        if _feed(setup, measure, [by_sha[sha] for sha in arms]):
                            failed_blocks = 0
                        else:
                            failed_blocks += 1
                            if failed_blocks >= 3:
                                why = next((s.reason for s in new if s.reason), "no KPI value")
                                raise LabError(f"3 blocks in a row without a KPI value: {why}")
                        if len(engine.records) != steps_seen:
                            steps_seen = len(engine.records)
                            progress.step(setup)
                        block += 1
                        measure = _settle_builds(setup, build)
            ending.status = status = "finished"
    finally:
        target.close(remove=status == "finished")
    return engine.outcome, status
