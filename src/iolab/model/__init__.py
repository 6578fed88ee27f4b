"""Plain data shared by every layer: results, metrics with units and directions. No I/O."""

from iolab.model.metrics import Direction, MetricInfo, metric_info
from iolab.model.result import Histogram, Job, Result
from iolab.model.sample import RunInfo, Sample

__all__ = [
    "Direction",
    "Histogram",
    "Job",
    "MetricInfo",
    "Result",
    "RunInfo",
    "Sample",
    "metric_info",
]
