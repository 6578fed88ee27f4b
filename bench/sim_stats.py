"""Validate iolab's statistics against other tools' rules by resampling a recorded series.

Usage:  .venv/bin/python bench/sim_stats.py DATA.csv [--reps N] [--out FILE.md] [--seed S]

DATA: a CSV with a header row (lines starting with '#' are skipped); the last numeric column
is the recorded metric, in recording order (e.g. bench/data/<job>.csv from the lab, or the
synthetic stand-in bench/data/synthetic-standin.csv until the real one exists).

Design.  Blocks are drawn as consecutive pairs of runs from the series (circularly, in
segments of 16 blocks from random starting points), so the drift between runs of one block
is the recorded drift; the order of A and B inside each block is a coin flip, as in the lab.
B is A's run multiplied by (1 - shift) (a regression of a higher-is-better metric).
Every method sees the same draws.  Reported: the share of comparisons flagged as a
regression or improvement at shift 0 (false alarms) and as a regression at shift > 0 (power),
and the mean runs per side used.
"""

from __future__ import annotations

import argparse
import csv
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
from scipy import stats

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))

from baselines.benchstat import benchstat_compare
from baselines.fsperf import fsperf_compare
from baselines.lkp import lkp_compare
from baselines.mmtests import mmtests_compare
from baselines.pinpoint import pinpoint_sequential

from iolab.stats import MetricInput, SequentialDecision, compare, compare_metric

SHIFTS = (0.0, 0.01, 0.02, 0.03, 0.05, 0.10)
SEGMENT = 16


def load_series(path: str) -> tuple[np.ndarray, bool]:
    rows: list[list[str]] = []
    synthetic = False
    with open(path) as f:
        for line in f:
            if line.startswith("#"):
                synthetic = synthetic or "SYNTHETIC" in line
                continue
            if line.strip():
                rows.append(next(csv.reader([line])))
    body = rows[1:]
    for col in range(len(rows[0]) - 1, -1, -1):
        try:
            values = np.array([float(r[col]) for r in body])
        except ValueError:
            continue
        if np.all(values > 0):
            return values, synthetic
    raise SystemExit(f"{path}: no positive numeric column")


class Blocks:
    """Draws randomized complete blocks (a, b) from the series."""

    def __init__(self, series: np.ndarray, rng: np.random.Generator) -> None:
        self.x = series
        self.rng = rng

    def draw(self, n: int, shift: float) -> tuple[np.ndarray, np.ndarray]:
        first: list[float] = []
        second: list[float] = []
        size = self.x.size
        while len(first) < n:
            start = int(self.rng.integers(size))
            idx = (start + np.arange(2 * SEGMENT)) % size
            first.extend(self.x[idx[0::2]])
            second.extend(self.x[idx[1::2]])
        f, s = np.array(first[:n]), np.array(second[:n])
        coin = self.rng.random(n) < 0.5
        a = np.where(coin, f, s)
        b = np.where(coin, s, f) * (1.0 - shift)
        return a, b


def flagged(outcome: str, shift: float) -> bool:
    """A/A: any claimed difference is a false alarm; A/B: only the right direction counts."""
    if shift == 0:
        return outcome in ("regression", "improvement", "changed")
    return outcome == "regression"


def iolab_fixed(a: np.ndarray, b: np.ndarray, paired: bool) -> str:
    blocks = list(range(a.size)) if paired else None
    item = MetricInput("write.iops", list(a), list(b), kpi=True, blocks_a=blocks, blocks_b=blocks)
    return compare_metric(item).verdict


def size_u_test(blocks: Blocks, shift: float, reps: int, target: float = 0.8) -> tuple[int, float]:
    """Smallest n per side at which the unpaired U test (alpha 0.05) has `target` power."""
    for n in (*range(10, 100, 10), *range(100, 330, 10)):
        a = np.empty((reps, n))
        b = np.empty((reps, n))
        for r in range(reps):
            a[r], b[r] = blocks.draw(n, shift)
        p = stats.mannwhitneyu(a, b, axis=1, alternative="two-sided", method="asymptotic").pvalue
        power = float(np.mean((p <= 0.05) & (np.median(b, axis=1) < np.median(a, axis=1))))
        if power >= target:
            return n, power
    return 320, power


