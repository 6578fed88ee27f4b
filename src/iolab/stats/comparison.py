"""Compare two sets of samples metric by metric, and a whole table with multiplicity control.

Paired analysis is used when the caller passes block ids (randomized complete blocks from the
lab): within-block log ratios cancel the machine's drift, which the unpaired test reads as
noise.  Imports without blocks get the unpaired Mann–Whitney analysis.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np
from numpy.typing import NDArray

from iolab.model.metrics import Direction, metric_info
from iolab.stats import shift as sh
from iolab.stats._nulls import (
    min_p_paired,
    min_p_unpaired,
    mwu_lower_count,
    signed_rank_lower_count,
)
from iolab.stats.histogram import HistogramInput, histogram_shift
from iolab.stats.multiple import adjust, graphical_holm
from iolab.stats.summary import summarize
from iolab.stats.types import Comparison, Correction, MetricComparison, MetricInput, Summary
from iolab.stats.verdict import decide, runs_needed

DEFAULT_ALPHA = 0.05
DEFAULT_MARGIN_PCT = 1.0
DEFAULT_SECONDARY_SHARE = 0.2  # of alpha, for secondary metrics until every KPI is decided


def pair_by_block(
    a: Sequence[float],
    b: Sequence[float],
    blocks_a: Sequence[str | int],
    blocks_b: Sequence[str | int],
) -> tuple[NDArray[np.float64], NDArray[np.float64], list[str]]:
    """Values of A and B that share a block id, in block order; repeated ids are averaged."""
    if len(a) != len(blocks_a) or len(b) != len(blocks_b):
        raise ValueError("each sample needs exactly one block id")
    warnings: list[str] = []
    side_a: dict[str | int, list[float]] = defaultdict(list)
    side_b: dict[str | int, list[float]] = defaultdict(list)
    for v, k in zip(a, blocks_a, strict=True):
        side_a[k].append(float(v))
    for v, k in zip(b, blocks_b, strict=True):
        side_b[k].append(float(v))
    common = [k for k in side_a if k in side_b]
    dropped = len(side_a) + len(side_b) - 2 * len(common)
    if dropped:
        warnings.append(f"{dropped} block(s) without a partner on the other side were left out")
    if any(len(side_a[k]) > 1 or len(side_b[k]) > 1 for k in common):
        warnings.append("some blocks hold several runs of one side: their mean was used")
    pa = np.array([float(np.mean(side_a[k])) for k in common])
    pb = np.array([float(np.mean(side_b[k])) for k in common])
    return pa, pb, warnings


def _min_n_unpaired(alpha: float) -> int:
    n = 1
    while min_p_unpaired(n, n) > alpha:
        n += 1
    return n


def _min_n_paired(alpha: float) -> int:
    n = 1
    while min_p_paired(n) > alpha:
        n += 1
    return n


def _min_n_ci_paired(alpha: float) -> int:
    n = 1
    while signed_rank_lower_count(n, alpha) < 1:
        n += 1
    return n


def _min_n_ci_unpaired(alpha: float) -> int:
    n = 1
    while mwu_lower_count(n, n, alpha) < 1:
        n += 1
    return n


def _nan_to_one(p: float) -> float:
    return 1.0 if not math.isfinite(p) else p


@dataclass(frozen=True)
class _Prepared:
    """Everything about one metric's comparison that does not depend on the interval's
    level: a table judges most metrics at a level that depends on all the others' p-values
    (Holm), and only the interval is computed again at it, from these breakpoints."""

    item: MetricInput
    direction: Direction
    unit: str
    warnings: tuple[str, ...]
    sum_a: Summary
    sum_b: Summary
    paired: bool
    sizes: tuple[int, int]  # (pairs, 0) paired; (n_a, n_b) unpaired
    breakpoints: NDArray[np.float64]  # sorted Walsh averages or pairwise differences
    estimate: float
    p_value: float  # raw, possibly nan
    min_p: float
    test: str
    n: int
    tost: float | None
    sd: float | None
    log_scale: bool
    scale: float
    bounds: tuple[float, float] | None


def _prepare(item: MetricInput, alpha: float, margin_pct: float) -> _Prepared:
    if not 0 < alpha < 0.5:
        raise ValueError("alpha must be in (0, 0.5)")
    if margin_pct <= 0 or margin_pct >= 100:
        raise ValueError("margin_pct must be in (0, 100)")
    if len(item.a) == 0 or len(item.b) == 0:
        raise ValueError(f"{item.name}: both sides need at least one sample")
    info = metric_info(item.name)
    direction = item.direction if item.direction is not None else info.direction
    unit = item.unit if item.unit is not None else info.unit
    warnings: list[str] = []
    sum_a, sum_b = summarize(item.a), summarize(item.b)

    paired = item.blocks_a is not None and item.blocks_b is not None
    if paired:
        assert item.blocks_a is not None and item.blocks_b is not None
        va, vb, pw = pair_by_block(item.a, item.b, item.blocks_a, item.blocks_b)
        warnings += pw
        if va.size == 0:
            warnings.append("no block holds both sides: compared unpaired")
            paired = False
    if not paired:
        va = np.asarray(item.a, dtype=float)
        vb = np.asarray(item.b, dtype=float)

    log_scale = bool(np.all(va > 0) and np.all(vb > 0))
    scale = abs(sh.sorted_median(np.sort(va)))  # np.median, without loading numpy.ma
    if log_scale:
        xa, xb = np.log(va), np.log(vb)
        bounds: tuple[float, float] | None = (sh.from_pct(-margin_pct), sh.from_pct(margin_pct))
    else:
        # Zero or negative values have no log: work on the raw scale, in units of A's median.
        warnings.append(
            "values <= 0: the change is computed on the raw scale, relative to A's median"
        )
        unit_scale = scale if scale > 0 else 1.0
        xa, xb = va / unit_scale, vb / unit_scale
        bounds = (-margin_pct / 100.0, margin_pct / 100.0) if scale > 0 else None

    if paired:
        d = xb - xa
        breakpoints = sh.walsh_averages(d)
        p_value = sh.signed_rank_p(d)
        tost = None if bounds is None else sh.tost_p(None, None, d, bounds)
        sd = float(np.std(d, ddof=1)) if d.size >= 2 else None
        min_p = min_p_paired(int(np.count_nonzero(d)))
        sizes, n, test = (int(d.size), 0), int(d.size), "wilcoxon signed-rank (paired, log ratios)"
        if min_p > alpha:
            warnings.append(
                f"{d.size} pairs can never reach p <= {alpha:g} "
                f"(smallest possible p {min_p:.2g}); need >= {_min_n_paired(alpha)} pairs"
            )
    else:
        breakpoints = sh.unpaired_breakpoints(xa, xb)
        p_value = sh.mwu_p(xa, xb)
        tost = None if bounds is None else sh.tost_p(xa, xb, None, bounds)
        sds = [float(np.std(x, ddof=1)) for x in (xa, xb) if x.size >= 2]
        sd = float(np.sqrt(np.mean(np.square(sds)))) if sds else None
        min_p = min_p_unpaired(xa.size, xb.size)
        sizes, n, test = (xa.size, xb.size), min(xa.size, xb.size), "mann-whitney u"
        if min_p > alpha:
            warnings.append(
                f"{xa.size} vs {xb.size} samples can never reach p <= {alpha:g} "
                f"(smallest possible p {min_p:.2g}); need >= {_min_n_unpaired(alpha)} per side"
            )
    return _Prepared(
        item=item,
        direction=direction,
        unit=unit,
        warnings=tuple(warnings),
        sum_a=sum_a,
        sum_b=sum_b,
        paired=paired,
        sizes=sizes,
        breakpoints=breakpoints,
        estimate=sh.sorted_median(breakpoints),
        p_value=p_value,
        min_p=min_p,
        test=test,
        n=n,
        tost=tost,
        sd=sd,
        log_scale=log_scale,
        scale=scale,
        bounds=bounds,
    )


def _at_level(prep: _Prepared, alpha: float, margin_pct: float, level: float) -> MetricComparison:
    """The comparison with its interval at `level` (judged at alpha, p not yet adjusted)."""
    warnings = list(prep.warnings)
    if prep.paired:
        k = signed_rank_lower_count(prep.sizes[0], level)
    else:
        k = mwu_lower_count(prep.sizes[0], prep.sizes[1], level)
    low, high = sh.interval(prep.breakpoints, k, prep.estimate, prep.p_value <= level)
    if low is None and prep.paired:
        warnings.append(f"need >= {_min_n_ci_paired(level)} pairs to bound the change")
    elif low is None:
        warnings.append(f"need >= {_min_n_ci_unpaired(level)} samples per side to bound the change")

    def pct(v: float | None) -> float | None:
        if v is None:
            return None
        if prep.log_scale:
            return sh.to_pct(v)
        return None if prep.scale == 0 else 100.0 * v

    p_value = _nan_to_one(prep.p_value)
    tost_value = None if prep.tost is None else _nan_to_one(prep.tost)
    change, lo, hi = pct(prep.estimate), pct(low), pct(high)
    verdict = decide(
        direction=prep.direction,
        change_pct=change,
        ci_low_pct=lo,
        ci_high_pct=hi,
        p_value=p_value,
        tost_p_value=tost_value,
        alpha=alpha,
    )
    needed = None
    if verdict == "inconclusive" and prep.bounds is not None:
        needed = runs_needed(
            n_now=prep.n,
            log_sd=prep.sd,
            log_shift=prep.estimate,
            margin_log=prep.bounds[1],
            alpha=alpha,
            paired=prep.paired,
        )
    comparison = MetricComparison(
        name=prep.item.name,
        unit=prep.unit,
        direction=prep.direction,
        kpi=prep.item.kpi,
        a=prep.sum_a,
        b=prep.sum_b,
        paired=prep.paired,
        n_pairs=prep.sizes[0] if prep.paired else None,
        change_pct=change,
        ci_low_pct=lo,
        ci_high_pct=hi,
        p_value=p_value,
        p_adjusted=p_value,
        test=prep.test,
        verdict=verdict,
        margin_pct=margin_pct,
        tost_p_value=tost_value,
        min_p_value=prep.min_p,
        runs_needed=needed,
        warnings=tuple(warnings),
        ci_level=1.0 - level,
    )
    return _margin_note(comparison, alpha)


def compare_metric(
    item: MetricInput,
    *,
    alpha: float = DEFAULT_ALPHA,
    margin_pct: float = DEFAULT_MARGIN_PCT,
    interval_alpha: float | None = None,
) -> MetricComparison:
    """B against A for one metric (p_adjusted = p_value; `compare` adjusts for the table).

    `interval_alpha`: the level the interval is computed at (default alpha); `compare` passes
    the level this metric's test is judged at after the multiplicity correction."""
    prep = _prepare(item, alpha, margin_pct)
    return _at_level(prep, alpha, margin_pct, alpha if interval_alpha is None else interval_alpha)


