"""The block loop of an A/B: run a block with the lab session, feed the decisions, tell the
reporter it was given, stop on verdicts, the block budget or the time limit."""

from __future__ import annotations

import time
from typing import Protocol

from iolab.ab.contrasts import Contrast, all_decided, all_done, feed
from iolab.errors import LabError
from iolab.lab.runner import Reporter, SilentReporter
from iolab.model.sample import Sample
from iolab.runs.blocks import BlockSource
from iolab.stats.types import SequentialState


class BlockReporter(Reporter, Protocol):
    """What the A/B tells whoever shows progress: the lab's sample events and, after every
    block, each decision's new state."""

    def decision(self, block: int, contrast: Contrast, state: SequentialState) -> None: ...


class SilentBlockReporter(SilentReporter):
    """Shows nothing (scripts that only want the result)."""

    def decision(self, block: int, contrast: Contrast, state: SequentialState) -> None:
        pass


def evidence_floor(alpha: float, max_blocks: int) -> int:
    """The fewest blocks after which a metric beside the KPIs can be found to have moved at
    all: the joint sign-flip correction of the paired blocks (iolab.stats.maxt) cannot give
    a p below 2 / 2^n, so at alpha 0.05 that is 6 blocks (5 give 0.0625 at best).  A KPI's
    sequential verdict can come sooner; the A/B then measures up to this floor, within its
    budget, so that its report (and a registry answer) can say what moved with it."""
    from iolab.stats.verdict import min_reachable_n

    return min(max_blocks, min_reachable_n(alpha, paired=True))


def _done(state: SequentialState | None) -> bool:
    return state is not None and state.done


def run_blocks(
    source: BlockSource,
    items: list[Contrast],
    reporter: BlockReporter,
    *,
    first_block: int,
    max_blocks: int,
    max_time_s: float | None,
    min_blocks: int = 1,
) -> str:
    """Run blocks through `source` (here, or up to its width at once on a fleet) until every
    decision is done and at least `min_blocks` blocks are in, the budget of `max_blocks`
    blocks is spent or the next block would overrun `max_time_s`; why it stopped.
    (`min_blocks`: the KPIs may be decided before the other metrics can be judged at all,
    `evidence_floor`.)

    Blocks may end out of order on a fleet; the decisions are fed in block order all the
    same, so a verdict is the one the sequential test reaches on blocks first..k.  Blocks
    still in flight at the verdict are the source's to revoke or store (`stop`)."""
    start = time.monotonic()
    durations: list[float] = []
    measured = 0
    began: dict[int, float] = {}
    ended: dict[int, list[Sample]] = {}
    next_block = expected = first_block
    why = f"budget of {max_blocks} blocks spent"
    while True:
        while next_block <= max_blocks and len(source.in_flight()) < source.width:
            if max_time_s is not None and durations:
                mean = sum(durations) / len(durations)
                if time.monotonic() - start + mean > max_time_s:
                    why = f"time budget of {max_time_s:g} s spent"
                    break
            began[next_block] = time.monotonic()
            source.start(next_block)
            next_block += 1
        if not source.in_flight():
            return why
        block, samples = source.next_finished()
        durations.append(time.monotonic() - began.pop(block, start))
        ended[block] = samples
        while expected in ended:
            samples = ended.pop(expected)
            measured += sum(1 for s in samples if s.status == "ok")
            if not measured and expected >= first_block + 1:
                source.stop(sorted(ended))
                reason = next((s.reason for s in samples if s.reason), "no result")
                raise LabError(f"every sample of blocks {first_block}-{expected} failed: {reason}")
            for contrast in items:
                before = {name: _done(d.state) for name, d in contrast.decisions.items()}
                feed(contrast, samples)
                for name, decision in contrast.decisions.items():
                    state = decision.state
                    if state is not None and state.n_blocks > 0 and not before[name]:
                        reporter.decision(expected, contrast, state)
            if all_done(items) and expected >= min_blocks:
                source.stop(sorted(ended))
                if all_decided(items):
                    return "every KPI has a verdict"
                return f"budget of {expected} blocks spent"
            expected += 1
