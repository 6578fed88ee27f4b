"""The stake grid of `ab`'s betting test: the first session's ten fixed stakes against the
budget-aware grid (`iolab.stats.sequential.stake_grid`), on the same simulated blocks.

Usage:  .venv/bin/python bench/compare_stakes.py DATA.csv [--budget 300] [--shift 0.03]
                                                 [--reps 1000] [--seed 7]

Reported per grid: the share of comparisons that ended in the right verdict (regression at a
shift, any regression/improvement at shift 0 = false alarm) and the mean blocks used.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np
from numpy.typing import NDArray

sys.path.insert(0, str(Path(__file__).resolve().parent))

from sim_stats import Blocks, load_series, run_ab

import iolab.stats.sequential as sequential

FIXED_TEN = np.array([0.02, 0.05, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.65, 0.8])
StakeGrid = Callable[[int | None, float], NDArray[np.float64]]


def measure(
    series: np.ndarray, grid: StakeGrid, budget: int, shift: float, reps: int, seed: int
) -> tuple[float, float]:
    # SequentialDecision looks the function up when it is built
    vars(sequential)["stake_grid"] = grid
    blocks = Blocks(series, np.random.default_rng(seed))
    hits = used = 0
    for _ in range(reps):
        verdict, n = run_ab(blocks, shift, budget, 1.0)
        hits += verdict == "regression" if shift else verdict in ("regression", "improvement")
        used += n
    return hits / reps, used / reps


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("data")
    ap.add_argument("--budget", type=int, default=300)
    ap.add_argument("--shift", type=float, default=0.03)
    ap.add_argument("--reps", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=7)
    args = ap.parse_args()
    series, _ = load_series(args.data)
    budget_aware = sequential.stake_grid
    grids: dict[str, StakeGrid] = {
        "ten fixed stakes 0.02-0.8": lambda blocks, alpha: FIXED_TEN,
        "budget-aware (stake_grid)": budget_aware,
    }
    what = "power" if args.shift else "false alarms"
    print(f"{args.data}: shift {args.shift:g}, budget {args.budget}, {args.reps} reps\n")
    print(f"| stakes | {what} | mean blocks |")
    print("|---|---|---|")
    for name, grid in grids.items():
        rate, blocks = measure(series, grid, args.budget, args.shift, args.reps, args.seed)
        print(f"| {name} | {100 * rate:.1f}% | {blocks:.1f} |", flush=True)
    vars(sequential)["stake_grid"] = budget_aware


if __name__ == "__main__":
    main()