def _margin_note(mc: MetricComparison, alpha: float) -> MetricComparison:
    """Name a real change hidden inside the margin, so "no change" is never misread."""
    if (
        mc.verdict == "no change"
        and mc.p_adjusted is not None
        and mc.p_adjusted <= alpha
        and mc.change_pct is not None
    ):
        note = (
            f"a change of {mc.change_pct:+.2f}% is statistically detectable but lies inside "
            f"the ±{mc.margin_pct:g}% margin"
        )
        if note not in mc.warnings:
            return replace(mc, warnings=(*mc.warnings, note))
    return mc


def with_adjusted_p(mc: MetricComparison, p_adjusted: float, alpha: float) -> MetricComparison:
    """The same comparison judged with a multiplicity-adjusted p-value."""
    verdict = decide(
        direction=mc.direction,
        change_pct=mc.change_pct,
        ci_low_pct=mc.ci_low_pct,
        ci_high_pct=mc.ci_high_pct,
        p_value=p_adjusted,
        tost_p_value=mc.tost_p_value,
        alpha=alpha,
    )
    runs = mc.runs_needed if verdict == "inconclusive" else None
    return _margin_note(
        replace(mc, p_adjusted=p_adjusted, verdict=verdict, runs_needed=runs), alpha
    )


def _level(alpha: float, p_raw: float, p_adjusted: float) -> float:
    """The level a raw p is compared with so that p_raw <= level exactly when
    p_adjusted <= alpha: the interval is computed at this level."""
    if p_adjusted <= 0 or p_adjusted <= p_raw:
        return alpha
    return alpha * p_raw / p_adjusted


