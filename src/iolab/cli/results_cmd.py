"""`iolab results [--label L] [--run R] [--format json] [-o FILE]`: what the store holds.

Without --run: one line per run.  With --run: that run's samples with a few KPIs (the
run's own KPIs when the lab recorded them, else the usual fio ones).
"""

from __future__ import annotations

import json

import click
from rich.console import Console
from rich.table import Table

from iolab.cli.options import (
    format_option,
    json_alias_option,
    output_option,
    store_location,
    to_output,
)
from iolab.errors import IolabError
from iolab.model.sample import RunInfo, Sample
from iolab.report.fmt import brief_number
from iolab.runs.meta import recorded_kpis
from iolab.store import open_reader
from iolab.store.export import run_to_json, sample_to_json
from iolab.textsafe import shown_markup

_USUAL_KPIS = (
    "read.iops",
    "write.iops",
    "mixed.iops",
    "read.bw_bytes",
    "write.bw_bytes",
    "read.clat_ns.p99",
    "write.clat_ns.p99",
    "elapsed_s",
)
_MAX_KPIS = 6


@click.command("results")
@click.option("--label", metavar="NAME", help="Only runs with this label.")
@click.option("--run", "run_id", type=int, metavar="ID", help="Show the samples of one run.")
@format_option(
    ["table", "json"], "table", "table for the terminal, json for scripts (docs/store.md)."
)
@json_alias_option
@output_option
@click.pass_context
def command(
    ctx: click.Context,
    label: str | None,
    run_id: int | None,
    format_name: str,
    as_json: bool,
    output: str | None,
) -> None:
    """List stored runs, or the samples of one run.

    \b
    Examples:
      iolab results --label nightly
      iolab results --run 12 --format json -o run12.json
    """
    if label is not None and run_id is not None:
        raise IolabError("give --label or --run, not both")
    with to_output(output):
        _results(ctx, label, run_id, as_json or format_name == "json")


def _results(ctx: click.Context, label: str | None, run_id: int | None, as_json: bool) -> None:
    with open_reader(store_location(ctx)) as store:
        if run_id is None:
            runs = store.runs(label=label)
            if as_json:
                click.echo(json.dumps([run_to_json(r) for r in runs], indent=2))
            else:
                _print_runs(runs, label)
            return
        run = store.run(run_id)
        samples = store.samples(run_id=run_id, status=None, with_jobs=as_json)
    if as_json:
        click.echo(json.dumps([sample_to_json(s) for s in samples], indent=2))
    else:
        _print_samples(run, samples)


def _print_runs(runs: list[RunInfo], label: str | None) -> None:
    console = Console()
    if not runs:
        console.print(
            f"no runs with label {shown_markup(repr(label))}" if label else "no runs stored yet"
        )
        return
    table = Table(title=f"{len(runs)} run(s)")
    for column in ("id", "kind", "label", "status", "created (UTC)", "samples", "tags"):
        table.add_column(column, overflow="fold")
    for run in runs:
        samples = str(run.n_samples)
        if run.n_failed:
            samples += f" ({run.n_failed} failed)"
        table.add_row(
            str(run.id),
            run.kind,
            shown_markup(run.label or ""),
            run.status,
            run.created_at.strftime("%Y-%m-%d %H:%M:%S"),
            samples,
            shown_markup(" ".join(f"{k}={v}" for k, v in sorted(run.tags.items()))),
        )
    console.print(table)


def kpi_columns(run: RunInfo, samples: list[Sample]) -> list[str]:
    """The metrics worth a column: the run's KPIs, else the usual ones that are present."""
    names = [k.metric for k in recorded_kpis(run)] or list(_USUAL_KPIS)
    present = {name for sample in samples for name in sample.metrics}
    return [name for name in names if name in present][:_MAX_KPIS]


def _print_samples(run: RunInfo, samples: list[Sample]) -> None:
    console = Console()
    title = f"run {run.id} ({run.kind}, {run.status}), label {shown_markup(run.label or '-')}: "
    title += f"{len(samples)} sample(s)"
    table = Table(title=title)
    kpis = kpi_columns(run, samples)
    lab = any(s.variant is not None or s.block is not None for s in samples)
    columns = ["id", *(("variant", "cell", "block") if lab else ("source", "caption")), "status"]
    for column in (*columns, *kpis):
        table.add_column(column, overflow="fold")
    for sample in samples:
        if lab:
            where = [
                sample.variant or "",
                ",".join(f"{k}={v}" for k, v in sorted(sample.cell.items())),
                "" if sample.block is None else str(sample.block),
            ]
        else:
            where = [sample.source or "", sample.caption or ""]
        status = sample.status if sample.status == "ok" else f"failed: {sample.reason or '?'}"
        values = [brief_number(sample.metrics.get(name)) for name in kpis]
        table.add_row(str(sample.id), *map(shown_markup, [*where, status]), *values)
    console.print(table)
