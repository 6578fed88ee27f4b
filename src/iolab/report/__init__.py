"""Report formats: one module per output form behind one interface,
`render(report, RenderOptions) -> str`.  `iolab.analysis.build` turns selected samples into
the `Report` they all render; formats never compute statistics.

A format's module is imported when it first renders (FORMATS names them without loading
them), so a command that only needs `report.fmt` (`iolab parse`, `iolab results`) does not
load every format at start."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterator, Mapping

from iolab.report.model import Report, ci_exit_code
from iolab.report.options import RenderOptions

Renderer = Callable[[Report, RenderOptions], str]

# format name → the module whose `render` writes it
_MODULES = {
    "table": "iolab.report.table",
    "lkp": "iolab.report.lkp",
    "benchstat": "iolab.report.benchstat",
    "markdown": "iolab.report.markdown",
    "json": "iolab.report.json_format",
    "brief": "iolab.report.brief",
}


class _Formats(Mapping[str, Renderer]):
    """Format name → renderer, each module imported on first use."""

    def __getitem__(self, name: str) -> Renderer:
        renderer: Renderer = importlib.import_module(_MODULES[name]).render
        return renderer

    def __iter__(self) -> Iterator[str]:
        return iter(_MODULES)

    def __len__(self) -> int:
        return len(_MODULES)


FORMATS: Mapping[str, Renderer] = _Formats()


def render(report: Report, format_name: str, options: RenderOptions | None = None) -> str:
    """The report in one of FORMATS."""
    return FORMATS[format_name](report, options or RenderOptions())


__all__ = ["FORMATS", "RenderOptions", "Renderer", "Report", "ci_exit_code", "render"]