def _judged(
    prep: _Prepared,
    mc: MetricComparison,
    p_adjusted: float,
    p_raw: float,
    p_family_adjusted: float,
    alpha: float,
    margin_pct: float,
) -> MetricComparison:
    """`mc` with its adjusted p, its verdict, and its interval at the adjusted level."""
    level = _level(alpha, p_raw, p_family_adjusted)
    if level != alpha:
        mc = _at_level(prep, alpha, margin_pct, level)
    return with_adjusted_p(mc, p_adjusted, alpha)


def _proportional_kpis(
    metrics: Sequence[MetricInput], results: Sequence[MetricComparison]
) -> list[list[int]]:
    """KPI indices grouped by proportionality: two KPIs whose per-sample ratio is the same
    constant on both sides (bw_bytes = block size x iops) are one group; others stand alone."""
    kpis = [i for i, r in enumerate(results) if r.kpi and r.p_value is not None]
    groups: list[list[int]] = []
    for i in kpis:
        for group in groups:
            if _proportional(metrics[group[0]], metrics[i]):
                group.append(i)
                break
        else:
            groups.append([i])
    return groups


_RATIO_TOLERANCE = 1e-3  # fio's text rounds iops to 3-4 figures


def _proportional(x: MetricInput, y: MetricInput) -> bool:
    if len(x.a) != len(y.a) or len(x.b) != len(y.b) or x.blocks_a != y.blocks_a:
        return False
    if x.blocks_b != y.blocks_b:
        return False
    num = np.asarray([*x.a, *x.b], dtype=float)
    den = np.asarray([*y.a, *y.b], dtype=float)
    if num.size == 0 or np.any(num <= 0) or np.any(den <= 0):
        return False
    ratio = num / den
    return bool(ratio.max() <= ratio.min() * (1.0 + _RATIO_TOLERANCE))


