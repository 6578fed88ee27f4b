"""`--format brief`: the answer and what moved, in a dozen lines — what `make demo` shows.

Per comparison: one line per KPI with its change, interval and verdict (the sequential one
after `iolab ab`: the blocks it took, or "not known yet — N more blocks"), then only the
evidence that moved significantly after the table's joint correction, named (secondary
metrics and histograms, medians per sample A → B), at most `EVIDENCE_LINES` of them — kernel
evidence first, at most `PER_SOURCE` per source before any source gets more, the largest
changes first — and how many did not move.  Everything else is in `--format table` /
`iolab compare RUN --all`.
"""

from __future__ import annotations

import math

from iolab.report import fmt
from iolab.report.model import Group, Report, is_evidence, procedure, shown_secondary
from iolab.report.options import RenderOptions
from iolab.stats.types import HistogramShift, MetricComparison, SequentialState
from iolab.textsafe import shown

EVIDENCE_LINES = 10
PER_SOURCE = 4  # lines per source (jbd2, hist, vmstat, diskstats, ...) before the others'
# kernel evidence first: it is the "why" beside the number
_FIRST = ("jbd2.", "hist.", "vmstat.", "diskstats.")


def _kpi_line(group: Group, m: MetricComparison, state: SequentialState | None) -> str:
    interval = (fmt.ci if state is None else fmt.sequence_ci)(m.ci_low_pct, m.ci_high_pct)
    head = f"{group.title}: {m.name} {fmt.pct(m.change_pct)} {interval}"
    if state is not None:
        blocks = f"{state.n_blocks} block{'s' if state.n_blocks != 1 else ''}"
        if state.verdict == "inconclusive":
            more = f" — {state.runs_needed} more blocks" if state.runs_needed is not None else ""
            return f"{head} after {blocks}: not known yet{more} ({state.reason})"
        verdict = fmt.verdict(m) if m.verdict == "no change" else m.verdict
        return f"{head}: {verdict}, decided after {blocks}"
    n = f"{m.n_pairs} pairs" if m.paired else f"{m.a.n} vs {m.b.n} samples"
    if m.verdict == "inconclusive":
        more = f" — {m.runs_needed} more runs per side" if m.runs_needed is not None else ""
        return f"{head} from {n}: not known yet{more}"
    return f"{head} from {n}: {fmt.verdict(m)}"


def _moved_metric(m: MetricComparison, with_interval: bool = True) -> tuple[str, str]:
    """`with_interval=False` where the row's interval (at the corrected level) would
    contradict the line's "significant on its own"."""
    values = f"{fmt.value(m.a.median, m.unit)} → {fmt.value(m.b.median, m.unit)}"
    if m.a.min > 0 and m.b.min > 0 and m.change_pct is not None:  # a relative change
        bounded = with_interval and m.ci_low_pct is not None and m.ci_high_pct is not None
        interval = f" {fmt.ci(m.ci_low_pct, m.ci_high_pct)}" if bounded else ""
        values += f"   ({fmt.pct(m.change_pct)}{interval})"
    if m.aliases:
        values += f"   = {', '.join(m.aliases)}"
    return m.name, values


def _moved_shift(s: HistogramShift) -> tuple[str, str]:
    means = ""
    if s.mean_a is not None and s.mean_b is not None:
        means = f", mean {fmt.sig(s.mean_a, 3)} → {fmt.sig(s.mean_b, 3)}"
    return s.name, f"{100 * s.total_variation:.1f}% of events moved{means}"


def _rank(name: str) -> tuple[int, str]:
    for i, prefix in enumerate(_FIRST):
        if name.startswith(prefix):
            return i, name
    return len(_FIRST), name


def _largest_first(m: MetricComparison) -> tuple[int, float, str]:
    """Kernel evidence first, then the largest relative change (a change to or past -100%,
    possible on the raw scale of values <= 0, counts as the largest)."""
    change = m.change_pct
    if change is None:
        size = 0.0
    elif change <= -100:
        size = math.inf
    else:
        size = abs(math.log1p(change / 100))
    return _rank(m.name)[0], -size if math.isfinite(size) else -math.inf, m.name


