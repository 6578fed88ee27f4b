"""`iolab report SELECTOR… --html FILE`: one self-contained HTML report (docs/report.md)."""

from __future__ import annotations

import click

from iolab.analysis.select import parse_selector
from iolab.cli.options import (
    check_levels,
    margin_option,
    metric_option,
    store_location,
    table_alpha_option,
)
from iolab.errors import IolabError
from iolab.publish.files import write_atomically
from iolab.store import open_reader


@click.command("report")
@click.argument("selectors", nargs=-1, required=True, metavar="A [B]")
@click.option(
    "--html",
    "html_path",
    required=True,
    metavar="FILE",
    help="Write the report to FILE ('-' for standard output).",
)
@click.option("--by", default=None, metavar="DIM", help="With one run: compare each value of DIM.")
@click.option("--baseline", default=None, metavar="VALUE", help="The value compared against.")
@margin_option
@table_alpha_option
@metric_option
@click.option("--correction", type=click.Choice(["holm", "bh"]), default="holm", show_default=True)
@click.option("--all", "show_all", is_flag=True, help="List every secondary metric.")
@click.pass_context
def command(
    ctx: click.Context,
    selectors: tuple[str, ...],
    html_path: str,
    by: str | None,
    baseline: str | None,
    margin: float,
    alpha: float,
    metrics: tuple[str, ...],
    correction: str,
    show_all: bool,
) -> None:
    """An HTML report of B against A (or of one run's variants), with the samples plotted:
    inline SVG and CSS, no script, nothing fetched."""
    from iolab.analysis.build import Options  # these load numpy: not for --help
    from iolab.publish import gather
    from iolab.report import html

    check_levels(alpha, margin)
    if len(selectors) > 2:
        raise IolabError(f"give one or two selectors, not {len(selectors)}")
    if len(selectors) == 2 and (by is not None or baseline is not None):
        raise IolabError("--by/--baseline compare within one run: give one selector, not two")
    options = Options(alpha, margin, metrics, "bh" if correction == "bh" else "holm")
    parsed = [parse_selector(s) for s in selectors]
    with open_reader(store_location(ctx)) as store:  # a query: the store is only read
        if len(parsed) == 2:
            page = gather.pair_html(store, parsed[0], parsed[1], options)
        else:
            page = gather.by_html(
                store, parsed[0], by or "variant", baseline, options, sequential=True
            )
    text = html.render(page, show_all=show_all)
    if html_path == "-":
        click.echo(text, nl=False)
    else:
        write_atomically(html_path, text)
