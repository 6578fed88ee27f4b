"""The HTML report's figures: matplotlib (Agg) drawn to SVG text for inline use.

Output is reproducible: the SVG ids are salted per figure with a fixed salt (two figures
of one page never share an id), no date is written, and jitter comes from a seeded
generator.  Text stays text (`svg.fonttype: none`), which keeps figures small and lets the
browser escape nothing twice: matplotlib writes text through its XML escaper, and math
parsing is off, so a label holding `$`, `<script>` or quotes is drawn as written.

matplotlib is imported here only, when a figure is drawn, so the CLI starts fast.
"""

from __future__ import annotations

import io
import itertools
import re
from typing import Any

from iolab.model.history import Series
from iolab.report import fmt
from iolab.report.html_model import KpiSamples, SequentialTrace
from iolab.report.layout import display_buckets
from iolab.stats.types import HistogramShift

COLOR_A = "#6b7c93"  # slate: the baseline
COLOR_B = "#d9822b"  # orange: the change under test
BAND = "#e3e8ef"
INK = "#2b2f36"
GRID = "#e8e8e8"

_STYLE = {
    "svg.fonttype": "none",
    "font.family": "sans-serif",
    "font.sans-serif": ["DejaVu Sans", "Helvetica", "Arial"],
    "font.size": 8.5,
    "axes.edgecolor": "#9aa3ad",
    "axes.labelcolor": INK,
    "axes.titlesize": 9.5,
    "axes.titleweight": "bold",
    "axes.titlelocation": "left",
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.grid": True,
    "axes.grid.axis": "y",
    "grid.color": GRID,
    "grid.linewidth": 0.8,
    "xtick.color": "#5a6270",
    "ytick.color": "#5a6270",
    "legend.frameon": False,
    "legend.fontsize": 8,
    "text.parse_math": False,
    "text.usetex": False,
}


def _plt() -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def warm_up() -> None:
    """Import matplotlib (and draw nothing): worker processes forked afterwards share it."""
    _plt()


def _svg(fig: Any, salt: str) -> str:
    """The figure as an `<svg>` element (no XML prolog), closed afterwards."""
    plt = _plt()
    buf = io.StringIO()
    with plt.rc_context({"svg.hashsalt": salt}):
        fig.savefig(buf, format="svg", metadata={"Date": None})
    plt.close(fig)
    text = buf.getvalue()
    return _prefix_ids(text[text.index("<svg") :], salt)


_ID = re.compile(r'(\bid="|url\(#|href="#)([^")]+)')


def _prefix_ids(svg: str, prefix: str) -> str:
    """matplotlib names elements `figure_1`, `patch_1`… in every figure; inline in one page
    those ids would repeat, so each figure's ids (and the references to them) get a prefix."""
    return _ID.sub(lambda m: f"{m.group(1)}{prefix}-{m.group(2)}", svg)


def _value_axis(ax: Any, unit: str) -> None:
    from matplotlib.ticker import FuncFormatter, MaxNLocator

    ax.yaxis.set_major_locator(MaxNLocator(5))
    ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _pos: fmt.value(v, unit)))


def _jitter(n: int, seed: int) -> list[float]:
    import numpy as np

    return [float(x) for x in np.random.default_rng(seed).uniform(-0.12, 0.12, n)]