def _aligned(rows: list[tuple[str, str]]) -> list[str]:
    width = max(len(name) for name, _ in rows)
    return [f"  {name:<{width}}  {text}" for name, text in rows]


def _source(name: str) -> str:
    """What measured a metric: its name up to the first dot (jbd2, hist, diskstats, write)."""
    return name.split(".", 1)[0]


def _selected(moved: list[tuple[str, str, float]]) -> list[tuple[str, str]]:
    """At most EVIDENCE_LINES of the moved lines (name, text, size): sources in `_rank`
    order, the largest change first within a source, and at most PER_SOURCE of one source
    until every source had its turn."""
    moved = sorted(moved, key=lambda item: (_rank(item[0])[0], _source(item[0]), -item[2]))
    first: list[tuple[str, str, float]] = []
    later: list[tuple[str, str, float]] = []
    taken: dict[str, int] = {}
    for item in moved:
        n = taken.get(_source(item[0]), 0)
        (first if n < PER_SOURCE else later).append(item)
        taken[_source(item[0])] = n + 1
    chosen = (first + later)[:EVIDENCE_LINES]
    chosen.sort(key=lambda item: moved.index(item))
    return [(name, text) for name, text, _ in chosen]


def _size(m: MetricComparison) -> float:
    return -_largest_first(m)[1]


def _group_lines(group: Group, alpha: float) -> list[str]:
    states = {s.name: s for s in group.sequential}
    comp = group.comparison
    lines = [_kpi_line(group, m, states.get(m.name)) for m in comp.kpis]
    secondary = shown_secondary(comp)
    shifted = [s for s in comp.histogram_shifts if s.verdict == "changed"]
    # a moved histogram's line already says its mean: its .mean/.count rows would repeat it
    said = tuple(f"{s.name}." for s in shifted)
    evidence = [m for m in secondary if is_evidence(m)]
    moved = [(*_moved_shift(s), math.inf) for s in shifted]
    moved += [(*_moved_metric(m), _size(m)) for m in evidence if not m.name.startswith(said)]
    # significant alone but not after the table's correction: with few samples (an `ab` that
    # decided after a handful of blocks) even a counter that fell 1,000-fold lands here, so
    # it is counted apart and not said "not to move"
    before_correction = [
        m for m in secondary if not is_evidence(m) and m.p_value is not None and m.p_value <= alpha
    ]
    quiet = len(secondary) + len(comp.histogram_shifts) - len(evidence) - len(shifted)
    quiet -= len(before_correction)
    joint = "after the joint correction" if comp.procedure.startswith("Westfall") else ""
    if moved:
        lines.append(
            f"what moved{' ' + joint if joint else ''} "
            f"(median per sample, {group.a_name} → {group.b_name}):"
        )
        lines += _aligned(_selected(moved))
        if len(moved) > EVIDENCE_LINES:
            lines.append(f"  … and {len(moved) - EVIDENCE_LINES} more that moved")
    else:
        lines.append("no secondary metric or histogram moved significantly")
    lines.append(f"  (corrected by {procedure(comp)})")
    if before_correction:
        before_correction.sort(key=_largest_first)
        room = max(3, EVIDENCE_LINES - len(moved))
        lines.append(
            f"at p ≤ {alpha:g} on their own, not after the correction for the table's tests "
            f"({group.a_name} → {group.b_name}):"
        )
        lines += _aligned([_moved_metric(m, False) for m in before_correction[:room]])
        if len(before_correction) > room:
            lines.append(f"  … and {len(before_correction) - room} more")
    if quiet > 0:
        lines.append(f"  ({quiet} other metric(s) and histogram(s) not shown to move)")
    return lines


def render(report: Report, options: RenderOptions) -> str:
    out: list[str] = []
    for i, group in enumerate(report.groups):
        if i:
            out.append("")
        out += _group_lines(group, report.alpha)
    # names and titles come from the user's files: control characters shown as escapes
    return "".join(f"{shown(line)}\n" for line in out)
