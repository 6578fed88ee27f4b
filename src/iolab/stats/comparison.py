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
from iolab.stats.maxt import JointResult, joint_maxt
from iolab.stats.multiple import adjust, graphical, graphical_holm
from iolab.stats.summary import sample_sd, summarize
from iolab.stats.types import Comparison, Correction, MetricComparison, MetricInput, Summary
from iolab.stats.verdict import decide, min_reachable_n, runs_needed

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
    pa, pb, _, warnings = _paired(a, b, blocks_a, blocks_b)
    return pa, pb, warnings


def _paired(
    a: Sequence[float],
    b: Sequence[float],
    blocks_a: Sequence[str | int],
    blocks_b: Sequence[str | int],
) -> tuple[NDArray[np.float64], NDArray[np.float64], list[str | int], list[str]]:
    """`pair_by_block`, with the block id of each pair (the joint correction lines the
    metrics of one block up by it)."""
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
    return pa, pb, common, warnings


def _min_n_unpaired(alpha: float) -> int:
    n = 1
    while min_p_unpaired(n, n) > alpha:
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


@dataclass(frozen=True, eq=False, repr=False)  # internal: never compared or printed
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
    # the values the test compared (pairs in block order, or each side's samples) and the
    # block id (paired) or sample id (unpaired) of each: the joint correction's rows
    values_a: NDArray[np.float64]
    values_b: NDArray[np.float64]
    rows_a: tuple[str | int, ...]
    rows_b: tuple[str | int, ...]


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
        va, vb, keys, pw = _paired(item.a, item.b, item.blocks_a, item.blocks_b)
        rows_a = rows_b = tuple(keys)
        warnings += pw
        if va.size == 0:
            warnings.append("no block holds both sides: compared unpaired")
            paired = False
    if not paired:
        va = np.asarray(item.a, dtype=float)
        vb = np.asarray(item.b, dtype=float)
        rows_a = tuple(item.ids_a) if item.ids_a is not None else tuple(range(va.size))
        rows_b = tuple(item.ids_b) if item.ids_b is not None else tuple(range(vb.size))

    log_scale = bool((va > 0).all() and (vb > 0).all())
    # np.median of A's values, without loading numpy.ma: unpaired, those are the values the
    # summary sorted (same arithmetic); paired, the blocks' means
    scale = abs(sum_a.median if not paired else sh.sorted_median(np.sort(va)))
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
        sd = sample_sd(d) if d.size >= 2 else None
        min_p = min_p_paired(int(np.count_nonzero(d)))
        sizes, n, test = (int(d.size), 0), int(d.size), "wilcoxon signed-rank (paired, log ratios)"
        if min_p > alpha:
            warnings.append(
                f"{d.size} pairs can never reach p <= {alpha:g} "
                f"(smallest possible p {min_p:.2g}); "
                f"need >= {min_reachable_n(alpha, paired=True)} pairs"
            )
    else:
        breakpoints = sh.unpaired_breakpoints(xa, xb)
        p_value = sh.mwu_p(xa, xb)
        tost = None if bounds is None else sh.tost_p(xa, xb, None, bounds)
        sds = [sample_sd(x) for x in (xa, xb) if x.size >= 2]
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
        values_a=va,
        values_b=vb,
        rows_a=rows_a,
        rows_b=rows_b,
    )


def _at_level(prep: _Prepared, alpha: float, margin_pct: float, level: float) -> MetricComparison:
    """The comparison with its interval at `level` (judged at alpha, p not yet adjusted)."""
    warnings = list(prep.warnings)
    if prep.paired:
        k = signed_rank_lower_count(prep.sizes[0], level)
    else:
        k = mwu_lower_count(prep.sizes[0], prep.sizes[1], level)
    low, high = sh.interval(prep.breakpoints, k, prep.estimate, prep.p_value <= level)
    estimate = sh.inside(prep.estimate, low, high)
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
    change, lo, hi = pct(estimate), pct(low), pct(high)
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
            log_shift=estimate,
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


_ALIAS_TOLERANCE = 1e-9  # "exact" multiples: every ratio equal to this relative tolerance


