"""The block loop of an A/B: run a block with the lab session, feed the decisions, tell the
reporter it was given, stop on verdicts, the block budget or the time limit."""

from __future__ import annotations

import time
from typing import Protocol

from iolab.ab.contrasts import Contrast, all_decided, all_done, feed
from iolab.errors import LabError
from iolab.lab.runner import LabSession, Reporter, SilentReporter
from iolab.stats.types import SequentialState


class BlockReporter(Reporter, Protocol):
    """What the A/B tells whoever shows progress: the lab's sample events and, after every
    block, each decision's new state."""

    def decision(self, block: int, contrast: Contrast, state: SequentialState) -> None: ...


class SilentBlockReporter(SilentReporter):
    """Shows nothing (scripts that only want the result)."""

    def decision(self, block: int, contrast: Contrast, state: SequentialState) -> None:
        pass


def run_blocks(
    session: LabSession,
    items: list[Contrast],
    reporter: BlockReporter,
    *,
    first_block: int,
    max_blocks: int,
    max_time_s: float | None,
) -> str:
    """Run blocks in an entered `session` until every decision is done, the budget of
    `max_blocks` blocks is spent or the next block would overrun `max_time_s`; why it
    stopped."""
    start = time.monotonic()
    durations: list[float] = []
    measured = 0
    why = f"budget of {max_blocks} blocks spent"
    for block in range(first_block, max_blocks + 1):
        if max_time_s is not None and durations:
            expected = sum(durations) / len(durations)
            if time.monotonic() - start + expected > max_time_s:
                return f"time budget of {max_time_s:g} s spent"
        began = time.monotonic()
        samples = session.run_block(block)
        durations.append(time.monotonic() - began)
        measured += sum(1 for s in samples if s.status == "ok")
        if not measured and block >= first_block + 1:
            reason = next((s.reason for s in samples if s.reason), "no result")
            raise LabError(f"every sample of blocks {first_block}-{block} failed: {reason}")
        for contrast in items:
            feed(contrast, samples)
            for decision in contrast.decisions.values():
                state = decision.state
                if state is not None and state.n_blocks > 0:
                    reporter.decision(block, contrast, state)
        if all_done(items):
            if all_decided(items):
                return "every KPI has a verdict"
            return f"budget of {block} blocks spent"
    return why
