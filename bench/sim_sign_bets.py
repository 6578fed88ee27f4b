"""False alarms and decision times of the A/B's anytime-valid test, with and without the
bettors on signs that budgets of at most 30 blocks add (docs/statistics.md); with
`--one-sided`, a third row per cell: the sign bets in the one-sided test that a bisect's ends
and verification and `iolab ab --one-sided` use ("regression" is then the worse side's claim
alone, "improvement" the other side's).

Usage:  .venv/bin/python bench/sim_sign_bets.py [DATA.csv] [--blocks 5 10 20 30]
            [--reps 2000] [--shift 0.0 0.2 0.45] [--seed 1] [--one-sided]

Blocks are drawn as bench/sim_stats.py draws them: randomized complete blocks from a recorded
series (default: the quiet ext4 fsync series), A and B in random order, B scaled by
(1 - shift).  Each simulated A/B feeds its blocks one by one to `SequentialDecision` with a
budget of N blocks, as `iolab ab --max-blocks N` would, and stops at its first verdict.  With
shift 0 every "regression" or "improvement" is a false alarm: the test promises at most 5%
whenever it stops.  With a shift, the table gives how often and how soon the regression was
decided.  Both arms see the same blocks.
"""

from __future__ import annotations

import argparse
import math
import statistics
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from sim_stats import Blocks, load_series

from iolab.model.metrics import Direction
from iolab.stats.sequential import SequentialDecision

DEFAULT = Path(__file__).resolve().parent / "data" / "ext4-fsync-16k-lab-quiet.csv"


def one(
    a: np.ndarray, b: np.ndarray, budget: int, signs: bool, one_sided: bool = False
) -> tuple[str, int]:
    """The verdict of one simulated A/B and the block it came at (budget: not decided)."""
    seq = SequentialDecision(
        "write.iops",
        direction=Direction.HIGHER,
        max_blocks=budget,
        sign_bets=signs,
        one_sided=one_sided,
        track_interval=False,
    )
    for i, pair in enumerate(zip(a, b, strict=True), start=1):
        state = seq.update([(float(pair[0]), float(pair[1]))])
        if state.done:
            return state.verdict, i
    return "inconclusive", budget


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("data", nargs="?", default=str(DEFAULT))
    ap.add_argument("--blocks", type=int, nargs="+", default=[5, 10, 20, 30])
    ap.add_argument("--reps", type=int, default=2000)
    ap.add_argument("--shift", type=float, nargs="+", default=[0.0, 0.2, 0.45])
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--one-sided", action="store_true", help="also the one-sided test")
    args = ap.parse_args()
    series, _ = load_series(args.data)
    print(f"Data: `{Path(args.data).name}`; {args.reps} simulated A/Bs per row, seed {args.seed}.")
    print()
    print(
        "| shift | budget | sign bets | test | regression | improvement | no change "
        "| median block |"
    )
    print("|---:|---:|---|---|---:|---:|---:|---:|")
    arms = [(False, False), (True, False)] + ([(True, True)] if args.one_sided else [])
    for shift in args.shift:
        for n in args.blocks:
            blocks = Blocks(series, np.random.default_rng(args.seed))
            draws = [blocks.draw(n, shift) for _ in range(args.reps)]
            for signs, one_sided in arms:
                counts = {"regression": 0, "improvement": 0, "no change": 0}
                at: list[int] = []
                for a, b in draws:
                    verdict, i = one(a, b, n, signs, one_sided)
                    if verdict in counts:
                        counts[verdict] += 1
                        at.append(i)
                share = {k: 100 * v / args.reps for k, v in counts.items()}
                median = f"{statistics.median(at):g}" if at else "-"
                print(
                    f"| {shift:g} | {n} | {'yes' if signs else 'no'} "
                    f"| {'one-sided' if one_sided else 'two-sided'} "
                    f"| {share['regression']:.2f}% | {share['improvement']:.2f}% "
                    f"| {share['no change']:.2f}% | {median} |",
                    flush=True,
                )
    se = math.sqrt(0.05 * 0.95 / args.reps)
    print(f"\nStandard error of a 5% rate at {args.reps} repetitions: ±{100 * se:.2f}%.")


if __name__ == "__main__":
    main()