def _aliases(prepared: Sequence[_Prepared], idx: Sequence[int]) -> dict[int, list[int]]:
    """Secondary metrics that are one measurement: equal, or exact multiples of each
    other, in every sample (jbd2.transactions and transactions_requested; io_bytes and
    total_ios at one block size).  Representative index → the others; the representative is
    the shortest name (then the first in order)."""
    # exact multiples (by a positive factor) order their samples alike: metrics are only
    # compared within a design and an order, then value by value
    buckets: dict[tuple[object, ...], list[tuple[int, NDArray[np.float64]]]] = {}
    for i in idx:
        prep = prepared[i]
        values = np.concatenate([prep.values_a, prep.values_b])
        nonzero = np.flatnonzero(values)
        if nonzero.size == 0 or not np.all(np.isfinite(values)):
            continue
        shape = values / values[nonzero[0]]
        order = np.argsort(shape, kind="stable").tobytes()
        buckets.setdefault((prep.paired, prep.rows_a, prep.rows_b, order), []).append((i, shape))
    out: dict[int, list[int]] = {}
    for members in buckets.values():
        left = list(members)
        while len(left) > 1:
            _, shape = left[0]
            tolerance = _ALIAS_TOLERANCE * np.maximum(np.abs(shape), 1.0)
            same = [(j, r) for j, r in left if np.all(np.abs(r - shape) <= tolerance)]
            left = [(j, r) for j, r in left if all(j != k for k, _ in same)]
            if len(same) > 1:
                group = [j for j, _ in same]
                rep = min(group, key=lambda i: (len(prepared[i].item.name), i))
                out[rep] = [i for i in group if i != rep]
    return out


def _joint(prepared: Sequence[_Prepared], idx: Sequence[int]) -> JointResult | None:
    """Step-down max-T of the metrics `idx`, jointly, over their design's relabellings;
    None when they do not share one design (some paired, some not)."""

    designs = {prepared[i].paired for i in idx}
    if len(designs) != 1:
        return None
    (paired,) = designs
    keys_a = list(dict.fromkeys(k for i in idx for k in prepared[i].rows_a))
    keys_b = keys_a if paired else list(dict.fromkeys(k for i in idx for k in prepared[i].rows_b))
    row_a = {k: r for r, k in enumerate(keys_a)}
    row_b = {k: r for r, k in enumerate(keys_b)}
    a = np.full((len(keys_a), len(idx)), np.nan)
    b = np.full((len(keys_b), len(idx)), np.nan)
    for col, i in enumerate(idx):
        prep = prepared[i]
        a[[row_a[k] for k in prep.rows_a], col] = prep.values_a
        b[[row_b[k] for k in prep.rows_b], col] = prep.values_b
    return joint_maxt(a, b, paired)