def _known(p_value: float | None) -> float:
    """A p-value the caller already checked is present."""
    assert p_value is not None
    return float(p_value)


def compare(
    metrics: Sequence[MetricInput],
    histograms: Sequence[HistogramInput] = (),
    *,
    alpha: float = DEFAULT_ALPHA,
    margin_pct: float = DEFAULT_MARGIN_PCT,
    correction: Correction = "holm",
    secondary_share: float = DEFAULT_SECONDARY_SHARE,
) -> Comparison:
    """A whole table.  Secondary metrics and histogram shifts form one family.

    "holm": a graphical Holm procedure over KPIs and secondary tests together; the chance of
    any false regression/improvement/changed in the whole table is at most alpha.  KPIs get
    (1 - secondary_share) of alpha, the secondary family the rest, and the secondary family
    inherits the KPIs' alpha once every KPI has a verdict (docs/statistics.md).
    "bh": KPIs each at alpha, secondary tests Benjamini–Hochberg at alpha (false discovery
    rate, no family-wise promise).
    """
    prepared = [_prepare(m, alpha, margin_pct) for m in metrics]
    results = [_at_level(p, alpha, margin_pct, alpha) for p in prepared]
    shifts = [histogram_shift(h, alpha=alpha) for h in histograms]
    # Proportional KPIs (iops and bw_bytes at a fixed block size) are one measurement: one
    # hypothesis, tested once, whose p is the larger of its members' (docs/statistics.md).
    groups = _proportional_kpis(metrics, results)
    secondary_idx = [i for i, r in enumerate(results) if not r.kpi and r.p_value is not None]
    hist_idx = [i for i, s in enumerate(shifts) if s.p_value is not None]
    group_p = [max(_known(results[i].p_value) for i in g) for g in groups]
    # (not `p or 1.0`: a p-value that underflowed to 0.0 is the strongest evidence, not none)
    family = [_known(results[i].p_value) for i in secondary_idx] + [
        _known(shifts[i].p_value) for i in hist_idx
    ]
    if correction == "holm":
        kpi_adj, adjusted = graphical_holm(group_p, family, secondary_share)
    else:
        kpi_adj, adjusted = list(group_p), adjust(family, correction)
    for g, p_group, p_adj in zip(groups, group_p, kpi_adj, strict=True):
        for i in g:
            # each member is judged at the group's level: p_i <= alpha * p_group / p_adj
            p_i = _known(results[i].p_value)
            member_adj = min(1.0, p_i * p_adj / p_group) if p_group > 0 else p_adj
            same = next((results[j].name for j in g if j != i), None)
            results[i] = _judged(
                prepared[i], results[i], member_adj, p_group, p_adj, alpha, margin_pct
            )
            if same is not None:
                results[i] = replace(results[i], same_as=same)
    for j, i in enumerate(secondary_idx):
        p_i = _known(results[i].p_value)
        results[i] = _judged(
            prepared[i], results[i], adjusted[j], p_i, adjusted[j], alpha, margin_pct
        )
    for j, i in enumerate(hist_idx):
        p_adj = adjusted[len(secondary_idx) + j]
        shifts[i] = replace(
            shifts[i], p_adjusted=p_adj, verdict="changed" if p_adj <= alpha else "inconclusive"
        )
    warnings: list[str] = []
    if not any(r.kpi for r in results) and results:
        warnings.append("no KPI among the compared metrics: every metric was treated as secondary")
    size = len(family)
    if size > 1:
        how = "graphical Holm (table-wide)" if correction == "holm" else "Benjamini–Hochberg"
        warnings.append(f"{size} secondary tests share one {how} correction at alpha {alpha:g}")
    return Comparison(
        metrics=tuple(results),
        histogram_shifts=tuple(shifts),
        alpha=alpha,
        margin_pct=margin_pct,
        correction=correction,
        warnings=tuple(warnings),
    )


__all__ = ["Direction", "compare", "compare_metric", "pair_by_block", "with_adjusted_p"]
