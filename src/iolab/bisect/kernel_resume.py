"""`iolab bisect --resume ID` of a kernel bisect (over releases or over a git range).

A kernel bisect's stored plan is derived (one variant per kernel), so the plain `reopen` —
which compares the plan file with the stored plan — cannot take it: the plan file is the
template, checked against the SHA-256 recorded at the start.  The engine is then rebuilt by
feeding it the stored blocks in order, as the bisect fed them; the first block that is not
complete is where the bisect goes on (its attempt is adopted by the fleet's block source, or
sent again, and the host skips the samples the store already holds).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from iolab.bisect.driver import KIND, META
from iolab.bisect.engine import Bisection
from iolab.errors import IolabError, PlanError
from iolab.model.sample import Sample
from iolab.plan.model import Plan
from iolab.store.store import Store


@dataclass(frozen=True)
class Stored:
    settings: dict[str, Any]
    meta: dict[str, Any]
    template: Plan
    seed: int


def reopen(store: Store, run_id: int, key: str, what: str) -> Stored:
    """The stored bisect of kind `key` (a settings key only it has), its template plan
    unchanged; the run is then claimed by this process (refused while its owner lives)."""
    from iolab.lab import claim as lab_claim
    from iolab.plan import load_plan
    from iolab.runs.meta import resume_point

    info = store.run(run_id)
    settings = info.meta.get(META)
    if info.kind != KIND or not isinstance(settings, dict) or key not in settings:
        raise IolabError(f"run {run_id} is not {what}")
    if info.status == "finished":
        raise IolabError(f"bisect run {run_id} has ended; nothing to resume")
    seed, profile = resume_point(info)
    assert info.plan_path is not None
    try:
        template = load_plan(info.plan_path, profile)
    except OSError:
        raise PlanError(f"{info.plan_path}: the plan of run {run_id} is gone") from None
    if template.sha256 != settings.get("template_sha256"):
        raise PlanError(f"{info.plan_path} changed since run {run_id} started; cannot resume it")
    lab_claim.claim(store, run_id)
    return Stored(settings, dict(info.meta), template, seed)


def replay(
    store: Store,
    run_id: int,
    kpi: str,
    engine: Bisection,
    name: Callable[[int], str],
    unbuildable: Callable[[int], bool] = lambda index: False,
) -> tuple[int, int]:
    """Feed the stored, complete blocks to `engine`; (last block replayed, next block)."""
    by_block: dict[int, dict[str, Sample]] = {}
    for sample in store.samples(
        run_id=run_id, metrics=[kpi], with_jobs=False, with_histograms=False
    ):
        if sample.block is not None and sample.variant is not None:
            by_block.setdefault(sample.block, {})[sample.variant] = sample
    last = max(by_block, default=0)
    replayed = 0
    for block in range(1, last + 1):
        measure = engine.action()
        while measure is not None:
            bad = [i for i in measure.arms if unbuildable(i)]
            if not bad:
                break
            engine.unbuildable(bad[0])
            measure = engine.action()
        stored = by_block.get(block, {})
        if measure is None:
            if stored:
                raise IolabError(f"run {run_id}: block {block} is past the bisect's end")
            break
        arms = [name(i) for i in measure.arms]
        if set(stored) - set(arms):
            raise IolabError(
                f"run {run_id}: block {block} does not match the bisect's course "
                "(was the run changed?)"
            )
        if len(stored) < len(arms):
            return replayed, block  # half done: its attempt is adopted or redone
        values = [stored[a].metrics.get(kpi) if stored[a].status == "ok" else None for a in arms]
        if all(v is not None and v > 0 for v in values):
            engine.feed(np.array([values], dtype=np.float64))
        replayed = block
    return replayed, last + 1
