"""Seconds read from the environment, checked alike wherever iolab takes them: one line
naming the variable when the value is not a number of seconds or out of its range."""

from __future__ import annotations

import os

from iolab.errors import IolabError


def env_seconds(
    name: str,
    default: float,
    low: float,
    high: float,
    error: type[IolabError] = IolabError,
) -> float:
    """$`name` as seconds in [`low`, `high`], else `default` when unset or empty."""
    text = os.environ.get(name)
    if not text:
        return default
    try:
        value = float(text)
    except ValueError:
        raise error(f"{name}={text!r} is not a number of seconds") from None
    if not low <= value <= high:
        raise error(f"{name} must be between {low:g} and {high:g} seconds")
    return value
