"""`iolab compare A [B]`: B against A for every metric both sides hold (docs/compare.md).

A query: the store is only read (a store on a read-only mount works), unless `--record`
asks for KPI regressions to be entered in the regression registry (docs/history.md)."""

from __future__ import annotations

import sys

import click

from iolab.analysis.select import parse_selector
from iolab.cli.options import (
    check_levels,
    ci_option,
    margin_option,
    metric_option,
    output_option,
    store_location,
    table_alpha_option,
    to_output,
)
from iolab.cli.render import FORMAT_NAMES, emit
from iolab.errors import IolabError, StoreError
from iolab.report import ci_exit_code
from iolab.report.model import Report
from iolab.store import open_reader


@click.command("compare")
@click.argument("a", metavar="A")
@click.argument("b", metavar="[B]", required=False)
@click.option(
    "--by",
    default=None,
    metavar="DIM",
    help="With one run: compare every value of DIM (a matrix dimension, or "
    "'variant', the default) against the baseline, in every other cell.",
)
@click.option(
    "--baseline",
    default=None,
    metavar="VALUE",
    help="The value compared against (default: the plan's baseline variant, else the first).",
)
@margin_option
@table_alpha_option
@metric_option
@click.option(
    "--format",
    "format_name",
    type=click.Choice([*FORMAT_NAMES, "html"]),
    default="table",
    show_default=True,
    help="html: one self-contained page with the samples plotted (as `iolab report`).",
)
@output_option
@click.option(
    "--correction",
    type=click.Choice(["holm", "bh"]),
    default="holm",
    show_default=True,
    help="How secondary metrics' false discoveries are controlled.",
)
@click.option(
    "--all",
    "show_all",
    is_flag=True,
    help="Show every secondary metric and histogram, not only the changed ones.",
)
@ci_option
@click.option(
    "--record",
    is_flag=True,
    help="Also enter each KPI regression in the store's regression registry "
    "(`iolab regressions`); without it compare only reads the store.",
)
@click.pass_context
def command(
    ctx: click.Context,
    a: str,
    b: str | None,
    by: str | None,
    baseline: str | None,
    margin: float,
    alpha: float,
    metrics: tuple[str, ...],
    format_name: str,
    correction: str,
    show_all: bool,
    ci: bool,
    record: bool,
    output: str | None,
) -> None:
    """Compare B against A (selectors: run:ID, ID:VARIANT, label:NAME, tag:K=V, K=V; see
    docs/compare.md).  With only A naming a run: each variant against the baseline.

    \b
    Examples:
      iolab compare label:v6.1 label:v6.2 --ci
      iolab compare 12 --by fs --format html -o fs.html
    """
    from iolab.analysis.build import Options, by_report, pair_report  # numpy: not for --help

    check_levels(alpha, margin)
    if b is not None and (by is not None or baseline is not None):
        raise IolabError("--by/--baseline compare within one run: give one selector, not two")
    options = Options(
        alpha=alpha,
        margin_pct=margin,
        metrics=metrics,
        correction="bh" if correction == "bh" else "holm",
    )
    sel_a = parse_selector(a)
    sel_b = parse_selector(b) if b is not None else None
    location = store_location(ctx)
    if format_name == "html":
        from iolab.publish import gather
        from iolab.report import html

        with open_reader(location) as store:
            if sel_b is None:
                page = gather.by_html(store, sel_a, by or "variant", baseline, options)
            else:
                page = gather.pair_html(store, sel_a, sel_b, options)
        check_ci_judges(page.report, ci, metrics)
        if record:
            _record(ctx, page.report, a, b)
        with to_output(output):
            click.echo(html.render(page, show_all=show_all), nl=False)
            if ci and (code := ci_exit_code(page.report)):
                sys.exit(code)
        return
    with open_reader(location) as store:
        if sel_b is None:
            report = by_report(store, sel_a, by or "variant", baseline, options)
        else:
            report = pair_report(store, sel_a, sel_b, options)
    check_ci_judges(report, ci, metrics)
    if record:
        _record(ctx, report, a, b)
    with to_output(output):
        emit(report, format_name, show_all, ci)


def check_ci_judges(report: Report, ci: bool, metrics: tuple[str, ...]) -> None:
    """`--ci` with a `--metric` that leaves no KPI has nothing to judge: a usage error (exit
    2), not an inconclusive verdict (11)."""
    if ci and metrics and not report.kpis():
        raise IolabError(f"--ci judges KPIs, and --metric {' '.join(metrics)} matches none of them")


def _record(ctx: click.Context, report: Report, a: str, b: str | None) -> None:
    """KPI regressions → the registry; a store that cannot be written is one line on
    stderr (the comparison is still printed, and --ci still decides the exit status)."""
    from iolab.history.registry import record_report
    from iolab.store import open_store

    try:
        with open_store(store_location(ctx), must_exist=True) as store:
            record_report(store, report, "compare", a, b)
    except StoreError as exc:
        click.echo(f"iolab: not recorded in the regression registry: {exc}", err=True)
