"""Raw samples in Go's benchmark format, for benchstat and any other Go-format tool.

    # iolab export of 'label:old': 8 samples
    Unit write.iops better=higher
    Unit write.clat_ns.p99 better=lower
    BenchmarkIolab/bs=4k 1 353000 write.iops 1.446e+09 write.bw_bytes …

One line per sample with every metric it holds (the "iterations" field is 1: a sample is one
measurement, not a mean over N iterations).  The unit of each value is iolab's metric name, so
benchstat shows one table per metric and never merges two metrics that share a physical unit;
`Unit … better=higher|lower` comes from iolab's metric table, so benchstat's direction of
"better" is iolab's.  The benchmark name is `BenchmarkIolab` plus the sample's matrix cell as
`/key=value` parts, which benchstat reads as name keys.  Config lines (`key: value`) are not
written: benchstat splits tables by configuration, so two exported sides must not differ there;
the header is a comment line, which Go-format readers skip.
"""

from __future__ import annotations

import fnmatch
import math
import re
from collections.abc import Sequence

from iolab.model.metrics import Direction, metric_info
from iolab.model.sample import Sample

_UNSAFE = re.compile(r"\s+")


def _token(text: str) -> str:
    return _UNSAFE.sub("_", text.strip()) or "_"


def benchmark_name(sample: Sample) -> str:
    parts = "".join(f"/{_token(str(k))}={_token(str(v))}" for k, v in sorted(sample.cell.items()))
    return f"BenchmarkIolab{parts}"


def _wanted(name: str, globs: Sequence[str]) -> bool:
    return not globs or any(fnmatch.fnmatchcase(name, g) for g in globs)


def render(samples: Sequence[Sample], selector: str, metrics: Sequence[str] = ()) -> str:
    """The samples as Go benchmark lines, metrics filtered by `metrics` globs."""
    names = sorted({n for s in samples for n in s.metrics if _wanted(n, metrics)})
    out = [f"# iolab export of {selector!r}: {len(samples)} samples"]
    for name in names:
        direction = metric_info(name).direction
        if direction is not Direction.NEUTRAL:
            out.append(f"Unit {_token(name)} better={direction.value}")
    for sample in samples:
        fields = [
            f"{value!r} {_token(name)}"
            for name, value in sorted(sample.metrics.items())
            if _wanted(name, metrics) and math.isfinite(value)
        ]
        if fields:
            out.append(f"{benchmark_name(sample)} 1 {' '.join(fields)}")
    return "\n".join(out) + "\n"
