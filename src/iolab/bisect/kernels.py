"""`iolab bisect PLAN --kernels R1 … Rn`: which kernel update changed the KPI.

The same engine as a commit bisect (`iolab.bisect.engine`: the ends first, then candidates
against both ends in randomized blocks, then the culprit against its predecessor), over an
ordered list of kernel releases instead of commits: R1 is the good end, Rn the bad one.
There is nothing to build; each arm of a block is the plan's one case on that kernel,
measured on a fleet (a kernel must be booted, docs/kernels.md), one boot per sample.

The run stores the plan with one variant per release (`variants: {R: {kernel: R}}`), so
its samples are `variant=R` and the fleet's workers load it as any kernel plan.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from iolab.analysis.build import Options, pair_report
from iolab.analysis.select import Selector
from iolab.bisect.driver import KIND, META, _engine, choose_kpi, single_case
from iolab.bisect.engine import Bisection
from iolab.errors import IolabError, LabError, PlanError
from iolab.model.bisect import GOOD, Commit, Measure, Outcome
from iolab.model.metrics import Direction
from iolab.plan.expand import plan_from_text
from iolab.plan.model import Case, Plan
from iolab.plan.sections import _RELEASE
from iolab.report import bisect_json
from iolab.report.bisect_model import BisectReport
from iolab.runs import lifecycle
from iolab.store.store import Store

if TYPE_CHECKING:
    from iolab.bisect.kernel_git import GitKernelSetup

MAX_KERNELS = 200


def read_list(path: Path) -> list[str]:
    """`--kernels-from FILE`: one release a line, oldest first; `#` comments, blank lines."""
    try:
        text = path.read_text()
    except OSError as exc:
        raise IolabError(f"--kernels-from {path}: {exc.strerror}") from None
    return [ln.split("#", 1)[0].strip() for ln in text.splitlines() if ln.split("#", 1)[0].strip()]


def check_kernels(releases: Sequence[str]) -> list[str]:
    out = list(releases)
    if len(out) < 2:
        raise IolabError("--kernels needs at least two releases: the good one first, the bad last")
    if len(out) > MAX_KERNELS:
        raise IolabError(f"--kernels: at most {MAX_KERNELS} releases")
    for r in out:
        if not _RELEASE.fullmatch(r):
            raise IolabError(f"--kernels: {r!r} is not a kernel release like 6.1.0-47-cloud-amd64")
    if len(set(out)) != len(out):
        raise IolabError("--kernels: a release is listed twice")
    return out


def kernel_plan(plan: Plan, releases: Sequence[str]) -> Plan:
    """The plan with one variant per release: what the run stores and the workers load."""
    if plan.variants or plan.switches_kernels:
        raise PlanError(
            f"{plan.path}: `bisect --kernels` sets each case's kernel; the plan must name "
            "neither variants nor a kernel"
        )
    single_case(plan)
    lines = [plan.text.rstrip("\n"), "variants:"]
    lines += [f"  {r}: {{kernel: {r}}}" for r in releases]
    return plan_from_text("\n".join(lines) + "\n", plan.path, plan.profile)


@dataclass
class KernelSetup:
    run: lifecycle.OpenRun
    plan: Plan
    releases: list[str]
    kpi: str
    direction: Direction
    engine: Bisection
    next_block: int = 1
    replayed: int = 0
    fleet: str = ""

    def release(self, index: int) -> str:
        return self.releases[index + 1]

    @property
    def run_id(self) -> int:
        return self.run.run_id


def start(
    store: Store,
    plan: Plan,
    releases: Sequence[str],
    *,
    kpi: str | None,
    alpha: float,
    margin_pct: float,
    max_blocks: int,
    search: str,
    fleet: str = "",
) -> KernelSetup:
    """Check everything, then create the run (a refused bisect leaves no run)."""
    chosen = check_kernels(releases)
    derived = kernel_plan(plan, chosen)
    metric, direction = choose_kpi(derived, kpi)
    checked = lifecycle.check(derived, kind=KIND, here=False)
    run = lifecycle.start(store, checked)
    settings = {
        "kernels": chosen,
        "kpi": metric,
        "direction": direction.value,
        "alpha": alpha,
        "margin_pct": margin_pct,
        "max_blocks": max_blocks,
        "search": search,
        "template_sha256": plan.sha256,
        "fleet": fleet,
    }
    store.update_run_meta(run.run_id, {META: settings})
    engine = _engine(len(chosen) - 1, direction, alpha, margin_pct, max_blocks, search, metric)
    return KernelSetup(run, derived, chosen, metric, direction, engine, fleet=fleet)


def resume(store: Store, run_id: int) -> KernelSetup:
    """A stored `bisect --kernels`, its finished blocks replayed into a fresh engine
    (`iolab.bisect.kernel_resume`)."""
    from iolab.bisect import kernel_resume

    stored = kernel_resume.reopen(store, run_id, "kernels", "a kernel bisect over releases")
    s = stored.settings
    try:
        releases = check_kernels([str(r) for r in s["kernels"]])
        direction = Direction(s["direction"])
        kpi = str(s["kpi"])
        engine = _engine(
            len(releases) - 1, direction, float(s["alpha"]), float(s["margin_pct"]),
            int(s["max_blocks"]), str(s["search"]), kpi,
        )  # fmt: skip
    except (KeyError, TypeError, ValueError):
        raise IolabError(f"run {run_id} has incomplete bisect settings; cannot resume it") from None
    derived = kernel_plan(stored.template, releases)
    run = lifecycle.OpenRun(store, derived, run_id, stored.seed, resumed=True)
    setup = KernelSetup(
        run, derived, releases, kpi, direction, engine, fleet=str(s.get("fleet") or "")
    )
    setup.replayed, setup.next_block = kernel_resume.replay(
        store, run_id, kpi, engine, setup.release
    )
    return setup


def run(
    setup: KernelSetup,
    source: Callable[[lifecycle.OpenRun], Any],
    progress: Callable[[int, Measure, KernelSetup], None] | None = None,
) -> tuple[Outcome, str]:
    """Measure block after block on the fleet until the engine ends."""
    by_variant = {c.variant: c for c in setup.plan.cases}

    def arms(measure: Measure) -> list[Case]:
        return [by_variant[setup.release(i)] for i in measure.arms]

    return measure_blocks(
        setup.run,
        source(setup.run),
        setup.engine,
        setup.kpi,
        setup.next_block,
        setup.engine.action,
        arms,
        None if progress is None else (lambda block, m: progress(block, m, setup)),
    )


def measure_blocks(
    run: lifecycle.OpenRun,
    blocks: Any,
    engine: Bisection,
    kpi: str,
    first_block: int,
    next_measure: Callable[[], Measure | None],
    arms: Callable[[Measure], list[Case]],
    progress: Callable[[int, Measure], None] | None,
) -> tuple[Outcome, str]:
    """The loop both kernel bisects share: each block measures the engine's arms (one case
    per kernel) on the fleet and feeds their KPI; three blocks in a row without a value end
    the run.  `next_measure` may build before it answers (the git-range bisect)."""
    status = "failed"
    failed_blocks = 0
    with lifecycle.running(run) as ending:
        try:
            block = first_block
            measure = next_measure()
            while measure is not None:
                cases = arms(measure)
                blocks.start(block, cases)
                _, samples = blocks.next_finished()
                if progress is not None:
                    progress(block, measure)
                got = {s.variant: s for s in samples}
                values = [
                    got[c.variant].metrics.get(kpi)
                    if c.variant in got and got[c.variant].status == "ok"
                    else None
                    for c in cases
                ]
                if all(v is not None and v > 0 for v in values):
                    engine.feed(np.array([values], dtype=np.float64))
                    failed_blocks = 0
                else:
                    failed_blocks += 1
                    if failed_blocks >= 3:
                        raise LabError("3 blocks in a row without a KPI value")
                block += 1
                measure = next_measure()
        except BaseException:
            blocks.abandon()
            raise
        ending.status = status = "finished"
    return engine.outcome, status


def pair_evidence(store: Store, run_id: int, a: str, b: str, engine: Bisection) -> Any:
    """The culprit's pair report (both kernel bisects), or None when it cannot be made."""
    try:
        return pair_report(
            store,
            Selector(f"run:{run_id}/variant={a}", run_id=run_id, variant=a),
            Selector(f"run:{run_id}/variant={b}", run_id=run_id, variant=b),
            Options(alpha=engine.s.alpha, margin_pct=engine.s.margin_pct),
        )
    except IolabError:
        return None


