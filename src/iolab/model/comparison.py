"""Comparison tables that robots and people paste into mail: 0-day/LKP, mmtests, fsperf,
benchstat.  Plain data; the readers in iolab.ingest fill it, `parse --json` prints it.

A table compares a base against one or more new sides.  Each row keeps the numbers as the
table printed them (nothing recomputed): the base and new figures, their spread where
shown, the change, and whether the tool marked it significant.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

# What a row's printed change means, per format (the field `change_kind` of a table):
#   "percent"   — (new - base) / base in %, sign as printed (LKP, fsperf, benchstat);
#   "gain"      — mmtests: % improvement, positive is better whichever way the metric goes.
CHANGE_KINDS = ("percent", "gain")


@dataclass
class Row:
    """One compared metric (or one cell of a metric) of a table."""

    metric: str | None
    base: float | None
    new: float | None
    change_pct: float | None = None
    # LKP prints a metric that is itself a percentage with an absolute difference
    # ("1.32  -0.1  1.26  turbostat.Busy%"): that difference, in the metric's own unit
    change_abs: float | None = None
    base_stddev_pct: float | None = None
    new_stddev_pct: float | None = None
    # a change with no finite figure, as printed: LKP's `+Inf%` over a base of 0
    change_printed: str | None = None
    significant: bool | None = None  # None where the format shows no marker
    cell: str | None = None  # old LKP layouts: the test case a row measures
    stat: str | None = None  # mmtests: Hmean, Amean, Stddev, CoeffVar, BAmean-95 …
    stddev: float | None = None  # fsperf: the absolute stdev column
    values: list[float | None] = field(default_factory=list)  # mmtests: every kernel column
    changes_pct: list[float | None] = field(default_factory=list)  # mmtests: per column
    marks: list[bool] = field(default_factory=list)  # mmtests: `*` per column
    unit: str | None = None  # benchstat: the unit the figures were printed in
    p_value: float | None = None  # benchstat
    n: str | None = None  # benchstat: "10" or "9+10"
    line: int = 0  # 1-based line of the source the row was read from

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "metric": self.metric,
            "base": self.base,
            "base_stddev_pct": self.base_stddev_pct,
            "change_pct": self.change_pct,
            "new": self.new,
            "new_stddev_pct": self.new_stddev_pct,
        }
        optional: dict[str, Any] = {
            "change_abs": self.change_abs,
            "change_printed": self.change_printed,
            "significant": self.significant,
            "cell": self.cell,
            "stat": self.stat,
            "stddev": self.stddev,
            "unit": self.unit,
            "p_value": self.p_value,
            "n": self.n,
        }
        out.update({k: v for k, v in optional.items() if v is not None})
        if self.values:
            out["values"] = list(self.values)
            out["changes_pct"] = list(self.changes_pct)
            out["marks"] = list(self.marks)
        out["line"] = self.line
        return out


@dataclass
class Headline:
    """What a robot mail says in its first lines: "noticed a 6.5% regression of fio.write_iops"."""

    metric: str
    change_pct: float
    direction: str  # "regression" | "improvement"
    testcase: str | None = None
    machine: str | None = None
    parameters: dict[str, str] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {
            "metric": self.metric,
            "change_pct": self.change_pct,
            "direction": self.direction,
            "testcase": self.testcase,
            "test_machine": self.machine,
            "parameters": dict(self.parameters),
        }


@dataclass
class RobotMail:
    """The 0-day/LKP robot's facts about the commit it tested, shared by its tables."""

    commit: str | None = None
    subject: str | None = None
    base: str | None = None
    base_subject: str | None = None
    branch: str | None = None
    testcase: str | None = None
    config: str | None = None
    compiler: str | None = None
    machine: str | None = None
    parameters: dict[str, str] = field(default_factory=dict)
    headlines: list[Headline] = field(default_factory=list)
    link: str | None = None  # lore link (Closes:/Link:) or the mail's Message-ID

    def to_json(self) -> dict[str, Any]:
        return {
            "commit": self.commit,
            "subject": self.subject,
            "base": self.base,
            "base_subject": self.base_subject,
            "branch": self.branch,
            "testcase": self.testcase,
            "config": self.config,
            "compiler": self.compiler,
            "test_machine": self.machine,
            "parameters": dict(self.parameters),
            "headlines": [h.to_json() for h in self.headlines],
            "link": self.link,
        }


@dataclass
class Comparison:
    """One comparison table found in a source."""

    format: str  # lkp | mmtests | fsperf | benchstat
    source: str
    line: int  # 1-based line the table starts at
    rows: list[Row] = field(default_factory=list)
    caption: str | None = None
    columns: list[str] = field(default_factory=list)  # commits, kernels or files compared
    change_kind: str = "percent"
    dimensions: dict[str, str] = field(default_factory=dict)  # LKP's a/b/c: x/y/z header
    testbox: str | None = None  # LKP: the machine of this table's parameter set
    robot: RobotMail | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "kind": "comparison",
            "format": self.format,
            "source": self.source,
            "line": self.line,
            "caption": self.caption,
            "columns": list(self.columns),
            "change_kind": self.change_kind,
        }
        if self.dimensions:
            out["dimensions"] = dict(self.dimensions)
        if self.testbox:
            out["test_machine"] = self.testbox
        if self.robot is not None:
            out["report"] = self.robot.to_json()
        out["rows"] = [r.to_json() for r in self.rows]
        return out
