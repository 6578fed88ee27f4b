"""Between the model's dataclasses and the store's rows.  Pure functions, no database.

Job names become keys of the `metrics.job` column, where '' is the result level.  fio gives
every clone of a `numjobs=N` job the same name, so repeated names are numbered
(`randread#1`, `randread#2`, …) in the order the source lists them; a unique name is kept.
"""

from __future__ import annotations

from array import array
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from itertools import repeat
from typing import Any, TypeVar

from iolab.model.result import Histogram, Result
from iolab.model.sample import RunInfo, Sample, case_key, cell_key

RESULT_LEVEL = ""
# fields of `Sample` and `RunInfo` that are stored as they are, one column of the same name
# each, in both directions (the others are copied, derived or come from other tables)
SAMPLE_AS_IS = (
    "variant",
    "block",
    "position",
    "status",
    "reason",
    "tool",
    "tool_version",
    "format",
    "source",
    "caption",
    "started_at",
    "finished_at",
    "host",
)
RUN_AS_IS = (
    "id",
    "kind",
    "label",
    "status",
    "created_at",
    "finished_at",
    "plan_text",
    "plan_hash",
    "plan_path",
    "host",
)
_T = TypeVar("_T")
CHUNK = 500  # values per IN (...) list: well inside every backend's parameter limit


def chunks(values: Sequence[_T]) -> Iterator[Sequence[_T]]:
    """`values` in slices of at most CHUNK, one IN (...) list each."""
    for i in range(0, len(values), CHUNK):
        yield values[i : i + CHUNK]


def job_keys(names: list[str]) -> list[str]:
    """Distinct, non-empty keys for a result's jobs (see the module docstring)."""
    if all(names) and len(set(names)) == len(names):
        return list(names)  # the common case: unique names are kept as they are
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
        started_at=result.started_at,
    )


def sample_values(sample: Sample) -> dict[str, Any]:
    """The `samples` row of a sample, as column → value (without its id)."""
    key = cell_key(sample.cell)
    return {
        **{name: getattr(sample, name) for name in SAMPLE_AS_IS},
        "run_id": sample.run_id,
        "cell": dict(sample.cell),
        "cell_key": key,
        "case_key": case_key(key, sample.variant),
        "provenance": dict(sample.provenance),
        "jobs": list(dict.fromkeys([*sample.job_metrics, *sample.job_histograms])),
    }


@dataclass(frozen=True)
class Columns:
    """Rows kept column by column: numbers in arrays, text in lists.  A batch crosses the
    pipe from the parsing process (ingest.background) as a few buffers, not as a tuple and
    a float object per row: unpickled in ~2 ms instead of ~16 ms per 500 fio files."""

    columns: tuple[Sequence[Any], ...]

    def __len__(self) -> int:
        return len(self.columns[0])

    def rows(self) -> Iterator[tuple[Any, ...]]:
        return zip(*self.columns, strict=True)


@dataclass(frozen=True)
class ImportBatch:
    """Results as the rows an import stores, made before the store gave the samples ids —
    where the files are parsed, which may be another process (ingest.background).  A metric
    or bin row starts with its sample's index in `samples` where the stored row has the id;
    each `samples` entry is a row of `sample_values` whose run id is set when it is stored.
    The rows are those of `metric_tuples` and `histogram_tuples`."""

    samples: list[dict[str, Any]]
    metrics: Columns  # (index, job, name, value)
    histograms: Columns  # (index, job, name, bin, count)


def import_batch(results: Iterable[Result]) -> ImportBatch:
    """The rows of one import sample per Result (see ImportBatch), put in columns level by
    level — not made as tuples and transposed, which took twice as long as the rest."""
    samples: list[dict[str, Any]] = []
    m_index, m_job, m_name, m_value = array("q"), list[str](), list[str](), array("d")
    h_index, h_job, h_name, h_bin, h_count = (
        array("q"),
        list[str](),
        list[str](),
        array("d"),
        array("q"),
    )
    for index, result in enumerate(results):
        sample = sample_from_result(result, 0)  # the run has no id yet
        samples.append(sample_values(sample))
        for job, metrics in _metric_levels(sample):
            names = list(metrics)
            values = [float(value) for value in metrics.values()]
            if sum(values) != sum(values):  # a NaN among them (or inf - inf): one by one
                kept = [(n, v) for n, v in zip(names, values, strict=True) if v == v]
                names, values = [n for n, _ in kept], [v for _, v in kept]
            m_index.extend(repeat(index, len(names)))
            m_job.extend(repeat(job, len(names)))
            m_name.extend(names)
            m_value.extend(values)
        for job, hists in _histogram_levels(sample):
            for name, hist in hists.items():
                h_index.extend(repeat(index, len(hist)))
                h_job.extend(repeat(job, len(hist)))
                h_name.extend(repeat(name, len(hist)))
                h_bin.extend(map(float, hist))
                h_count.extend(map(int, hist.values()))
    return ImportBatch(
        samples,
        Columns((m_index, m_job, m_name, m_value)),
        Columns((h_index, h_job, h_name, h_bin, h_count)),
    )


