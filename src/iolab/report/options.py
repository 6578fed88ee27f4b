"""Options every format accepts (most ignore some of them)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class RenderOptions:
    color: bool = False  # ANSI colour (the table, and only on a terminal)
    show_all: bool = False  # every secondary metric and histogram, not only the changed ones
    width: int = 140  # terminal width for the table