def conclude(store: Store, setup: KernelSetup, outcome: Outcome, status: str) -> BisectReport:
    """The report (the same formats as a commit bisect; each "commit" is a release)."""
    commits = {
        i: Commit(setup.release(i), f"kernel {setup.release(i)}", "", "")
        for i in range(-1, len(setup.releases) - 1)
    }
    return kernel_report(store, setup, commits, outcome, status)


def kernel_report(
    store: Store,
    setup: KernelSetup | GitKernelSetup,
    commits: dict[int, Commit],
    outcome: Outcome,
    status: str,
    *,
    builds: dict[str, str] | None = None,
    cache: str = "",
) -> BisectReport:
    """Either kernel bisect's report, stored in its run's meta: `commits` by engine index
    (GOOD, then the candidates), each one's `sha` the variant its samples carry (a release,
    or a commit's sha)."""
    n = len(commits) - 1
    engine = setup.engine.s
    evidence = None
    if outcome.verify is not None:
        a, b = commits[outcome.verify.a].sha, commits[outcome.verify.b].sha
        evidence = pair_evidence(store, setup.run_id, a, b, setup.engine)
    report = BisectReport(
        run_id=setup.run_id,
        status=status,
        kpi=setup.kpi,
        direction=setup.direction.value,
        alpha=engine.alpha,
        margin_pct=engine.margin_pct,
        good=commits[GOOD],
        bad=commits[n - 1],
        candidates=n,
        outcome=replace(outcome),
        commits=commits,
        builds=builds or {},
        evidence=evidence,
        cache=cache,
    )
    store.update_run_meta(setup.run_id, {"bisect_result": bisect_json.to_json(report)})
    return report
