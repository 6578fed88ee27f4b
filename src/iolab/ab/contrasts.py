"""The decisions an A/B keeps: one sequential test per KPI of every comparison (the
baseline variant against each other variant, in every matrix cell), fed block by block —
from the lab as blocks finish, or from the store when a run is resumed.  No I/O but the
store read in `replay`; no printing."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

from iolab.model.sample import Sample
from iolab.plan.model import Case, Plan
from iolab.runs.meta import AbSettings
from iolab.stats.sequential import SequentialDecision
from iolab.store.store import Store


@dataclass
class Contrast:
    """One comparison the test decides: `other` against `baseline` in one matrix cell."""

    cell: dict[str, str]
    baseline: Case
    other: Case
    decisions: dict[str, SequentialDecision] = field(default_factory=dict)

    @property
    def title(self) -> str:
        where = " ".join(f"{k}={v}" for k, v in self.cell.items())
        what = f"{self.other.variant} vs {self.baseline.variant}"
        return f"{where}: {what}" if where else what


def contrasts(plan: Plan, settings: AbSettings) -> list[Contrast]:
    """Baseline against every other variant, in every matrix cell, one decision per KPI."""
    baseline = plan.baseline or plan.variants[0]
    out: list[Contrast] = []
    for base in plan.cases_of(baseline):
        for variant in plan.variants:
            if variant == baseline:
                continue
            other = next((c for c in plan.cases_of(variant) if c.cell == base.cell), None)
            if other is None:
                continue
            contrast = Contrast(dict(base.cell), base, other)
            for kpi in plan.kpis:
                contrast.decisions[kpi.metric] = SequentialDecision(
                    kpi.metric,
                    direction=kpi.direction,
                    alpha=settings.alpha,
                    margin_pct=settings.margin_pct,
                    max_blocks=settings.max_blocks,
                    stake_blocks=settings.stake_blocks,
                    sign_bets=settings.sign_bets,
                    one_sided=settings.one_sided,
                )
            out.append(contrast)
    return out


def feed(contrast: Contrast, samples: list[Sample]) -> None:
    """Give each KPI decision this block's (A, B) pair, when both samples measured it."""

    def find(case: Case) -> Sample | None:
        return next(
            (
                s
                for s in samples
                if s.status == "ok" and s.variant == case.variant and s.cell == dict(case.cell)
            ),
            None,
        )

    a, b = find(contrast.baseline), find(contrast.other)
    if a is None or b is None:
        return
    for name, decision in contrast.decisions.items():
        va, vb = a.metrics.get(name), b.metrics.get(name)
        if va is not None and vb is not None and va > 0 and vb > 0:
            decision.update([(va, vb)])


def replay(store: Store, run_id: int, items: list[Contrast], *, whole_blocks: bool = False) -> int:
    """Feed the decisions the stored blocks of a run being resumed, in block order, up to the
    first block missing; returns the last block so fed (failed samples included: their
    block is used up).  Only a fleet leaves a gap (blocks end out of order there): the
    blocks after it are not fed now but adopted by the fleet when the run reaches them, so
    the decisions still see blocks 1, 2, 3, ... in order.  `whole_blocks` (a kernel plan,
    whose blocks store each sample as it ends, across boots): only blocks whose attempt
    finished are fed; a block left half-done is its source's to finish."""
    kpis = sorted({name for c in items for name in c.decisions})
    by_block: dict[int, list[Sample]] = defaultdict(list)
    for sample in store.samples(
        run_id=run_id, metrics=kpis, with_jobs=False, with_histograms=False
    ):
        if sample.block is not None:
            by_block[sample.block].append(sample)
    stored = {block for _, block in store.done_keys(run_id)}
    if whole_blocks:
        from iolab.store import leases

        latest = {a.block: a.state for a in leases.attempts(store, run_id)}
        stored = {b for b in stored if latest.get(b) == "finished"}
    last = 0
    while last + 1 in stored:
        last += 1
        for contrast in items:
            feed(contrast, by_block.get(last, []))
    return last


def all_done(items: list[Contrast]) -> bool:
    """Every decision stopped: with a verdict, or on its block budget."""
    return all(d.state is not None and d.state.done for c in items for d in c.decisions.values())


def all_decided(items: list[Contrast]) -> bool:
    """Every decision has a verdict (regression, improvement or no change)."""
    return all(
        d.state is not None and d.state.verdict != "inconclusive"
        for c in items
        for d in c.decisions.values()
    )