def run_ab(blocks: Blocks, shift: float, budget: int, margin: float) -> tuple[str, int]:
    a, b = blocks.draw(budget, shift)
    seq = SequentialDecision(
        "write.iops", margin_pct=margin, max_blocks=budget, track_interval=False
    )
    state = None
    for i in range(budget):
        state = seq.update([(float(a[i]), float(b[i]))])
        if state.done:
            break
    assert state is not None
    return state.verdict, state.n_blocks


def run_pinpoint(blocks: Blocks, shift: float, expected: float, cap: int) -> tuple[str, int]:
    a, b = blocks.draw(cap, shift)

    def draw(k: int) -> tuple[list[float], list[float]]:
        return list(a[:k]), list(b[:k])

    return pinpoint_sequential(draw, expected, max_per_side=cap)


def fwer_tables(
    series: np.ndarray, rng: np.random.Generator, reps: int, n: int, width: int, correlated: bool
) -> tuple[float, float]:
    """Share of A/A tables with any false discovery: (secondary family, whole table with KPI)."""
    blocks = Blocks(series, rng)
    any_secondary = any_table = 0
    for _ in range(reps):
        a0, b0 = blocks.draw(n, 0.0)
        items = [
            MetricInput(
                "write.iops",
                list(a0),
                list(b0),
                kpi=True,
                blocks_a=list(range(n)),
                blocks_b=list(range(n)),
            )
        ]
        for j in range(width - 1):
            if correlated:
                w = rng.uniform(0.0, 1.5)
                sd = rng.uniform(0.01, 0.10)
                a = a0**w * np.exp(rng.normal(0, sd, n))
                b = b0**w * np.exp(rng.normal(0, sd, n))
            else:
                a, b = blocks.draw(n, 0.0)
            items.append(
                MetricInput(
                    f"metric{j}.count",
                    list(a),
                    list(b),
                    kpi=False,
                    blocks_a=list(range(n)),
                    blocks_b=list(range(n)),
                )
            )
        table = compare(items)
        sec = any(m.verdict in ("regression", "improvement", "changed") for m in table.secondary)
        kpi = any(m.verdict in ("regression", "improvement", "changed") for m in table.kpis)
        any_secondary += sec
        any_table += sec or kpi
    return any_secondary / reps, any_table / reps