def compare(
    metrics: Sequence[MetricInput],
    histograms: Sequence[HistogramInput] = (),
    *,
    alpha: float = DEFAULT_ALPHA,
    margin_pct: float = DEFAULT_MARGIN_PCT,
    correction: Correction = "holm",
    secondary_share: float = DEFAULT_SECONDARY_SHARE,
    fold_equal: bool = True,
) -> Comparison:
    """A whole table.  Secondary metrics and histogram shifts form one family.

    "holm": a graphical Holm procedure over KPIs and secondary tests together; the chance of
    any false regression/improvement/changed in the whole table is at most alpha.  KPIs get
    (1 - secondary_share) of alpha, the secondary family the rest, and the secondary family
    inherits the KPIs' alpha once every KPI has a verdict (docs/statistics.md).  Inside the
    secondary family the metrics are corrected jointly, by step-down max-T over the
    design's relabellings (stats.maxt): correlated metrics cost (almost) nothing.
    "holm-marginal": the same with plain Holm for each secondary test.
    "bh": KPIs each at alpha, secondary tests Benjamini–Hochberg at alpha (false discovery
    rate, no family-wise promise).
    Secondary metrics that are equal or exact multiples in every sample are one test
    (`aliases`); their rows carry the representative's adjusted p.  `fold_equal=False`
    tests each on its own (as compare did before; the simulations' baseline).
    """
    prepared = [_prepare(m, alpha, margin_pct) for m in metrics]
    results = [_at_level(p, alpha, margin_pct, alpha) for p in prepared]
    shifts = [histogram_shift(h, alpha=alpha) for h in histograms]
    # Proportional KPIs (iops and bw_bytes at a fixed block size) are one measurement: one
    # hypothesis, tested once, whose p is the larger of its members' (docs/statistics.md).
    groups = _proportional_kpis(metrics, results)
    secondary_idx = [i for i, r in enumerate(results) if not r.kpi and r.p_value is not None]
    aliases = _aliases(prepared, secondary_idx) if fold_equal else {}
    folded = {j for others in aliases.values() for j in others}
    family_idx = [i for i in secondary_idx if i not in folded]
    hist_idx = [i for i, s in enumerate(shifts) if s.p_value is not None]
    group_p = [max(_known(results[i].p_value) for i in g) for g in groups]
    # (not `p or 1.0`: a p-value that underflowed to 0.0 is the strongest evidence, not none)
    metric_p = [_known(results[i].p_value) for i in family_idx]
    hist_p = [_known(shifts[i].p_value) for i in hist_idx]
    joint = _joint(prepared, family_idx) if correction == "holm" and family_idx else None
    warnings: list[str] = []
    if joint is not None:
        kpi_adj, hist_adj, in_order = graphical(
            group_p, hist_p, secondary_share, [joint.stepdown[k] for k in range(len(joint.order))]
        )
        metric_adj = [1.0] * len(family_idx)
        for k, col in enumerate(joint.order):
            # never more significant after the correction than alone: the row's test and
            # its interval (at the adjusted level) then agree, as for Holm
            metric_adj[col] = max(in_order[k], metric_p[col])
    elif correction in ("holm", "holm-marginal"):
        if correction == "holm" and family_idx:
            warnings.append(
                "secondary metrics mix paired and unpaired comparisons: Holm instead of the "
                "joint correction"
            )
        kpi_adj, adjusted = graphical_holm(group_p, metric_p + hist_p, secondary_share)
        metric_adj, hist_adj = adjusted[: len(metric_p)], adjusted[len(metric_p) :]
    else:
        kpi_adj, adjusted = list(group_p), adjust(metric_p + hist_p, correction)
        metric_adj, hist_adj = adjusted[: len(metric_p)], adjusted[len(metric_p) :]
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
    for j, i in enumerate(family_idx):
        for k in (i, *aliases.get(i, ())):
            p_k = _known(results[k].p_value)
            p_adj = max(metric_adj[j], p_k)
            results[k] = _judged(prepared[k], results[k], p_adj, p_k, p_adj, alpha, margin_pct)
        names = tuple(results[k].name for k in aliases.get(i, ()))
        if names:
            results[i] = replace(results[i], aliases=names)
            for k in aliases[i]:
                results[k] = replace(results[k], alias_of=results[i].name)
    for j, i in enumerate(hist_idx):
        p_adj = hist_adj[j]
        shifts[i] = replace(
            shifts[i], p_adjusted=p_adj, verdict="changed" if p_adj <= alpha else "inconclusive"
        )
    if not any(r.kpi for r in results) and results:
        warnings.append("no KPI among the compared metrics: every metric was treated as secondary")
    procedure = _procedure(correction, joint, alpha)
    size = len(family_idx) + len(hist_idx)
    if size > 1 and joint is None:
        how = "Benjamini–Hochberg" if correction == "bh" else "graphical Holm (table-wide)"
        warnings.append(f"{size} secondary tests share one {how} correction at alpha {alpha:g}")
    elif size > 1:
        what = f"{len(family_idx)} secondary metrics"
        if hist_idx:
            what += f" and {len(hist_idx)} histogram(s)"
        warnings.append(f"{what} share one correction at alpha {alpha:g}: {procedure}")
    if folded:
        warnings.append(
            f"{len(folded)} metric(s) equal to another in every sample (or an exact multiple) "
            "were tested once, with it"
        )
    return Comparison(
        metrics=tuple(results),
        histogram_shifts=tuple(shifts),
        alpha=alpha,
        margin_pct=margin_pct,
        correction=correction,
        warnings=tuple(warnings),
        procedure=procedure,
    )


def _procedure(correction: Correction, joint: JointResult | None, alpha: float) -> str:
    """The correction, named as a reader should see it."""
    if correction == "bh":
        return f"Benjamini–Hochberg, false discovery rate ≤ {alpha:g}; KPIs each at {alpha:g}"
    table = f"table-wide family-wise error ≤ {alpha:g} with the KPIs"
    if joint is None:
        return f"Holm, {table}"
    return f"{joint.procedure}, {table}"


__all__ = ["Direction", "compare", "compare_metric", "pair_by_block", "with_adjusted_p"]
