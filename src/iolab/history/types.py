"""The typed results of `iolab.history` (defined in `iolab.model.history`, a floor below the
report formats that render them; re-exported here as part of the history face)."""

from iolab.model.history import Case, ChangePoint, History, Point, Series

__all__ = ["Case", "ChangePoint", "History", "Point", "Series"]
