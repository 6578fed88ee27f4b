"""`iolab parse FILE… [--format json] [-o FILE]`: show what was recognised, store nothing."""

from __future__ import annotations

import json
import sys

import click
from rich.console import Console
from rich.table import Table

from iolab.cli.options import format_option, json_alias_option, output_option, to_output
from iolab.ingest.comparisons import parse_source
from iolab.model.comparison import Comparison
from iolab.model.metrics import direction_prefixes, metric_info
from iolab.model.result import Result
from iolab.report.fmt import value
from iolab.textsafe import shown_markup

_SHOWN = ("iops", "bw_bytes", "runtime_ms", "clat_ns.mean", "clat_ns.p99")


@click.command("parse")
@click.argument("files", nargs=-1, required=True)
@format_option(
    ["text", "json"],
    "text",
    "text: tables for the terminal; json: one array, one object per result, then one per "
    "comparison table.",
)
@json_alias_option
@output_option
def command(files: tuple[str, ...], format_name: str, as_json: bool, output: str | None) -> None:
    """Recognise fio / xfs_io / dd results in FILEs (`-` is standard input), and the
    comparison tables of 0-day/LKP, mmtests, fsperf and benchstat.

    \b
    Examples:
      iolab parse fio-output.json
      fio --output-format=json job.fio | iolab parse --format json -
    """
    with to_output(output):
        _parse(files, "json" if as_json else format_name)


def _parse(files: tuple[str, ...], format_name: str) -> None:
    results: list[Result] = []
    tables: list[Comparison] = []
    for path in files:
        found, found_tables = parse_source(path)
        results.extend(found)
        tables.extend(found_tables)
    if format_name == "json":
        records = [r.to_json() for r in results] + [t.to_json() for t in tables]
        click.echo(json.dumps(records, indent=2))
        return
    if results or not tables:
        print_results(results)
    if tables:
        print_tables(tables)


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


def print_tables(tables: list[Comparison]) -> None:
    """One block per comparison table: its columns, then metric, base, change, new."""
    console = Console(width=None if sys.stdout.isatty() else 160)
    said: list[object] = []
    for t in tables:
        if t.robot is not None and not any(t.robot is r for r in said):
            said.append(t.robot)
            console.print(shown_markup(_robot_line(t)), highlight=False)
        title = f"{t.format} table, line {t.line}: {len(t.rows)} row(s)"
        if t.caption:
            title += f" — {t.caption}"
        elif t.dimensions.get("testcase"):
            title += f" — {t.dimensions['testcase']} on {t.testbox or '?'}"
        table = Table(title=shown_markup(title))
        for column in ("metric", "cell", "base", "±%", "change", "new", "±%", "sig"):
            table.add_column(column, overflow="fold")
        for r in t.rows:
            change = (
                f"{r.change_pct:+g}%"
                if r.change_pct is not None
                else (f"{r.change_abs:+g}" if r.change_abs is not None else r.change_printed or "")
            )
            table.add_row(
                shown_markup(" ".join(x for x in (r.stat, r.metric) if x) or "-"),
                shown_markup(r.cell or ""),
                _figure(r.base),
                _figure(r.base_stddev_pct),
                change,
                _figure(r.new),
                _figure(r.new_stddev_pct),
                {True: "*", False: "", None: ""}[r.significant],
            )
        console.print(table)


def _figure(x: float | None) -> str:
    return "" if x is None else f"{x:g}"


def _robot_line(t: Comparison) -> str:
    """What the robot reported, in one line above its first table."""
    r = t.robot
    assert r is not None
    heads = "; ".join(
        f"{h.metric} {h.change_pct:+g}% {h.direction}" + (f" ({h.testcase})" if h.testcase else "")
        for h in r.headlines
    )
    commit = f"{(r.commit or '?')[:12]}" + (f' ("{r.subject}")' if r.subject else "")
    base = f", base {r.base}" if r.base else ""
    return f"0-day/LKP report on {commit}{base}: {heads or 'no headline'}"
