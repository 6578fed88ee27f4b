"""A/A false alarms of fixed-n `iolab compare` with many repetitions, for a tight estimate.

Usage:  .venv/bin/python bench/sim_aa.py DATA.csv [--blocks 10 30 220] [--reps 4000] [--seed 1]

bench/sim_stats.py runs every method at ~1,000 repetitions per cell, where the standard error
of a 5% rate is ±0.7%: a cell at 5.4% there cannot tell "at most 5%" from "a little over".
This script draws blocks the same way (sim_stats.Blocks) and reports, per number of blocks,
the share of A/A comparisons with a regression/improvement verdict, the share with p <= 0.05
alone, and the standard error.
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from sim_stats import Blocks, iolab_fixed, load_series

from iolab.stats.shift import signed_rank_p


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("data")
    ap.add_argument("--blocks", type=int, nargs="+", default=[10, 30, 220])
    ap.add_argument("--reps", type=int, default=4000)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    series, _ = load_series(args.data)
    print(f"Data: `{args.data}`; {args.reps} A/A comparisons per row, seed {args.seed}.\n")
    print("| paired blocks | verdict regression/improvement | p <= 0.05 alone | s.e. |")
    print("|---|---|---|---|")
    for n in args.blocks:
        blocks = Blocks(series, np.random.default_rng(args.seed))
        alarms = p_only = 0
        for _ in range(args.reps):
            a, b = blocks.draw(n, 0.0)
            alarms += iolab_fixed(a, b, True) in ("regression", "improvement")
            p_only += signed_rank_p(np.log(b) - np.log(a)) <= 0.05
        se = math.sqrt(0.05 * 0.95 / args.reps)
        print(
            f"| {n} | {100 * alarms / args.reps:.2f}% | {100 * p_only / args.reps:.2f}% "
            f"| ±{100 * se:.2f}% |",
            flush=True,
        )


if __name__ == "__main__":
    main()