METRIC_COLUMNS = ("sample_id", "job", "name", "value")
HISTOGRAM_COLUMNS = ("sample_id", "job", "name", "bin", "count")


def metric_rows(sample_id: int, sample: Sample) -> list[dict[str, Any]]:
    """Rows for `metrics`; NaN is not a measurement and is left out."""
    return [dict(zip(METRIC_COLUMNS, row, strict=True)) for row in metric_tuples(sample_id, sample)]


def histogram_rows(sample_id: int, sample: Sample) -> list[dict[str, Any]]:
    return [
        dict(zip(HISTOGRAM_COLUMNS, row, strict=True))
        for row in histogram_tuples(sample_id, sample)
    ]


def metric_tuples(sample_id: int, sample: Sample) -> list[tuple[int, str, str, float]]:
    """The rows of `metric_rows` as (sample_id, job, name, value), for bulk inserts.
    (List comprehensions: an import builds a million of these rows.)"""
    return [
        (sample_id, job, name, number)
        for job, metrics in _metric_levels(sample)
        for name, value in metrics.items()
        if (number := float(value)) == number  # NaN is not a measurement
    ]


def histogram_tuples(sample_id: int, sample: Sample) -> list[tuple[int, str, str, float, int]]:
    """The rows of `histogram_rows` as (sample_id, job, name, bin, count)."""
    return [
        (sample_id, job, name, float(b), int(c))
        for job, hists in _histogram_levels(sample)
        for name, hist in hists.items()
        for b, c in hist.items()
    ]


def _metric_levels(sample: Sample) -> list[tuple[str, Mapping[str, float]]]:
    """(job key, metrics): the result level ('') first, then each job's."""
    levels: list[tuple[str, Mapping[str, float]]] = [(RESULT_LEVEL, sample.metrics)]
    levels.extend((_job(job), metrics) for job, metrics in sample.job_metrics.items())
    return levels


def _histogram_levels(sample: Sample) -> list[tuple[str, Mapping[str, Histogram]]]:
    levels: list[tuple[str, Mapping[str, Histogram]]] = [(RESULT_LEVEL, sample.histograms)]
    levels.extend((_job(job), hists) for job, hists in sample.job_histograms.items())
    return levels


def _job(name: str) -> str:
    if name == RESULT_LEVEL:
        raise ValueError("a job name must not be empty: '' is the result level")
    return name


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


def run_info(row: Mapping[Any, Any], tags: dict[str, str], counts: tuple[int, int]) -> RunInfo:
    """A `runs` row (columns by name, values decoded) with its tags and (samples, failed)."""
    return RunInfo(
        **{name: row[name] for name in RUN_AS_IS},
        tags=tags,
        meta=dict(row["meta"]),
        n_samples=counts[0],
        n_failed=counts[1],
    )


def run_infos(
    rows: Sequence[Mapping[Any, Any]],
    tags: Mapping[int, dict[str, str]],
    counts: Mapping[int, tuple[int, int]],
) -> list[RunInfo]:
    """`runs` rows with their tags and (samples, failed) counts, as both readers fetch them;
    a run without samples counts (0, 0)."""
    return [run_info(row, tags.get(row["id"], {}), counts.get(row["id"], (0, 0))) for row in rows]


def attach_tags(samples: Iterable[Sample], tags: Mapping[int, dict[str, str]]) -> None:
    """Give each sample its run's tags (a copy each: a caller may change one sample's)."""
    for sample in samples:
        sample.tags = dict(tags.get(sample.run_id, {}))


def sample_of(row: Mapping[Any, Any], label: str | None, with_jobs: bool) -> Sample:
    """A `samples` row (columns by name, values decoded) without its metrics and bins,
    which `fill_metrics` and `fill_histograms` add."""
    return Sample(
        **{name: row[name] for name in SAMPLE_AS_IS},
        id=row["id"],
        run_id=row["run_id"],
        cell=dict(row["cell"]),
        provenance=dict(row["provenance"]),
        label=label,
        job_metrics={job: {} for job in row["jobs"]} if with_jobs else {},
    )
