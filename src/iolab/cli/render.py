"""Printing a comparison report the way `compare` and `ab` both do, and `--ci`'s exit code."""

from __future__ import annotations

import os
import sys

import click

from iolab.report import FORMATS, RenderOptions, ci_exit_code, render
from iolab.report.model import Report

FORMAT_NAMES = list(FORMATS)


def render_options(format_name: str, show_all: bool) -> RenderOptions:
    """Colour only for the table on a terminal, and never with NO_COLOR set."""
    tty = sys.stdout.isatty()
    color = format_name == "table" and tty and "NO_COLOR" not in os.environ
    width = 140
    if tty:
        import shutil  # (and zlib, bz2, lzma): only a terminal has a size to ask

        width = shutil.get_terminal_size((140, 24)).columns
    return RenderOptions(color=color, show_all=show_all, width=max(width, 80))


def emit(report: Report, format_name: str, show_all: bool, ci: bool) -> None:
    """Print the report; with --ci exit 10 / 11 / 0 by the KPI verdicts."""
    click.echo(render(report, format_name, render_options(format_name, show_all)), nl=False)
    if ci:
        code = ci_exit_code(report)
        if code:
            sys.exit(code)
