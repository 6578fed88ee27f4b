"""One normalized Result per benchmark execution, whatever tool or format it came from."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

# A histogram: bucket value (in the unit its name carries, e.g. ns) → count.
Histogram = dict[float, int]


@dataclass
class Job:
    """One fio job (or the single job of xfs_io / dd), with its own metrics."""

    name: str
    metrics: dict[str, float] = field(default_factory=dict)
    options: dict[str, str] = field(default_factory=dict)
    histograms: dict[str, Histogram] = field(default_factory=dict)
    group: int | None = None


@dataclass
class Result:
    """One execution of a tool.

    `metrics` are result-level and aggregate the jobs the way fio's group report does:
    sums of iops, bandwidth and bytes; latency percentiles only when one job carries them or
    merged histogram bins allow — never averaged across jobs.
    """

    tool: str  # "fio", "xfs_io", "dd", "command"
    format: str  # "fio-json", "fio-json+", "fio-terse", "fio-text", "xfs_io", "xfs_io-csv", "dd"
    source: str  # file name, "-" for stdin, or a lab sample reference
    tool_version: str | None = None
    caption: str | None = None
    metrics: dict[str, float] = field(default_factory=dict)
    jobs: list[Job] = field(default_factory=list)
    histograms: dict[str, Histogram] = field(default_factory=dict)
    options: dict[str, str] = field(default_factory=dict)  # global options when known
    # when the tool ran, as the output itself says (fio JSON `timestamp`, the date of fio's
    # text job header); None when the output carries no time.  History orders imports by it.
    started_at: datetime | None = None
    # the mail quote depth of every copy of this result in its text (0 = not quoted), in
    # text order: a thread quoting one run at three reply levels gives one result, [0, 1, 2]
    quote_levels: list[int] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        """The `iolab parse --json` object (docs/parse-json.md)."""
        out: dict[str, Any] = {
            "source": self.source,
            "caption": self.caption,
            "tool": self.tool,
            "tool_version": self.tool_version,
            "format": self.format,
            "metrics": dict(sorted(self.metrics.items())),
            "jobs": [
                {
                    "name": job.name,
                    "group": job.group,
                    "options": job.options,
                    "metrics": dict(sorted(job.metrics.items())),
                }
                for job in self.jobs
            ],
        }
        if self.quote_levels:
            out["quote_levels"] = list(self.quote_levels)
        if self.histograms:
            out["histograms"] = {
                name: [[value, count] for value, count in sorted(hist.items())]
                for name, hist in sorted(self.histograms.items())
            }
        return out