def samples_figure(ks: KpiSamples, a_name: str, b_name: str, salt: str) -> str:
    """Left: each side's value by block, the two samples of a block joined by a line (drift
    moves both; a consistent change tilts every line the same way).  Right: the two
    distributions as boxes with every sample on top."""
    plt = _plt()
    with plt.rc_context(_STYLE):
        fig, (ax, dist) = plt.subplots(
            1, 2, figsize=(7.4, 2.5), sharey=True, gridspec_kw={"width_ratios": [3.2, 1]}
        )
        paired = all(b is not None for b, _ in (*ks.a, *ks.b))
        xa = [float(b) if paired and b is not None else i + 1.0 for i, (b, _) in enumerate(ks.a)]
        xb = [float(b) if paired and b is not None else i + 1.0 for i, (b, _) in enumerate(ks.b)]
        ya = [v for _, v in ks.a]
        yb = [v for _, v in ks.b]
        if paired:
            b_by_block = dict(zip(xb, yb, strict=True))
            joined = [(x, y, b_by_block[x]) for x, y in zip(xa, ya, strict=True) if x in b_by_block]
            if joined:
                ax.vlines(
                    [x for x, _, _ in joined],
                    [y for _, y, _ in joined],
                    [v for _, _, v in joined],
                    color="#b9c0c9",
                    lw=1.0,
                    zorder=1,
                )
        ax.scatter(xa, ya, s=18, color=COLOR_A, label=a_name, zorder=2)
        ax.scatter(xb, yb, s=18, color=COLOR_B, label=b_name, zorder=3, marker="D")
        ax.set_xlabel("block" if paired else "sample (in stored order)")
        ax.set_title(f"{ks.metric} ({ks.unit})" if ks.unit else ks.metric)
        if len({*xa, *xb}) <= 12:
            ax.set_xticks(sorted({*xa, *xb}))
        ax.legend(loc="lower right", bbox_to_anchor=(1.0, 1.0), ncols=2, borderaxespad=0.2)
        _value_axis(ax, ks.unit)
        box = dist.boxplot(
            [ya, yb],
            positions=[0, 1],
            widths=0.5,
            showfliers=False,
            patch_artist=True,
            medianprops={"color": INK, "lw": 1.4},
        )
        for patch, color in zip(box["boxes"], (COLOR_A, COLOR_B), strict=True):
            patch.set(facecolor=color, alpha=0.25, edgecolor=color)
        for i, (ys, color) in enumerate(((ya, COLOR_A), (yb, COLOR_B))):
            xs = [i + j for j in _jitter(len(ys), 7 + i)]
            dist.scatter(xs, ys, s=10, color=color, zorder=3)
        dist.set_xticks([0, 1], ["A", "B"])
        dist.set_title("distribution", fontweight="normal")
        fig.subplots_adjust(left=0.085, right=0.99, bottom=0.17, top=0.89, wspace=0.06)
        return _svg(fig, salt)


def sequential_limits(
    lows: list[float], highs: list[float], estimates: list[float | None], margin: float
) -> tuple[float, float]:
    """The y range (percent) of the confidence-sequence plot: the last interval, the
    estimates of the later half of the blocks, zero and the whole ±margin band, padded —
    so a 2% effect decided after 14 blocks is read on a few-percent axis, not on the ±50% of
    the first blocks' intervals (those run off the axis, and the figure says so).  Within
    the searched range below and +100% above (then padded): a sequence that never narrowed
    is shown as far as that, and a 2-3x drop with its interval at the -75% edge in full."""
    from iolab.stats.sequential import edge_pct

    later = [e for e in estimates[len(estimates) // 2 :] if e is not None]
    values = [lows[-1], highs[-1], *later, -margin, margin, 0.0]
    floor, _ = edge_pct()
    low, high = max(min(values), floor), min(max(values), 100.0)
    pad = 0.12 * (high - low)
    return low - pad, high + pad


def sequential_figure(trace: SequentialTrace, salt: str) -> str:
    """The estimate and its anytime-valid interval after every block, against the no-change
    band ±margin: a verdict is reached when the interval leaves zero (a change) or fits
    inside the band (no change)."""
    plt = _plt()
    with plt.rc_context(_STYLE):
        fig, ax = plt.subplots(figsize=(7.4, 2.3))
        m = trace.margin_pct
        ax.axhspan(-m, m, color=BAND, zorder=0, label=f"no change (±{fmt.sig(m, 3)}%)")
        ax.axhline(0, color="#9aa3ad", lw=0.8, zorder=1)
        pts = [p for p in trace.points if p.ci_low_pct is not None and p.ci_high_pct is not None]
        est = [p for p in trace.points if p.estimate_pct is not None]
        if pts:
            lows = [p.ci_low_pct for p in pts if p.ci_low_pct is not None]
            highs = [p.ci_high_pct for p in pts if p.ci_high_pct is not None]
            ax.fill_between(
                [p.block for p in pts],
                lows,
                highs,
                color=COLOR_B,
                alpha=0.22,
                lw=0,
                step="mid",
                label="confidence sequence",
                zorder=2,
            )
            low, high = sequential_limits(lows, highs, [p.estimate_pct for p in est], m)
            ax.set_ylim(low, high)
            clipped = min(lows) < low or max(highs) > high
        if est:
            ax.plot(
                [p.block for p in est],
                [p.estimate_pct for p in est],
                color=COLOR_B,
                lw=1.6,
                marker="o" if len(est) <= 30 else None,
                ms=3,
                label="estimate",
                zorder=3,
            )
        if trace.stopped_at is not None:
            ax.axvline(trace.stopped_at, color=INK, lw=0.8, ls="--", zorder=1)
            ax.annotate(
                trace.verdict,
                (trace.stopped_at, 1.0),
                xycoords=("data", "axes fraction"),
                xytext=(-4, -4),
                textcoords="offset points",
                ha="right",
                va="top",
                color=INK,
            )
        from matplotlib.ticker import FuncFormatter, MaxNLocator

        ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _pos: f"{v:+.3g}%"))
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        ax.set_xlabel(
            "blocks (the first intervals run off the axis)" if pts and clipped else "blocks"
        )
        ax.set_title(f"{trace.metric}: change of B vs A")
        ax.legend(loc="lower right", bbox_to_anchor=(1.0, 1.0), ncols=3, borderaxespad=0.2)
        fig.subplots_adjust(left=0.085, right=0.99, bottom=0.19, top=0.88)
        return _svg(fig, salt)


