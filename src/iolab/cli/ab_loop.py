"""The block loop of `iolab ab`: run a block with the lab runner, feed the decisions,
print the estimate and interval as they go, stop on verdicts, block budget or time."""

from __future__ import annotations

import math
import time

from rich.console import Console

from iolab.cli.ab_contrasts import Contrast, all_decided, all_done, feed
from iolab.errors import LabError
from iolab.lab import runner
from iolab.model.sample import Sample
from iolab.plan.model import Case, Plan
from iolab.report.fmt import ci, pct
from iolab.stats import SequentialState
from iolab.stats.sequential import INTERVAL_EDGE_LOG
from iolab.store.store import Store


class AbReporter:
    """Shows which sample runs (a transient status line) and failures; the runner calls it."""

    def __init__(self, console: Console, quiet: bool) -> None:
        self.console = console
        self.quiet = quiet
        self.status = console.status("starting", spinner="dots") if not quiet else None

    def __enter__(self) -> AbReporter:
        if self.status is not None:
            self.status.start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self.status is not None:
            self.status.stop()

    def started(self, total: int, done: int) -> None:
        pass

    def sample_started(self, case: Case, block: int, position: int) -> None:
        if self.status is not None:
            self.status.update(f"block {block} · {case.key}")

    def sample_done(self, sample: Sample, case: Case) -> None:
        if sample.status != "ok" and not self.quiet:
            self.console.print(
                f"[red]✗[/] block {sample.block} {case.key}: failed: {sample.reason}",
                highlight=False,
            )

    def warning(self, message: str) -> None:
        if not self.quiet:
            self.console.print(f"[yellow]warning:[/] {message}", highlight=False)


def interval_text(state: SequentialState) -> str:
    """The confidence sequence, with a side that still sits at the searched range's edge
    shown as unbounded ("≤ -50.3%") rather than as if it had been measured."""
    lo, hi = state.ci_low_pct, state.ci_high_pct
    if lo is None or hi is None:
        return ci(lo, hi)
    edge_lo, edge_hi = 100 * math.expm1(-INTERVAL_EDGE_LOG), 100 * math.expm1(INTERVAL_EDGE_LOG)
    low = f"≤{pct(lo)}" if lo <= edge_lo + 1e-9 else pct(lo)
    high = f"≥{pct(hi)}" if hi >= edge_hi - 1e-9 else pct(hi)
    return f"[{low}, {high}]"


def progress_line(block: int, contrast: Contrast, state: SequentialState) -> str:
    colour = {"regression": "red", "improvement": "green", "no change": "cyan"}.get(
        state.verdict, "yellow"
    )
    return (
        f"block {block:>3} · {contrast.title} · {state.name} "
        f"{pct(state.estimate_pct)} {interval_text(state)} · "
        f"evidence {state.e_value:.3g} / equiv {state.e_value_equivalence:.3g} "
        f"(need {1 / state.alpha:g}) · [{colour}]{state.verdict}[/]"
    )


def run_blocks(
    store: Store,
    plan: Plan,
    run_id: int,
    seed: int,
    items: list[Contrast],
    *,
    first_block: int,
    max_blocks: int,
    max_time_s: float | None,
    destroy_data: bool,
    console: Console,
    quiet: bool,
) -> tuple[str, str]:
    """Run blocks until every decision is done or the budget is spent; (status, why)."""
    start = time.monotonic()
    durations: list[float] = []
    measured = 0
    why = f"budget of {max_blocks} blocks spent"
    if all_decided(items):  # a resumed run that had its verdicts already
        return "finished", "every KPI has a verdict"
    with AbReporter(console, quiet) as reporter:
        session = runner.LabSession(plan, store, run_id, seed, destroy_data, reporter)
        with runner.interrupts_raise(), session:
            for block in range(first_block, max_blocks + 1):
                if max_time_s is not None and durations:
                    expected = sum(durations) / len(durations)
                    if time.monotonic() - start + expected > max_time_s:
                        why = f"time budget of {max_time_s:g} s spent"
                        break
                began = time.monotonic()
                samples = session.run_block(block)
                durations.append(time.monotonic() - began)
                measured += sum(1 for s in samples if s.status == "ok")
                if not measured and block >= first_block + 1:
                    reason = next((s.reason for s in samples if s.reason), "no result")
                    raise LabError(
                        f"every sample of blocks {first_block}-{block} failed: {reason}"
                    )
                for contrast in items:
                    feed(contrast, samples)
                    for decision in contrast.decisions.values():
                        state = decision.state
                        if state is not None and state.n_blocks > 0 and not quiet:
                            console.print(progress_line(block, contrast, state), highlight=False)
                if all_done(items):
                    why = (
                        "every KPI has a verdict"
                        if all_decided(items)
                        else f"budget of {block} blocks spent"
                    )
                    break
    return "finished", why
