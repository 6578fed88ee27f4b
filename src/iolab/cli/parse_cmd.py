"""`iolab parse FILE… [--json]`: show what was recognised, store nothing."""

from __future__ import annotations

import json

import click
from rich.console import Console
from rich.table import Table

from iolab.ingest.detect import parse_source
from iolab.model.result import Result
from iolab.report.fmt import brief_number

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
    table = Table(title=f"{len(results)} result(s)")
    for column in ("source", "caption", "tool", "format", "dir", *_SHOWN):
        table.add_column(column, overflow="fold")
    for result in results:
        dirs = [d for d in ("read", "write", "trim", "mixed") if f"{d}.iops" in result.metrics
                or f"{d}.bw_bytes" in result.metrics]
        for ddir in dirs or ["-"]:
            values = [brief_number(result.metrics.get(f"{ddir}.{key}")) for key in _SHOWN]
            version = f"{result.tool} {result.tool_version or ''}".strip()
            caption = result.caption or ""
            table.add_row(result.source, caption, version, result.format, ddir, *values)
    Console().print(table)

