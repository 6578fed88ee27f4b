"""`iolab parse FILE… [--json]`: show what was recognised, store nothing."""

from __future__ import annotations

import json
import sys

import click
from rich.console import Console
from rich.table import Table

from iolab.ingest.detect import parse_source
from iolab.model.metrics import direction_prefixes, metric_info
from iolab.model.result import Result
from iolab.report.fmt import value
from iolab.textsafe import shown_markup

_SHOWN = ("iops", "bw_bytes", "runtime_ms", "clat_ns.mean", "clat_ns.p99")


@click.command("parse")
@click.argument("files", nargs=-1, required=True)
@click.option("--json", "as_json", is_flag=True, help="One JSON array, one object per result.")
def command(files: tuple[str, ...], as_json: bool) -> None:
    """Recognise fio / xfs_io / dd results in FILEs (`-` is standard input)."""
    results: list[Result] = []
    for path in files:
        results.extend(parse_source(path))
    if as_json:
        click.echo(json.dumps([r.to_json() for r in results], indent=2))
        return
    print_results(results)


def print_results(results: list[Result]) -> None:
    """One row per result and I/O direction, figures scaled with their units."""
    table = Table(title=f"{len(results)} result(s)")
    for column in ("#", "caption / source", "tool", "format", "dir"):
        table.add_column(column, overflow="fold")
    for key in _SHOWN:
        table.add_column(key, justify="right")
    for number, result in enumerate(results, 1):
        dirs = direction_prefixes(result.metrics)
        version = f"{result.tool} {result.tool_version or ''}".strip()
        where = result.caption or result.source
        for ddir in dirs or ["-"]:
            values = []
            for key in _SHOWN:
                name = f"{ddir}.{key}"
                figure = result.metrics.get(name)
                values.append("" if figure is None else value(figure, metric_info(name).unit))
            table.add_row(str(number), shown_markup(where), version, result.format, ddir, *values)
    Console(width=None if sys.stdout.isatty() else 160).print(table)
