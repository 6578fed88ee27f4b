"""Series from the store: one per metric and case, one point per run or imported result.

A lab or ab run measured a case several times (blocks); its point is the median with the
median's distribution-free interval, so one noisy block does not move the history.  An
import holds results of unknown provenance, one point each.  Points are ordered by the
result's own time (fio's timestamp or header date for imports, the first sample's start
for lab runs; the run's creation time when the result carries none), or by a tag with
version sorting, so `kernel=6.9` comes before `kernel=6.10` and `6.10-rc1` before `6.10`.
"""

from __future__ import annotations

import math
import re
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from fnmatch import fnmatchcase
from functools import lru_cache
from pathlib import PurePath

from iolab.errors import IolabError
from iolab.history.types import Case, Point
from iolab.model.sample import RunInfo, Sample
from iolab.runs.meta import recorded_kpis

# an import's KPIs in a history: the iops of each direction.  Not also bw_bytes (as compare
# does): at a fixed block size it is the same series again, and one step would open two
# registry entries.  `--metric '*.bw_bytes'` shows it.
_IMPORT_KPIS = ("*.iops",)
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


@dataclass(frozen=True)
class RawSeries:
    metric: str
    case: Case
    points: list[Point]
    kpi: bool


def version_key(value: str) -> tuple[object, ...]:
    """Natural order for versions: 6.9 < 6.10, 6.10-rc1 < 6.10 < 6.10.1."""
    base, sep, rc = value.partition("-rc")

    def natural(text: str) -> tuple[tuple[int, int | str], ...]:
        return tuple(
            (0, int(tok)) if tok.isdigit() else (1, tok) for tok in re.split(r"(\d+)", text) if tok
        )

    return (natural(base), 0 if sep else 1, natural(rc))


def order_key(order: str) -> tuple[str, str | None]:
    """("time", None) or ("tag", KEY); IolabError (exit 2) for anything else."""
    if order == "time":
        return "time", None
    head, colon, key = order.partition(":")
    if head == "tag" and colon and key:
        return "tag", key
    raise IolabError(f"--order {order!r}: expected 'time' or 'tag:KEY'")


def _plan(run: RunInfo) -> str | None:
    if run.plan_path:
        return PurePath(run.plan_path).stem
    return run.plan_hash[:12] if run.plan_hash else None


def _kpis(run: RunInfo, names: set[str]) -> set[str]:
    recorded = {k.metric for k in recorded_kpis(run)} if run.kind != "import" else set()
    if recorded:
        return recorded
    return {n for n in names if any(fnmatchcase(n, g) for g in _IMPORT_KPIS)}


@lru_cache(maxsize=256)
def _orders(n: int) -> int | None:
    """k of the 95% order-statistic interval of a median of n (one scipy call per n)."""
    from iolab.stats.summary import median_ci_orders

    found = median_ci_orders(n, 0.95)
    return None if found is None else found[0]


def run_point(run: RunInfo, group: Sequence[Sample], name: str) -> Point:
    """A lab run's point: the median of its samples with the distribution-free interval."""
    values = sorted(s.metrics[name] for s in group)
    n = len(values)
    mid = n // 2
    median = values[mid] if n % 2 else (values[mid - 1] + values[mid]) / 2.0
    k = _orders(n)
    starts = [s.started_at for s in group if s.started_at is not None]
    return Point(
        run_id=run.id,
        sample_id=None,
        label=run.label,
        time=min(starts) if starts else run.created_at,
        tags=dict(group[0].tags),
        value=median,
        ci_low=values[k - 1] if k else None,
        ci_high=values[n - k] if k else None,
        n=n,
        se_log=_se_log(values),
    )


def _se_log(values: Sequence[float]) -> float | None:
    logs = [math.log(v) for v in values if v > 0]
    if len(logs) < 2:
        return None
    mean = sum(logs) / len(logs)
    sd = math.sqrt(sum((v - mean) ** 2 for v in logs) / (len(logs) - 1))
    return 1.2533 * sd / math.sqrt(len(logs))  # the median's SE under normal noise


def choose_metrics(
    names: set[str], runs: Sequence[RunInfo], globs: Sequence[str]
) -> tuple[set[str], set[str]]:
    """(metrics to show, which of them are KPIs): the globs' matches, else the KPIs.

    A lab run's KPIs are its plan's (recorded in the run); an import's are the iops of every
    direction present.
    """
    kpis: set[str] = set()
    for run in runs:
        kpis |= _kpis(run, names) & names
    if not globs:
        return kpis, kpis
    wanted = {n for n in names if any(fnmatchcase(n, g) for g in globs)}
    if not wanted:
        shown = ", ".join(sorted(names)[:8]) + (" …" if len(names) > 8 else "")
        raise IolabError(
            f"--metric {' '.join(globs)}: matches none of the metrics selected ({shown})"
        )
    return wanted, kpis & wanted


def build(
    samples: Sequence[Sample],
    runs: dict[int, RunInfo],
    wanted: set[str],
    kpis: set[str],
    by: Sequence[str],
    order: str,
) -> tuple[list[RawSeries], list[str]]:
    """Group samples into series and points; warnings for what had to be left out."""
    how, tag = order_key(order)
    warnings: list[str] = []
    # (metric, case key) -> run -> samples
    groups: dict[tuple[str, str], dict[int, list[Sample]]] = defaultdict(lambda: defaultdict(list))
    cases: dict[str, Case] = {}
    missing_tag = 0
    for sample in samples:
        run = runs[sample.run_id]
        if how == "tag" and tag not in sample.tags:
            missing_tag += 1
            continue
        case = Case(
            plan=_plan(run),
            variant=sample.variant,
            cell={k: str(v) for k, v in sample.cell.items()},
            host=run.host,
            extra={k: sample.tags.get(k, "") for k in by},
        )
        key = case.key
        cases.setdefault(key, case)
        for name in wanted & sample.metrics.keys():
            groups[(name, key)][sample.run_id].append(sample)
    if missing_tag:
        warnings.append(f"{missing_tag} sample(s) without tag {tag!r} left out of the order")

    out: list[RawSeries] = []
    for (name, key), by_run in sorted(groups.items()):
        points: list[Point] = []
        for run_id, group in by_run.items():
            run = runs[run_id]
            if run.kind == "import":
                for s in group:
                    v = s.metrics[name]
                    points.append(
                        Point(
                            run_id,
                            s.id,
                            run.label,
                            s.started_at or run.created_at,
                            dict(s.tags),
                            v,
                            None,
                            None,
                            1,
                            None,
                        )
                    )
                continue
            points.append(run_point(run, group, name))
        if how == "tag":
            assert tag is not None
            points.sort(key=lambda p: (version_key(p.tags[tag]), p.time or _EPOCH, p.run_id))
        else:
            points.sort(key=lambda p: (p.time or _EPOCH, p.run_id, p.sample_id or 0))
        out.append(RawSeries(name, cases[key], points, name in kpis))
    return out, warnings
