"""One fio run written in two forms (`--output-format=terse,normal` or `normal,terse`) is one
result, not two.

fio prints every requested form of the same run one after the other, so the terse reader and
the text reader each find it.  Two neighbouring results — one terse, one text — are the same
run when they name the same jobs in the same order and every direction moved the same bytes
(the text rounds sizes to 4 significant figures, hence a tolerance).  The merged result keeps
the terse numbers (iops and KiB/s are not rounded there) and adds what only the text has
(latencies in ns rather than whole µs, disk stats, the version line's caption).
"""

from __future__ import annotations

from iolab.model.result import Result

_BYTES_TOLERANCE = 0.005


def merge(found: list[tuple[int, Result]]) -> list[tuple[int, Result]]:
    """`found` sorted by line, with each terse/text pair of one run merged into one result."""
    out: list[tuple[int, Result]] = []
    i = 0
    while i < len(found):
        if i + 1 < len(found) and _same_run(found[i][1], found[i + 1][1]):
            first, second = found[i][1], found[i + 1][1]
            terse, text = (first, second) if first.format == "fio-terse" else (second, first)
            out.append((found[i][0], _merged(terse, text)))
            i += 2
        else:
            out.append(found[i])
            i += 1
    return out


def _same_run(a: Result, b: Result) -> bool:
    if {a.format, b.format} != {"fio-terse", "fio-text"}:
        return False
    if [j.name for j in a.jobs] != [j.name for j in b.jobs]:
        return False
    if a.tool_version and b.tool_version and a.tool_version != b.tool_version:
        return False
    sizes_a = {k: v for k, v in a.metrics.items() if k.endswith(".io_bytes") and v > 0}
    sizes_b = {k: v for k, v in b.metrics.items() if k.endswith(".io_bytes") and v > 0}
    if not sizes_a or sizes_a.keys() != sizes_b.keys():
        return False
    return all(
        abs(sizes_a[k] - sizes_b[k]) <= _BYTES_TOLERANCE * max(sizes_a[k], sizes_b[k])
        for k in sizes_a
    )


def _finer(text_key: str) -> bool:
    """Metrics the text prints at a finer resolution than terse (latencies: ns vs whole µs)."""
    return "_ns." in text_key


def _merged(terse: Result, text: Result) -> Result:
    metrics = dict(terse.metrics)
    for key, value in text.metrics.items():
        if key not in metrics or _finer(key):
            metrics[key] = value
    jobs = []
    for terse_job, text_job in zip(terse.jobs, text.jobs, strict=True):
        job_metrics = dict(terse_job.metrics)
        for key, value in text_job.metrics.items():
            if key not in job_metrics or _finer(key):
                job_metrics[key] = value
        terse_job.metrics = job_metrics
        jobs.append(terse_job)
    terse.metrics = metrics
    terse.jobs = jobs
    terse.tool_version = terse.tool_version or text.tool_version
    terse.caption = terse.caption or text.caption
    return terse
