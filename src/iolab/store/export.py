"""Runs and samples as plain JSON objects — the `iolab results --json` format (docs/store.md)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from iolab.model.result import Histogram
from iolab.model.sample import RunInfo, Sample


def _time(value: datetime | None) -> str | None:
    return value.isoformat() if value is not None else None


def _bins(hists: dict[str, Histogram]) -> dict[str, list[list[float]]]:
    return {
        name: [[value, count] for value, count in sorted(hist.items())]
        for name, hist in sorted(hists.items())
    }


def run_to_json(run: RunInfo) -> dict[str, Any]:
    return {
        "id": run.id,
        "kind": run.kind,
        "label": run.label,
        "status": run.status,
        "created_at": _time(run.created_at),
        "finished_at": _time(run.finished_at),
        "host": run.host,
        "plan_path": run.plan_path,
        "plan_hash": run.plan_hash,
        "tags": dict(sorted(run.tags.items())),
        "meta": run.meta,
        "n_samples": run.n_samples,
        "n_failed": run.n_failed,
    }


def sample_to_json(sample: Sample) -> dict[str, Any]:
    return {
        "id": sample.id,
        "run_id": sample.run_id,
        "label": sample.label,
        "tags": dict(sorted(sample.tags.items())),
        "variant": sample.variant,
        "cell": sample.cell,
        "block": sample.block,
        "position": sample.position,
        "host": sample.host,
        "status": sample.status,
        "reason": sample.reason,
        "tool": sample.tool,
        "tool_version": sample.tool_version,
        "format": sample.format,
        "source": sample.source,
        "caption": sample.caption,
        "started_at": _time(sample.started_at),
        "finished_at": _time(sample.finished_at),
        "metrics": dict(sorted(sample.metrics.items())),
        "jobs": [
            {
                "name": job,
                "metrics": dict(sorted(metrics.items())),
                "histograms": _bins(sample.job_histograms.get(job, {})),
            }
            for job, metrics in sample.job_metrics.items()
        ],
        "histograms": _bins(sample.histograms),
        "provenance": sample.provenance,
    }
