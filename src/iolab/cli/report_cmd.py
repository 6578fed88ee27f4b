"""`iolab report SELECTOR… -o FILE`: one self-contained HTML report (docs/report.md)."""

from __future__ import annotations

import click

from iolab.analysis.select import parse_selector
from iolab.cli.options import (
    check_levels,
    margin_option,
    metric_option,
    output_option_saying,
    store_location,
    table_alpha_option,
    to_output,
)
from iolab.errors import IolabError
from iolab.store import open_reader


@click.command("report")
@click.argument("selectors", nargs=-1, required=True, metavar="A [B]")
@output_option_saying("Write the report to FILE ('-': standard output); required.")
@click.option("--html", "html_path", default=None, metavar="FILE", hidden=True)
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
    output: str | None,
    html_path: str | None,
    by: str | None,
    baseline: str | None,
    margin: float,
    alpha: float,
    metrics: tuple[str, ...],
    correction: str,
    show_all: bool,
) -> None:
    """An HTML report of B against A (or of one run's variants), with the samples plotted:
    inline SVG and CSS, no script, nothing fetched.

    \b
    Examples:
      iolab report label:v6.1 label:v6.2 -o report.html
      iolab report 12 --by fs -o - > fs.html
    """
    from iolab.analysis.build import Options  # these load numpy: not for --help
    from iolab.publish import gather
    from iolab.report import html

    if output is not None and html_path is not None and output != html_path:
        raise IolabError("-o and --html (its older name) name different files")
    output = output or html_path
    if output is None:
        raise IolabError("missing -o FILE (the HTML report's file; '-' for standard output)")
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
    with to_output(output):
        click.echo(html.render(page, show_all=show_all), nl=False)