def histogram_figure(shift: HistogramShift, a_name: str, b_name: str, salt: str) -> str:
    """Each side's share of events per bucket, side by side (shares, not counts: the sides
    may have seen different numbers of events)."""
    plt = _plt()
    buckets = display_buckets(shift.buckets)
    with plt.rc_context(_STYLE):
        width = min(7.4, max(5.0, 0.42 * len(buckets) + 1.4))
        fig, ax = plt.subplots(figsize=(width, 2.3))
        xs = list(range(len(buckets)))
        ax.bar(
            [x - 0.2 for x in xs],
            [100 * b.share_a for b in buckets],
            0.4,
            color=COLOR_A,
            label=a_name,
        )
        ax.bar(
            [x + 0.2 for x in xs],
            [100 * b.share_b for b in buckets],
            0.4,
            color=COLOR_B,
            label=b_name,
        )
        labels = [b.bucket for b in buckets]
        rotate = len(buckets) > 8 or max((len(s) for s in labels), default=0) > 6
        ax.set_xticks(xs, labels, rotation=45 if rotate else 0, ha="right" if rotate else "center")
        ax.set_ylabel("% of events")
        ax.set_title(shift.name)
        ax.legend(loc="lower right", bbox_to_anchor=(1.0, 1.0), ncols=2, borderaxespad=0.2)
        fig.subplots_adjust(left=0.6 / width, right=0.99, bottom=0.27 if rotate else 0.17, top=0.88)
        return _svg(fig, salt)


def history_figure(series: Series, salt: str) -> str:
    """One KPI's history: a point per run (median, with its interval when the run had
    replicates) in the series' order, and each confirmed change point as a dashed line
    with the level before and after it."""
    plt = _plt()
    with plt.rc_context(_STYLE):
        fig, ax = plt.subplots(figsize=(7.4, 2.3))
        xs = list(range(1, len(series.points) + 1))
        ys = [p.value for p in series.points]
        lows = [p.value - p.ci_low if p.ci_low is not None else 0.0 for p in series.points]
        highs = [p.ci_high - p.value if p.ci_high is not None else 0.0 for p in series.points]
        ax.errorbar(
            xs,
            ys,
            yerr=[lows, highs],
            fmt="o",
            ms=3.5,
            color=COLOR_A,
            ecolor="#b9c0c9",
            elinewidth=1,
            zorder=2,
        )
        bounds = [0, *[cp.index for cp in series.change_points], len(ys)]
        for cp in series.change_points:
            color = {"regression": "#b42318", "improvement": "#1f7a3f"}.get(cp.kind, "#6b3fa0")
            ax.axvline(cp.index + 0.5, color=color, lw=1.2, ls="--", zorder=1)
        import numpy as np

        for start, stop in itertools.pairwise(bounds):
            if stop > start:
                level = float(np.median(ys[start:stop]))
                ax.hlines(level, start + 0.6, stop + 0.4, color=COLOR_B, lw=1.6, zorder=3)
        _value_axis(ax, series.unit)
        ax.set_xlabel("runs, in order")
        ax.set_title(f"{series.metric} ({series.unit})" if series.unit else series.metric)
        fig.subplots_adjust(left=0.085, right=0.99, bottom=0.19, top=0.88)
        return _svg(fig, salt)
