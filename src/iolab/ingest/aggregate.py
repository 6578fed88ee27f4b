"""Result-level metrics from per-job metrics, the way fio's group report combines jobs.

Sums for rates and totals; min/max/mean/stddev of latency combine exactly from each job's
(N, mean, stddev); percentiles only from one job or from merged histogram bins — an average
of percentiles is not a percentile, so when neither is available none is reported.

Jobs of different groups (`stonewall`, `new_group`) ran one after the other, so their rates
must not be summed: fio reports each group on its own.  A direction that only one group
did keeps the plain names (`write.iops` of a write-then-read job file); a direction that
several groups did is reported per group only, as `group<N>.write.iops` (docs/parse-json.md).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from iolab.model.metrics import IO_DIRECTIONS, LATENCY_KINDS
from iolab.model.result import Histogram, Job
from iolab.stats.bins import histogram_percentiles, merge_histograms

_SUMMED = ("iops", "bw_bytes", "io_bytes", "total_ios", "short_ios")
_LAT_DIRS = (*IO_DIRECTIONS, "sync")


def _combine_latency(jobs: Sequence[Job], prefix: str) -> dict[str, float]:
    """min/max/mean/stddev of `prefix` (e.g. `write.clat_ns`) over jobs, weighted by I/O count."""
    parts: list[tuple[float, float, float]] = []  # (n, mean, stddev)
    mins: list[float] = []
    maxs: list[float] = []
    ddir = prefix.split(".")[0]
    measured = [job for job in jobs if f"{prefix}.mean" in job.metrics]
    for job in measured:
        mean = job.metrics[f"{prefix}.mean"]
        # weight by I/O count; terse output has no count, so bytes stand in (same block size)
        n = job.metrics.get(
            f"{prefix}.samples",
            job.metrics.get(f"{ddir}.total_ios", job.metrics.get(f"{ddir}.io_bytes", 0.0)),
        )
        if n <= 0:
            if len(measured) > 1:
                continue
            n = 1.0  # the only job that measured it: no weight needed (fio's sync N quirk)
        parts.append((n, mean, job.metrics.get(f"{prefix}.stddev", 0.0)))
        if f"{prefix}.min" in job.metrics:
            mins.append(job.metrics[f"{prefix}.min"])
        if f"{prefix}.max" in job.metrics:
            maxs.append(job.metrics[f"{prefix}.max"])
    if not parts:
        return {}
    total = sum(n for n, _, _ in parts)
    mean = sum(n * m for n, m, _ in parts) / total
    # pooled variance: E[x^2] - mean^2, with each job's population-style variance
    second = sum(n * (s * s + m * m) for n, m, s in parts) / total
    out = {f"{prefix}.mean": mean}
    spread = second - mean * mean
    if math.isfinite(spread):  # squares of absurd means (1e149 ns) overflow: no stddev then
        out[f"{prefix}.stddev"] = math.sqrt(max(spread, 0.0))
    if mins:
        out[f"{prefix}.min"] = min(mins)
    if maxs:
        out[f"{prefix}.max"] = max(maxs)
    return out


def aggregate_jobs(jobs: Sequence[Job]) -> tuple[dict[str, float], dict[str, Histogram]]:
    """Result-level metrics and histograms for a list of jobs, group by group."""

    def group_of(job: Job) -> int:
        return job.group if job.group is not None else 0  # fio's first group is 0

    groups = sorted({group_of(job) for job in jobs})
    if len(groups) <= 1:
        return _aggregate_group(jobs)
    per_group = {g: _aggregate_group([j for j in jobs if group_of(j) == g]) for g in groups}
    metrics: dict[str, float] = {}
    histograms: dict[str, Histogram] = {}
    heads = {g: _heads(per_group[g][0]) for g in groups}
    for ddir in _LAT_DIRS:
        prefix = ddir + "."
        doing = [g for g in groups if ddir in heads[g]]
        for g in doing:
            group_metrics, group_histograms = per_group[g]
            name = "" if len(doing) == 1 else f"group{g}."
            metrics.update((name + k, v) for k, v in group_metrics.items() if k.startswith(prefix))
            histograms.update(
                (name + k, v) for k, v in group_histograms.items() if k.startswith(prefix)
            )
    metrics.update(_cpu(jobs))
    return metrics, histograms


def _aggregate_group(jobs: Sequence[Job]) -> tuple[dict[str, float], dict[str, Histogram]]:
    """Metrics and histograms of jobs that ran together, combined like fio's group report."""
    if len(jobs) == 1:
        return dict(jobs[0].metrics), {k: dict(v) for k, v in jobs[0].histograms.items()}
    metrics: dict[str, float] = {}
    histograms: dict[str, Histogram] = {}
    heads = [_heads(job.metrics) for job in jobs]
    for ddir in _LAT_DIRS:
        active = [job for job, head in zip(jobs, heads, strict=True) if ddir in head]
        if not active:
            continue
        for key in _SUMMED:
            values = [j.metrics[f"{ddir}.{key}"] for j in active if f"{ddir}.{key}" in j.metrics]
            if values:
                metrics[f"{ddir}.{key}"] = sum(values)
        runtime_key = f"{ddir}.runtime_ms"
        runtimes = [j.metrics[runtime_key] for j in active if runtime_key in j.metrics]
        if runtimes:
            metrics[f"{ddir}.runtime_ms"] = max(runtimes)
        for kind in LATENCY_KINDS:
            prefix = f"{ddir}.{kind}"
            metrics.update(_combine_latency(active, prefix))
            carriers = [j for j in active if f"{prefix}.mean" in j.metrics]
            if len(carriers) == 1:
                # one job measured this latency: its percentiles are the group's
                only = carriers[0]
                metrics.update(
                    (k, v) for k, v in only.metrics.items() if k.startswith(f"{prefix}.p")
                )
                if prefix in only.histograms:
                    histograms[prefix] = dict(only.histograms[prefix])
                continue
            hists = [j.histograms[prefix] for j in carriers if prefix in j.histograms]
            if hists and len(hists) == len(carriers):
                merged = merge_histograms(hists)
                histograms[prefix] = merged
                for name, value in histogram_percentiles(merged).items():
                    metrics[f"{prefix}.{name}"] = value
    metrics.update(_cpu(jobs))
    return metrics, histograms


def _heads(metrics: dict[str, float]) -> set[str]:
    """The first parts of dotted metric names (`read` of `read.iops`): which directions a
    set of metrics has, found in one pass rather than one per direction."""
    return {name.partition(".")[0] for name in metrics if "." in name}


def _cpu(jobs: Sequence[Job]) -> dict[str, float]:
    """CPU figures over all jobs: usage shares averaged, counts summed."""
    out: dict[str, float] = {}
    for key in ("cpu.usr_pct", "cpu.sys_pct"):
        values = [j.metrics[key] for j in jobs if key in j.metrics]
        if values:
            out[key] = sum(values) / len(values)
    for key in ("cpu.ctx", "cpu.majf", "cpu.minf"):
        values = [j.metrics[key] for j in jobs if key in j.metrics]
        if values:
            out[key] = sum(values)
    return out
