"""Progress on stderr while the lab runs: `iolab run`'s bar with one line per sample, and
`iolab ab`'s status line with every decision's estimate and interval after each block.
Rendering only; the services call these through the reporter protocols of the lab and ab."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

from iolab.model.metrics import metric_info
from iolab.model.sample import Sample
from iolab.plan.model import Case, Plan
from iolab.report.fmt import pct, sequence_ci
from iolab.stats.types import SequentialState
from iolab.textsafe import shown_markup

if TYPE_CHECKING:  # the ab service loads numpy: not for `iolab run --help`
    from iolab.ab.contrasts import Contrast


class ProgressReporter:
    """A progress bar with ETA on stderr, and one line per finished sample above it."""

    def __init__(self, plan: Plan, quiet: bool) -> None:
        self.console = Console(stderr=True, soft_wrap=True)  # warnings stay whole in logs
        self.kpis = [k.metric for k in plan.kpis]
        self.quiet = quiet
        self.progress = Progress(
            TextColumn("[progress.description]{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            TextColumn("ETA"),
            TimeRemainingColumn(),
            console=self.console,
            transient=True,
            disable=quiet or not self.console.is_terminal,
        )
        self.task = self.progress.add_task("starting", total=None)

    def __enter__(self) -> ProgressReporter:
        self.progress.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.progress.stop()

    def started(self, total: int, done: int) -> None:
        self.progress.update(self.task, total=total, completed=done)

    def sample_started(self, case: Case, block: int, position: int) -> None:
        self.progress.update(self.task, description=f"block {block} · {shown_markup(case.key)}")

    def sample_done(self, sample: Sample, case: Case) -> None:
        self.progress.advance(self.task)
        if self.quiet:
            return
        where = f"block {sample.block} {shown_markup(case.key)}"
        if sample.status != "ok":
            reason = shown_markup(sample.reason or "")
            self.console.print(f"[red]✗[/] {where}: failed: {reason}", highlight=False)
            return
        shown = []
        for name in self.kpis:
            value = sample.metrics.get(name)
            if value is not None:
                shown.append(
                    f"{name}={_fmt(value)}{metric_info(name).unit and ' ' + metric_info(name).unit}"
                )
        self.console.print(f"[green]✓[/] {where}: {', '.join(shown) or 'ok'}", highlight=False)

    def warning(self, message: str) -> None:
        self.console.print(f"[yellow]warning:[/] {shown_markup(message)}", highlight=False)


def _fmt(value: float) -> str:
    for limit, suffix in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(value) >= limit:
            return f"{value / limit:.3g}{suffix}"
    return f"{value:.4g}"


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
            self.status.update(f"block {block} · {shown_markup(case.key)}")

    def sample_done(self, sample: Sample, case: Case) -> None:
        if sample.status != "ok" and not self.quiet:
            self.console.print(
                f"[red]✗[/] block {sample.block} {shown_markup(case.key)}: "
                f"failed: {shown_markup(sample.reason or '')}",
                highlight=False,
            )

    def warning(self, message: str) -> None:
        if not self.quiet:
            self.console.print(f"[yellow]warning:[/] {shown_markup(message)}", highlight=False)

    def decision(self, block: int, contrast: Contrast, state: SequentialState) -> None:
        if not self.quiet:
            self.console.print(progress_line(block, contrast, state), highlight=False)


def interval_text(state: SequentialState) -> str:
    """The confidence sequence, with a side that still sits at the searched range's edge
    shown as unbounded ("≤ -50.3%") rather than as if it had been measured."""
    return sequence_ci(state.ci_low_pct, state.ci_high_pct)


def progress_line(block: int, contrast: Contrast, state: SequentialState) -> str:
    colour = {"regression": "red", "improvement": "green", "no change": "cyan"}.get(
        state.verdict, "yellow"
    )
    return (
        f"block {block:>3} · {shown_markup(contrast.title)} · {shown_markup(state.name)} "
        f"{pct(state.estimate_pct)} {interval_text(state)} · "
        f"evidence {state.e_value:.3g} / equiv {state.e_value_equivalence:.3g} "
        f"(need {1 / state.alpha:g}) · [{colour}]{state.verdict}[/]"
    )
