"""Markdown that reads well as plain text in an email: setext headings, aligned pipe
tables, `-` lists; no HTML, no colour, nothing wider than it must be."""

from __future__ import annotations

from iolab.report.layout import Block, blocks
from iolab.report.model import Report
from iolab.report.options import RenderOptions


def pipe_table(headers: list[str], rows: list[list[str]], right: set[int]) -> list[str]:
    """A pipe table whose columns line up in a fixed-width font."""
    widths = [max(len(h), 3) for h in headers]
    for row in rows:
        for i, cell in enumerate(row):
            widths[i] = max(widths[i], len(cell))

    def line(cells: list[str]) -> str:
        padded = [
            c.rjust(widths[i]) if i in right else c.ljust(widths[i]) for i, c in enumerate(cells)
        ]
        return "| " + " | ".join(padded) + " |"

    rule = (
        "|"
        + "|".join(
            "-" * (w + 1) + ":" if i in right else "-" * (w + 2) for i, w in enumerate(widths)
        )
        + "|"
    )
    return [line([h or " " for h in headers]), rule, *(line(r) for r in rows)]


def _escape(text: str) -> str:
    return text.replace("|", "\\|")


def render(report: Report, options: RenderOptions) -> str:
    out: list[str] = []
    for block in blocks(report, options.show_all):
        if block.kind == "title":
            title = f"{block.text}: {report.b} vs {report.a}"
            out += [title, "=" * len(title), ""]
            out += [f"{line}  " for line in block.lines]
        elif block.kind == "heading":
            out += ["", block.text, "-" * len(block.text)]
        elif block.kind == "table":
            out += ["", f"**{block.text}**", ""] if block.text else [""]
            rows = [[_escape(c) for c in r] for r in block.rows]
            out += pipe_table(block.headers, rows, block.right)
        else:
            out.append("")
            if block.text:
                out += [f"**{block.text}**", ""]
            out += [f"- {line}" for line in block.lines]
    return "\n".join(out).rstrip() + "\n"


__all__ = ["Block", "pipe_table", "render"]
