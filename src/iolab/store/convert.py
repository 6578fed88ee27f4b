"""Between the model's dataclasses and the store's rows.  Pure functions, no database.

Job names become keys of the `metrics.job` column, where '' is the result level.  fio gives
every clone of a `numjobs=N` job the same name, so repeated names are numbered
(`randread#1`, `randread#2`, …) in the order the source lists them; a unique name is kept.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Mapping
from typing import Any

from iolab.model.result import Histogram, Result
from iolab.model.sample import Sample

RESULT_LEVEL = ""


def cell_key(cell: Mapping[str, Any]) -> str:
    """The canonical text of a matrix cell, the same as `Sample.case_key` puts before `|`."""
    return ",".join(f"{k}={cell[k]}" for k in sorted(cell))


def case_key(cell_text: str, variant: str | None) -> str:
    return f"{cell_text}|{variant or ''}"


def job_keys(names: list[str]) -> list[str]:
    """Distinct, non-empty keys for a result's jobs (see the module docstring)."""
    counts = Counter(names)
    seen: Counter[str] = Counter()
    keys = []
    for name in names:
        base = name or "job"
        if counts[name] > 1 or not name:
            seen[base] += 1
            keys.append(f"{base}#{seen[base]}")
        else:
            keys.append(name)
    return keys


def sample_from_result(result: Result, run_id: int) -> Sample:
    """One import sample per Result: its metrics, its jobs' metrics and every histogram.

    What the store has no column for (global and per-job options, fio groups) goes to
    provenance, so nothing the parser found is lost.
    """
    keys = job_keys([job.name for job in result.jobs])
    jobs_prov = {
        key: {"name": job.name, "group": job.group, "options": dict(job.options)}
        for key, job in zip(keys, result.jobs, strict=True)
    }
    return Sample(
        run_id=run_id,
        tool=result.tool,
        tool_version=result.tool_version,
        format=result.format,
        source=result.source,
        caption=result.caption,
        metrics=dict(result.metrics),
        job_metrics={key: dict(job.metrics) for key, job in zip(keys, result.jobs, strict=True)},
        histograms={name: dict(h) for name, h in result.histograms.items()},
        job_histograms={
            key: {name: dict(h) for name, h in job.histograms.items()}
            for key, job in zip(keys, result.jobs, strict=True)
            if job.histograms
        },
        provenance={"options": dict(result.options), "jobs": jobs_prov},
    )


def metric_rows(sample_id: int, sample: Sample) -> list[dict[str, Any]]:
    """Rows for `metrics`; NaN is not a measurement and is left out."""
    rows = _metric_rows(sample_id, RESULT_LEVEL, sample.metrics)
    for job, metrics in sample.job_metrics.items():
        rows.extend(_metric_rows(sample_id, _job(job), metrics))
    return rows


def histogram_rows(sample_id: int, sample: Sample) -> list[dict[str, Any]]:
    rows = _histogram_rows(sample_id, RESULT_LEVEL, sample.histograms)
    for job, hists in sample.job_histograms.items():
        rows.extend(_histogram_rows(sample_id, _job(job), hists))
    return rows


def _job(name: str) -> str:
    if name == RESULT_LEVEL:
        raise ValueError("a job name must not be empty: '' is the result level")
    return name


def _metric_rows(sample_id: int, job: str, metrics: Mapping[str, float]) -> list[dict[str, Any]]:
    return [
        {"sample_id": sample_id, "job": job, "name": name, "value": float(value)}
        for name, value in metrics.items()
        if not math.isnan(float(value))
    ]


def _histogram_rows(
    sample_id: int, job: str, hists: Mapping[str, Histogram]
) -> list[dict[str, Any]]:
    return [
        {"sample_id": sample_id, "job": job, "name": name, "bin": float(b), "count": int(c)}
        for name, hist in hists.items()
        for b, c in hist.items()
    ]


def fill_metrics(
    samples: Mapping[int, Sample], rows: Iterable[tuple[int, str, str, float]]
) -> None:
    """Put (sample_id, job, name, value) rows into the samples they belong to."""
    for sample_id, job, name, value in rows:
        sample = samples[sample_id]
        if job == RESULT_LEVEL:
            sample.metrics[name] = value
        else:
            sample.job_metrics.setdefault(job, {})[name] = value


def fill_histograms(
    samples: Mapping[int, Sample], rows: Iterable[tuple[int, str, str, float, int]]
) -> None:
    for sample_id, job, name, bin_value, count in rows:
        sample = samples[sample_id]
        if job == RESULT_LEVEL:
            hists = sample.histograms
        else:
            hists = sample.job_histograms.setdefault(job, {})
        hists.setdefault(name, {})[bin_value] = count
