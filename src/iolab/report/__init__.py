"""Report formats: one module per output form behind one interface,
`render(report, RenderOptions) -> str`.  `iolab.analysis.build` turns selected samples into
the `Report` they all render; formats never compute statistics."""

from __future__ import annotations

from collections.abc import Callable

from iolab.report import benchstat, json_format, lkp, markdown, table
from iolab.report.model import Report, ci_exit_code
from iolab.report.options import RenderOptions

Renderer = Callable[[Report, RenderOptions], str]

FORMATS: dict[str, Renderer] = {
    "table": table.render,
    "lkp": lkp.render,
    "benchstat": benchstat.render,
    "markdown": markdown.render,
    "json": json_format.render,
}


def render(report: Report, format_name: str, options: RenderOptions | None = None) -> str:
    """The report in one of FORMATS."""
    return FORMATS[format_name](report, options or RenderOptions())


__all__ = ["FORMATS", "RenderOptions", "Renderer", "Report", "ci_exit_code", "render"]
