"""The default human table (rich).  Colour only when writing to a terminal: the caller
decides (`RenderOptions.color`); piped output is plain text with the same layout."""

from __future__ import annotations

import io

from rich import box
from rich.console import Console
from rich.table import Table
from rich.text import Text

from iolab.report.layout import Block, blocks
from iolab.report.model import Report
from iolab.report.options import RenderOptions

_STYLE = {
    "regression": "bold red",
    "improvement": "bold green",
    "no change": "cyan",
    "inconclusive": "yellow",
    "changed": "magenta",
}


def _style(cell: str) -> str | None:
    for word, style in _STYLE.items():
        if cell.startswith(word):
            return style
    return None


def _table(block: Block) -> Table:
    table = Table(
        title=block.text or None,
        title_justify="left",
        title_style="bold",
        box=box.SIMPLE_HEAD,
        show_edge=False,
        pad_edge=False,
    )
    for i, header in enumerate(block.headers):
        table.add_column(
            header, justify="right" if i in block.right else "left", no_wrap=i == 0, overflow="fold"
        )
    for row in block.rows:
        cells: list[Text] = []
        for i, cell in enumerate(row):
            style = _style(cell) if i == block.verdict_column else None
            cells.append(Text(cell, style=style or ""))
        table.add_row(*cells)
    return table


def render(report: Report, options: RenderOptions) -> str:
    out = io.StringIO()
    console = Console(
        file=out,
        force_terminal=options.color,
        no_color=not options.color,
        color_system="standard" if options.color else None,
        width=options.width,
        highlight=False,
        emoji=False,
    )
    for block in blocks(report, options.show_all):
        if block.kind == "title":
            console.print(Text(block.text, style="bold"))
            for line in block.lines:
                console.print(Text(line))
        elif block.kind == "heading":
            console.print()
            console.rule(Text(block.text, style="bold"), align="left")
        elif block.kind == "table":
            console.print()
            console.print(_table(block))
        else:
            console.print()
            if block.text:
                console.print(Text(block.text, style="bold"))
            for line in block.lines:
                console.print(Text(f"  {line}"))
    # rich pads every line to the console width: trailing blanks only hurt when pasted
    return "".join(line.rstrip() + "\n" for line in out.getvalue().splitlines())
