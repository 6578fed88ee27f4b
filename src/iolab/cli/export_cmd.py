"""`iolab export SELECTOR`: the raw samples a selector names, in Go's benchmark format
(docs/compare.md, "Exporting samples"), for benchstat and other Go-format tools."""

from __future__ import annotations

import click

from iolab.analysis.select import parse_selector, resolve
from iolab.cli.options import metric_option, output_option, store_location, to_output
from iolab.report import gobench
from iolab.store import open_store


@click.command("export")
@click.argument("selector", metavar="SELECTOR")
@metric_option
@click.option(
    "--format",
    "format_name",
    type=click.Choice(["gobench"]),
    default="gobench",
    show_default=True,
    help="Go's benchmark format: one `BenchmarkIolab… 1 VALUE METRIC …` line per sample.",
)
@output_option
@click.pass_context
def command(
    ctx: click.Context,
    selector: str,
    metrics: tuple[str, ...],
    format_name: str,
    output: str | None,
) -> None:
    """Write the samples SELECTOR names (run:ID, label:NAME, tag:K=V, …) to standard output
    (or -o FILE), for benchstat and other tools that read Go's benchmark format.

    \b
    Examples:
      iolab export label:old -o old.txt; iolab export label:new -o new.txt
      benchstat old.txt new.txt
    """
    sel = parse_selector(selector)
    with open_store(store_location(ctx), read_only=True) as store:
        samples = resolve(store, sel, histograms=False)
    with to_output(output):
        click.echo(gobench.render(samples, selector, metrics), nl=False)
