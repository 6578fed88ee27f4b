"""Typed readers for plan values: sizes, durations, CPU lists, words, booleans.

Each takes a Node and returns a Python value or raises the node's one-line PlanError.
Sizes are binary: K = 1024, M = 1024², G = 1024³, T = 1024⁴ (`1G`, `512M`, `1GiB`, `4k`);
a plain integer is bytes.  Durations: a number of seconds or `30s`, `5m`, `1h`, `250ms`;
`0s` is a duration (no warm-up, no settling), refused only where nothing could take no time.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from iolab.plan.nodes import Node, did_you_mean

_SIZE = re.compile(r"(\d+(?:\.\d+)?)\s*([kmgtp]?)(?:i?b)?", re.IGNORECASE)
_UNITS = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40, "p": 1 << 50}
_DURATION = re.compile(r"(\d+(?:\.\d+)?)\s*(ms|s|sec|m|min|h)?", re.IGNORECASE)
_SECONDS = {"ms": 0.001, "s": 1.0, "sec": 1.0, "m": 60.0, "min": 60.0, "h": 3600.0}


def size_value(text: str) -> int | None:
    """`100M` → 104857600; None when `text` is not a size."""
    m = _SIZE.fullmatch(text.strip())
    if m is None:
        return None
    return round(float(m.group(1)) * _UNITS[m.group(2).lower()])


def read_size(node: Node, subject: str = "") -> int:
    """A size in bytes; `subject` starts the error (`'vm.dirty_bytes' must be a size ...`)."""
    value = node.value
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return value
    if isinstance(value, str):
        size = size_value(value)
        if size is not None:
            return size
    lead = f"{subject} " if subject else ""
    node.fail(f"{lead}must be a size like 100M, got {node.describe()}")


def duration_value(text: str) -> float | None:
    """`90` / `90s` → 90.0, `10m` → 600.0, `0s` → 0.0; None when `text` is not a duration.
    The one reading of a duration, for plans and for the command line alike."""
    m = _DURATION.fullmatch(text.strip())
    if m is None:
        return None
    return float(m.group(1)) * _SECONDS[(m.group(2) or "s").lower()]


def read_duration(node: Node, *, positive: bool = False) -> float:
    """Seconds; `0s` is accepted unless `positive` (a timeout cannot be zero)."""
    value = node.value
    seconds: float | None = None
    if isinstance(value, int | float) and not isinstance(value, bool) and value >= 0:
        seconds = float(value)
    elif isinstance(value, str):
        seconds = duration_value(value)
    if seconds is None:
        node.fail(f"must be a duration like 30s or 5m, got {node.describe()}")
    if positive and seconds <= 0:
        node.fail(f"must be longer than 0s, got {node.describe()}")
    return seconds


def read_int(node: Node, minimum: int = 0) -> int:
    value = node.value
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        node.fail(f"must be a whole number >= {minimum}, got {node.describe()}")
    return value


def read_bool(node: Node) -> bool:
    if not isinstance(node.value, bool):
        node.fail(f"must be true or false, got {node.describe()}")
    return node.value


def read_str(node: Node, what: str = "a string") -> str:
    """A scalar as text (numbers are accepted and written the way YAML read them)."""
    value = node.value
    if value is None or isinstance(value, bool) or not node.is_scalar:
        node.fail(f"must be {what}, got {node.describe()}")
    return str(value)


def read_choice(node: Node, choices: Iterable[str]) -> str:
    options = list(choices)
    value = node.value
    if not isinstance(value, str) or value not in options:
        shown = ", ".join(options)
        hint = did_you_mean(str(value), options) if isinstance(value, str) else ""
        node.fail(f"must be one of {shown}, got {node.describe()}{hint}")
    return value


def read_str_list(node: Node, what: str = "a list of strings") -> tuple[str, ...]:
    if not node.is_list:
        node.fail(f"must be {what}, got {node.describe()}")
    return tuple(read_str(item) for item in node.elements())


def read_cpus(node: Node) -> tuple[int, ...]:
    """`[0, 1]`, `1`, or `"0-1,3"` → sorted unique CPU numbers."""
    value = node.value
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return (value,)
    if node.is_list:
        return tuple(sorted({read_int(item) for item in node.elements()}))
    if isinstance(value, str):
        cpus: set[int] = set()
        for part in value.split(","):
            m = re.fullmatch(r"\s*(\d+)\s*(?:-\s*(\d+)\s*)?", part)
            if m is None or (m.group(2) and int(m.group(2)) < int(m.group(1))):
                break
            cpus.update(range(int(m.group(1)), int(m.group(2) or m.group(1)) + 1))
        else:
            return tuple(sorted(cpus))
    node.fail(f"must be CPU numbers like [1] or '0-1', got {node.describe()}")