def pct(x: float) -> str:
    return f"{100 * x:.1f}%"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("data")
    ap.add_argument("--reps", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--margin", type=float, default=1.0)
    ap.add_argument("--out")
    args = ap.parse_args()
    series, synthetic = load_series(args.data)
    rng = np.random.default_rng(args.seed)
    blocks = Blocks(series, rng)
    t0 = time.time()
    lx = np.log(series) - np.log(series).mean()
    cv = series.std(ddof=1) / series.mean()
    r1 = np.dot(lx[1:], lx[:-1]) / np.dot(lx, lx)
    facts = (
        f"n={series.size}, median {np.median(series):.0f}, CV {cv:.1%}, "
        f"lag-1 autocorrelation {r1:.2f}"
    )
    n_u, power_u = size_u_test(blocks, 0.03, reps=max(400, args.reps))
    lines: list[str] = []
    out = lines.append
    out(
        f"Data: `{args.data}` ({'SYNTHETIC stand-in' if synthetic else 'recorded'}; {facts}); "
        f"{args.reps} simulated comparisons per cell, seed {args.seed}."
    )
    out("")
    out(
        f"Fixed-n unpaired U test sized for 80% power at a 3% shift: n = {n_u} runs per side "
        f"(power {pct(power_u)} in the sizing run)."
    )
    out("")

    fixed_methods: dict[str, Callable[[np.ndarray, np.ndarray], str]] = {
        "iolab compare (paired blocks)": lambda a, b: iolab_fixed(a, b, True),
        "iolab compare (unpaired)": lambda a, b: iolab_fixed(a, b, False),
        "benchstat U test, alpha 0.05": lambda a, b: benchstat_compare(list(a), list(b)),
        "0-day robot (LKP) rule": lambda a, b: lkp_compare(list(a), list(b), kpi=True),
        "mmtests band (mean ±1.96 sd)": lambda a, b: mmtests_compare(list(a), list(b)),
        "fsperf baseline band": lambda a, b: fsperf_compare(list(a), list(b)),
    }
    header = (
        "| method | runs/side | "
        + " | ".join("A/A false alarm" if s == 0 else f"power at {100 * s:g}%" for s in SHIFTS)
        + " |"
    )
    out(header)
    out("|" + "---|" * (len(SHIFTS) + 2))
    for n in (5, 10, 30, n_u):
        results: dict[str, list[float]] = {k: [] for k in fixed_methods}
        for shift in SHIFTS:
            hits = dict.fromkeys(fixed_methods, 0)
            for _ in range(args.reps):
                a, b = blocks.draw(n, shift)
                for name, fn in fixed_methods.items():
                    hits[name] += flagged(fn(a, b), shift)
            for name in fixed_methods:
                results[name].append(hits[name] / args.reps)
        for name, rates in results.items():
            out(f"| {name} | {n} | " + " | ".join(pct(v) for v in rates) + " |")
    # sequential methods
    # ab at budgets of 1, 1.5 and 2 times the U test's n: the budget is a cap the user sets
    # (and it sizes the stake grid), so the table shows what each cap buys
    ab_budgets = (n_u, (3 * n_u) // 2, 2 * n_u)

    def ab_runner(budget: int) -> Callable[[float], tuple[str, int]]:
        return lambda shift: run_ab(blocks, shift, budget, args.margin)

    ab_rows = [(f"iolab ab (budget {b} blocks)", ab_runner(b)) for b in ab_budgets]

    def pinpoint(shift: float) -> tuple[str, int]:
        return run_pinpoint(blocks, shift, 0.03 * float(np.median(series)), 400)

    for label, runner in (*ab_rows, ("Pinpoint (10 + 10 per look, expects 3%)", pinpoint)):
        vals: list[float] = []
        runs: list[float] = []
        extra: list[str] = []
        reps = args.reps if "Pinpoint" not in label else max(100, args.reps // 4)
        for shift in SHIFTS:
            alarms = used = nochange = 0
            for _ in range(reps):
                verdict, n_used = runner(shift)
                alarms += flagged(verdict, shift)
                nochange += verdict == "no change"
                used += n_used
            vals.append(alarms / reps)
            runs.append(used / reps)
            extra.append(
                f"{100 * shift:g}%: {used / reps:.0f} runs, 'no change' {pct(nochange / reps)}"
            )
        out(f"| {label} | mean {runs[3]:.0f} at 3% | " + " | ".join(pct(v) for v in vals) + " |")
        lines.append("")
        lines.append(f"  - {label}: mean runs per side by shift — " + "; ".join(extra))
        lines.append("")
    out("")
    out(
        "Family-wise false alarms, A/A, 1 KPI + 49 secondary metrics, 20 paired blocks, "
        "graphical Holm (default):"
    )
    out("")
    out(
        "| columns | tables with a false secondary discovery "
        "| tables with any false discovery (KPI included) |"
    )
    out("|---|---|---|")
    fw_reps = max(100, args.reps // 2)
    for correlated in (True, False):
        sec, whole = fwer_tables(series, rng, fw_reps, 20, 50, correlated)
        kind = "correlated with the KPI" if correlated else "independent draws"
        out(f"| {kind} | {pct(sec)} | {pct(whole)} |")
    out("")
    out(f"({fw_reps} tables per row; run time {time.time() - t0:.0f} s)")
    text = "\n".join(lines) + "\n"
    if args.out:
        Path(args.out).write_text(text)
    sys.stdout.write(text)


if __name__ == "__main__":
    main()
